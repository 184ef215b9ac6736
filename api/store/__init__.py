"""The write model's storage: the ``eventsourcing`` application that appends received
events, the stored format (mapper and transcoder), the backends' recorders and URLs."""
