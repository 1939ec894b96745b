"""Joining a Ray cluster that runs elsewhere (``--address``, ``RAY_ADDRESS``), with or without its token.

    from engine.analysis.ray_join import join_cluster
    join_cluster("10.0.0.5:6379")      # ray.init(address=...), or RayJoinError: one line, within seconds

**Token.** A cluster with token authentication on (``ray start --head`` turns it on when a token exists) takes
only drivers that send its token. Ray 2.60 reads the token from ``RAY_AUTH_TOKEN``, else the file named by
``RAY_AUTH_TOKEN_PATH``, else ``~/.ray/auth_token``, but sends it to an address given explicitly only when
``RAY_AUTH_MODE=token``. :func:`join_cluster` turns token mode on whenever a token is found and
``RAY_AUTH_MODE`` is unset, as Ray itself does for a local cluster it finds; a cluster with authentication off
ignores the token. ``RAY_AUTH_MODE=disabled`` sends none.

**Bounded.** Ray retries a refused token for about 20 s and waits far longer on an address where nothing
answers. Here the head's port is tried first (:data:`CONNECT_TIMEOUT_S`), then Ray gets as many one-second
attempts; what Ray's client logs on each failed attempt is held back and the failure is one
:class:`RayJoinError` naming the address and what to check.

ray is imported only inside the functions.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from engine.errors import EngineError

#: Seconds to wait for the head's port to answer, and Ray's connection attempts (about a second each).
CONNECT_TIMEOUT_S = 3
#: Where Ray looks for a token when neither variable names one.
DEFAULT_TOKEN_FILE = Path("~/.ray/auth_token")
TOKEN_HELP = (
    "the cluster's token (`ray get-auth-token` on the head) in RAY_AUTH_TOKEN, in a file named by "
    "RAY_AUTH_TOKEN_PATH, or in ~/.ray/auth_token"
)


class RayJoinError(EngineError, ConnectionError):
    """The Ray cluster at an address cannot be joined; the message names the address and what to check."""


def token_source() -> str | None:
    """Where Ray will read the cluster token from, in its order: ``RAY_AUTH_TOKEN`` (when set and not empty;
    blank, it is no token), the file named by ``RAY_AUTH_TOKEN_PATH`` (which must then hold one), or
    ``~/.ray/auth_token``; None when there is none."""
    value = os.environ.get("RAY_AUTH_TOKEN", "")
    if value:
        return "RAY_AUTH_TOKEN" if value.strip() else None
    named = os.environ.get("RAY_AUTH_TOKEN_PATH", "").strip()
    path = Path(named or DEFAULT_TOKEN_FILE).expanduser()
    try:
        found = path.is_file() and bool(path.read_text(errors="replace").strip())
    except OSError:
        found = False
    if named and not found:
        raise RayJoinError(f"RAY_AUTH_TOKEN_PATH names {path}, which is missing, unreadable or empty")
    return (f"RAY_AUTH_TOKEN_PATH ({path})" if named else str(path)) if found else None


def join_cluster(address: str, **options: Any) -> None:
    """``ray.init(address=address, **options)``, with the token when one is found; raises :class:`RayJoinError`
    (one line) within seconds when nothing answers there, the token is missing or refused, or Ray fails."""
    import ray
    from ray.exceptions import AuthenticationError

    source = token_source()
    _token_mode(source is not None)
    endpoint = _endpoint(address)
    if endpoint is not None:
        _probe(address, *endpoint)
    wait = {"RAY_gcs_server_port_wait_time_s": str(CONNECT_TIMEOUT_S)}  # Ray's attempts (an operator's value wins)
    try:
        with _environ(wait), _stderr_held():
            ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, AuthenticationError) as exc:
        raise RayJoinError(_why(address, exc, source)) from None


def _token_mode(has_token: bool) -> None:
    """Token mode for this process when a token is found and ``RAY_AUTH_MODE`` is unset (Ray's own rule for a
    local cluster it finds)."""
    if "RAY_AUTH_MODE" in os.environ or not has_token:
        return
    # Ray's own switch: sets RAY_AUTH_MODE=token and makes Ray read its settings again (it cached them at import).
    from ray._private.authentication.authentication_token_setup import _enable_token_auth

    _enable_token_auth()


def _endpoint(address: str) -> tuple[str, int] | None:
    """The host and port Ray will connect to for ``address`` (a local name becomes this node's address, as
    Ray resolves it), or None for ``auto``."""
    from ray._private.services import canonicalize_bootstrap_address

    if address == "auto":
        return None
    target = address.removeprefix("ray://") if address.startswith("ray://") else None
    try:
        target = target or canonicalize_bootstrap_address(address)
        host, _, port = str(target).rpartition(":")
        return host.strip("[]"), int(port)
    except (ValueError, TypeError):
        raise RayJoinError(
            f"Ray address {address!r}: expected HOST:PORT, the head's port "
            "(6379 unless `ray start --head --port` gave another)"
        ) from None


def head_answers(gcs_address: str) -> bool:
    """Whether something accepts connections at ``HOST:PORT`` (a Ray head's port) within :data:`CONNECT_TIMEOUT_S`."""
    host, _, port = gcs_address.rpartition(":")
    try:
        return _refusal(host.strip("[]"), int(port)) is None
    except ValueError:
        return False


def _refusal(host: str, port: int) -> OSError | None:
    """Why a connection to ``host:port`` fails within :data:`CONNECT_TIMEOUT_S`, or None when it succeeds."""
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            return None
    except OSError as exc:
        return exc


def _probe(address: str, host: str, port: int) -> None:
    exc = _refusal(host, port)
    if exc is not None:
        at = address if address.endswith(f"{host}:{port}") else f"{address} ({host}:{port})"
        raise RayJoinError(
            f"no Ray head answers at {at} ({exc.strerror or type(exc).__name__}): check the address "
            f"and that `ray start --head --port {port}` runs there and the port is open"
        )


def _why(address: str, exc: BaseException, source: str | None) -> str:
    """One line for a failed join: a token refused or missing, or what Ray said."""
    text = " ".join(f"{exc} {exc.__cause__ or ''}".split())
    if "InvalidAuthToken" in text or "Unauthenticated" in text or type(exc).__name__ == "AuthenticationError":
        mode = os.environ.get("RAY_AUTH_MODE", "")
        if mode.lower() not in ("", "token"):
            return (
                f"the Ray cluster at {address} requires an authentication token, and RAY_AUTH_MODE={mode} "
                f"here sends none: unset it and give {TOKEN_HELP}"
            )
        if source is None:
            return (
                f"the Ray cluster at {address} requires an authentication token and none was found: give {TOKEN_HELP}"
            )
        return f"the Ray cluster at {address} refused the authentication token from {source}: give {TOKEN_HELP}"
    import ray

    first = text.split(" Traceback ")[0][:300]
    return f"cannot join the Ray cluster at {address}: {first} (check that it runs Ray {ray.__version__}, as here)"


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """These environment variables for the block, where not already set."""
    added = {k: v for k, v in values.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


@contextmanager
def _stderr_held() -> Iterator[None]:
    """Hold what is written to file descriptor 2 in the block (Ray's C++ client logs each failed attempt there,
    below Python's ``sys.stderr``), and pass it on only if the block succeeds."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        succeeded = False
        try:
            yield
            succeeded = True
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if succeeded:
                held.seek(0)
                os.write(2, held.read())
