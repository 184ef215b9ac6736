"""The edge: event store application, settings, auth, HTTP routes, composition root, CLI."""
