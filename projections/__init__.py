"""Read models of the event store: the bilan view, its projection and the pull runner."""
