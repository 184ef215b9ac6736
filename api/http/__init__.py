"""The HTTP edge: the routes a host app mounts or the standalone app serves, their error
policy, auth, body limits, OpenAPI document, report page, metrics and request log."""
