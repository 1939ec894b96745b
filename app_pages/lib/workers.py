"""Heavy work outside the Streamlit script thread: one worker process per call, a bounded number at once.

Building a workload, loading a trace and every simulation of the app run through :func:`call`: the work runs
in a fresh process (forked from a forkserver that has the engine imported, so a start costs milliseconds),
with an address-space limit (``RLIMIT_AS``) and a wall-clock limit; the session's script thread only waits
for the answer, so other sessions go on, and a run that passes a bound is stopped (the process is killed)
and answered with a one-line :class:`RunLimitError` instead of taking the server down.

Whoever hosts the app sets the bounds by environment variable (or ``.streamlit/secrets.toml``, as in
:mod:`app_pages.lib.uploads`):

* ``PLAYGROUND_WORKERS`` (``workers``): processes at once for the whole server (default: CPU cores, at most 8);
  a call waits for a free one at most as long as its own time limit;
* ``PLAYGROUND_RUN_TIMEOUT_S`` (``run_timeout_s``): seconds one call, or one cell of a sweep or plan, may take
  (default 300);
* ``PLAYGROUND_RUN_MEMORY_MB`` (``run_memory_mb``): address space of one worker (one cell's too), MiB (default
  4,096);
* ``PLAYGROUND_SWEEP_CELLS`` (``sweep_cells``): cells one sweep of the Explore page may have (default 2,000);
* ``PLAYGROUND_SESSION_WORKERS`` (``session_workers``): pieces of work (calls, sweeps, plans) one browser session
  may have running or waiting at once (default 2): past it a new one is refused at once, so one session cannot
  hold every worker of the server (a run stopped in the browser goes on in its worker until it ends, and a
  session's fragments may run in parallel).

A call is also stopped (its process killed, :class:`~engine.errors.RunCancelled` raised) once the script
run that asked for it is told to stop: the session ended, its visitor pressed Stop, or a newer run of the page
replaced it (Streamlit's fast reruns), so no worker goes on for an answer nobody will read; the Explore page's
sweeps and plans are cancelled the same way (:func:`run_stopped`).

An :class:`~engine.errors.EngineError` raised in the worker (bad input) comes back as an ``EngineError``
with the same message. The process machinery is :mod:`engine.runner.workers` (the HTTP API uses it too).
"""

from __future__ import annotations

import functools
import os
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType

from app_pages.lib.uploads import host_setting
from engine import make_scheduler, simulate
from engine.runner import workers
from engine.runner.workers import RunLimitError, WorkerError

__all__ = [
    "RunLimitError",
    "WorkerError",
    "call",
    "cell_bounds",
    "max_per_session",
    "max_sweep_cells",
    "max_workers",
    "memory_mb",
    "session_slot",
    "simulate_named",
    "run_stopped",
    "timeout_s",
]
workers.add_preload("app_pages.lib.workers")
_slots_lock = threading.Lock()
_slots: threading.BoundedSemaphore | None = None
_session_lock = threading.Lock()
_session_work: dict[str, int] = {}  # session id -> its pieces of work running or waiting (none: no entry)


def max_workers() -> int:
    return host_setting("PLAYGROUND_WORKERS", "workers", min(8, os.cpu_count() or 1))


def timeout_s() -> int:
    return host_setting("PLAYGROUND_RUN_TIMEOUT_S", "run_timeout_s", 300)


def memory_mb() -> int:
    return host_setting("PLAYGROUND_RUN_MEMORY_MB", "run_memory_mb", 4096)


def max_sweep_cells() -> int:
    """Cells one sweep of the Explore page may have (``PLAYGROUND_SWEEP_CELLS``, default 2,000)."""
    return host_setting("PLAYGROUND_SWEEP_CELLS", "sweep_cells", 2_000)


def max_per_session() -> int:
    """Pieces of work one session may have running or waiting at once (``PLAYGROUND_SESSION_WORKERS``, default
    2)."""
    return host_setting("PLAYGROUND_SESSION_WORKERS", "session_workers", 2)


@contextmanager
def session_slot(what: str) -> Iterator[None]:
    """Count the work done inside against the calling browser session's :func:`max_per_session`: raises
    :class:`RunLimitError` at once when the session already has that many. Outside a session (no script run
    context, e.g. a plain thread) nothing is counted."""
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None:
        yield
        return
    session, cap = ctx.session_id, max_per_session()
    with _session_lock:
        held = _session_work.get(session, 0)
        if held >= cap:
            raise RunLimitError(
                f"{what}: this session already has {held} piece(s) of work running or waiting, this server's "
                "limit per session; wait for one to end (a run stopped in the browser ends within the time limit)"
            )
        _session_work[session] = held + 1
    try:
        yield
    finally:
        with _session_lock:
            _session_work[session] -= 1
            if not _session_work[session]:
                del _session_work[session]


class _RunStopped:
    """An event-like flag (``is_set``) that is set once the script run it was made in is told to stop."""

    def __init__(self, requests) -> None:
        self._requests = requests

    def is_set(self) -> bool:
        # Streamlit keeps the request in a private field; a STOP is final for that run.
        return getattr(self._requests, "_state", None) == ScriptRequestType.STOP


def run_stopped() -> Any:
    """The calling script run's :class:`_RunStopped`, or ``None`` outside a script run."""
    ctx = get_script_run_ctx(suppress_warning=True)
    requests = getattr(ctx, "script_requests", None)
    return None if requests is None else _RunStopped(requests)


def _semaphore() -> threading.BoundedSemaphore:
    global _slots
    with _slots_lock:
        if _slots is None:
            _slots = threading.BoundedSemaphore(max_workers())
        return _slots


def call(fn: Callable, *args: Any, what: str) -> Any:
    """``fn(*args)`` in a worker process within this server's bounds (:func:`engine.runner.workers.call`) and
    the calling session's (:func:`session_slot`), stopped when the script run that asked for it is (see the
    module); ``what`` names the work in messages."""
    with session_slot(what):
        return workers.call(
            fn,
            *args,
            what=what,
            limit_s=timeout_s(),
            memory_mb=memory_mb(),
            slots=_semaphore(),
            cancel=run_stopped(),
        )


def cell_bounds() -> dict[str, Any]:
    """The ``guard`` and ``cancel`` keywords of an Explore sweep or plan (``run_sweep``'s, ``plan``'s): each cell
    runs in a worker process of its Ray worker within this server's bounds per run (:func:`timeout_s`,
    :func:`memory_mb`), so a cell past them is a failed cell with one line saying which bound it passed; and all
    are cancelled when the calling script run is told to stop (:func:`run_stopped`)."""
    guard = functools.partial(workers.call, what="this cell", limit_s=timeout_s(), memory_mb=memory_mb())
    return {"guard": guard, "cancel": run_stopped()}


def simulate_named(cluster, jobs, scheduler: str, seed: int, user_models: str, options=None):
    """One run of the scheduler called ``scheduler`` with run ``options`` (made in the worker, trained agents included: those trained
    on the Train page are looked for in ``user_models``, the server's folder as the page sees it; the worker may
    have forked from a server started before it was set)."""
    from engine.rl.agent import USER_MODELS_ENV

    os.environ[USER_MODELS_ENV] = user_models  # this worker process's own environment
    return simulate(cluster, jobs, make_scheduler(scheduler), seed=seed, options=options)
