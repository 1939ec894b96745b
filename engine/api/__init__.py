"""The HTTP API (``python -m engine serve``): :mod:`engine.api.app` (the FastAPI routes) and :mod:`engine.api.runs`
(the server's settings and its runs off the request path, kept in the run store of :mod:`engine.runner.store`).

Imports FastAPI; nothing else in the engine imports this package but the ``serve`` command."""
