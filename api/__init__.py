"""The edges of the service and its use cases, in four layers, each importing only those
below it (ADR-0042; checked by import-linter):

* ``cli``: the ``miam-economies`` command and its processes (serve, project, workers);
* ``http``: the Starlette edge: routes, auth, body limits, error policy, OpenAPI, report,
  metrics and request log;
* ``service``: the composition root (``bootstrap``), the settings, and the use cases
  (reading the bilan, replay, compare, migrate, import and export);
* ``store``: the event store on ``eventsourcing``'s seams: the application, its mapper
  and transcoder, a recorder per backend, the database URLs.
"""
