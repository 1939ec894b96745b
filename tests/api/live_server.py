"""A live API server for the tests: ``python -m engine serve`` on a free local port in its own process group
(its worker processes too), stopped by signalling that group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """A running server: its base URL, its process (the leader of its own group) and its store."""

    url: str
    proc: subprocess.Popen
    store: Path

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(20)
        try:  # the group's other members (forkserver, workers) too
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def client_from(server: Server, address: str, timeout_s: float = 60) -> httpx.Client:
    """A client of ``server`` that connects from local ``address`` (any of 127.0.0.0/8): another client to the
    server's caps per client."""
    return httpx.Client(base_url=server.url, timeout=timeout_s, transport=httpx.HTTPTransport(local_address=address))


def start_server(store: Path, **env: str) -> Server:
    """Start a server on ``store`` (``env``: extra environment variables) and wait until it answers."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "serve", "--port", str(port), "--store", str(store)],
        cwd=REPO,
        env={**os.environ, "PLAYGROUND_WORKERS": "2", **env},
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    server = Server(f"http://127.0.0.1:{port}", proc, store)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited: {proc.stdout.read().decode()[-2000:]}")
        try:
            if httpx.get(f"{server.url}/v1/health", timeout=1).status_code == 200:
                return server
        except httpx.TransportError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError("the server did not answer within 60 s")
