"""Runs outside the caller: the run store (:mod:`engine.runner.store`, SQLite) and bounded worker processes
(:mod:`engine.runner.workers`), shared by the HTTP API (:mod:`engine.api`) and the app."""
