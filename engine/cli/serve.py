"""The ``serve`` subcommand of ``python -m engine``: the HTTP API (:mod:`engine.api`) under uvicorn."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from engine.cli.common import int_in
from engine.errors import EngineError

#: Hosts that reach only this machine: binding to anything else needs ``PLAYGROUND_API_TOKEN``.
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from engine.runner.store import DEFAULT_STORE

    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; any other needs PLAYGROUND_API_TOKEN set)",
    )
    parser.add_argument("--port", type=int_in(1, 65535), default=8000, help="port (default 8000)")
    parser.add_argument(
        "--store",
        type=Path,
        default=Path(os.environ.get("PLAYGROUND_STORE") or DEFAULT_STORE),
        metavar="PATH",
        help=f"the run store's SQLite file, shared with the app (default: $PLAYGROUND_STORE, else {DEFAULT_STORE}; "
        "created with its folder)",
    )


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from engine.api.app import create_app
    from engine.api.runs import ApiSettings

    settings = ApiSettings.from_env(args.store)
    if args.host not in LOCAL_HOSTS and not settings.token:
        raise EngineError(
            f"--host {args.host} reaches beyond this machine: set PLAYGROUND_API_TOKEN to a secret "
            "that every request must carry (Authorization: Bearer TOKEN), or bind to 127.0.0.1"
        )
    if settings.token and len(settings.token) < 16:
        raise EngineError("PLAYGROUND_API_TOKEN must have at least 16 characters")
    print(
        f"serving the API on http://{args.host}:{args.port}/v1 (docs: /docs; store: {args.store}; "
        f"{settings.workers} runs at once; pid {os.getpid()})",
        flush=True,
    )
    # Open event streams would hold a graceful stop forever: they get a few seconds, then the runs in flight are
    # marked interrupted (restartable). The caps per client count by the connecting address: uvicorn's proxy
    # headers are off, or any local client could name itself anew in X-Forwarded-For and pass its cap.
    uvicorn.run(
        create_app(settings),
        host=args.host,
        port=args.port,
        log_level="warning",
        timeout_graceful_shutdown=5,
        proxy_headers=False,
    )
    return 0
