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
* ``PLAYGROUND_RUN_TIMEOUT_S`` (``run_timeout_s``): seconds one call may take (default 300);
* ``PLAYGROUND_RUN_MEMORY_MB`` (``run_memory_mb``): address space of one worker, MiB (default 4,096).

An :class:`~engine.errors.EngineError` raised in the worker (bad input) comes back as an ``EngineError``
with the same message.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import threading
from multiprocessing import spawn
from typing import Any, Callable

from app_pages.lib.uploads import host_setting
from engine import EngineError, make_scheduler, simulate

_CONTEXT = multiprocessing.get_context("forkserver")
# Children fork from a server with these imported: a worker starts in milliseconds, not seconds.
_CONTEXT.set_forkserver_preload(["engine", "engine.analysis.scenario", "engine.analysis.presets",
                                 "engine.traces", "app_pages.lib.workers"])
_PREPARATION = spawn.get_preparation_data
_start_lock = threading.Lock()
_slots_lock = threading.Lock()
_slots: threading.BoundedSemaphore | None = None


class RunLimitError(EngineError):
    """A call passed this server's time or memory bound (or found no free worker in time) and was stopped."""


class WorkerError(EngineError):
    """Bad input found by the work in the worker process (the message is the engine's own)."""


def max_workers() -> int:
    return host_setting("PLAYGROUND_WORKERS", "workers", min(8, os.cpu_count() or 1))


def timeout_s() -> int:
    return host_setting("PLAYGROUND_RUN_TIMEOUT_S", "run_timeout_s", 300)


def memory_mb() -> int:
    return host_setting("PLAYGROUND_RUN_MEMORY_MB", "run_memory_mb", 4096)


def _semaphore() -> threading.BoundedSemaphore:
    global _slots
    with _slots_lock:
        if _slots is None:
            _slots = threading.BoundedSemaphore(max_workers())
        return _slots


def _preparation_without_main(name: str) -> dict:
    """What a new process is told to prepare, less the parent's ``__main__``: under ``streamlit run`` that is
    the page script, which every worker would otherwise import, and so run, bare, before its work."""
    data = _PREPARATION(name)
    data.pop("init_main_from_path", None)
    data.pop("init_main_from_name", None)
    return data


def _start(proc) -> None:
    # multiprocessing reads the preparation data while starting the process; nothing else here starts one.
    with _start_lock:
        spawn.get_preparation_data = _preparation_without_main
        try:
            proc.start()
        finally:
            spawn.get_preparation_data = _PREPARATION


def call(fn: Callable, *args: Any, what: str) -> Any:
    """``fn(*args)`` in a worker process within this server's bounds; ``what`` names the work in messages.

    Raises :class:`RunLimitError` when the call passes its time or memory bound or waits too long for a
    worker, and the ``EngineError`` the work raised (as :class:`WorkerError`, same message)."""
    limit_s, mem_mb = timeout_s(), memory_mb()
    slots = _semaphore()
    if not slots.acquire(timeout=limit_s):
        raise RunLimitError(f"{what}: every worker of this server stayed busy for {limit_s} s; try again later")
    try:
        receive, send = _CONTEXT.Pipe(duplex=False)
        proc = _CONTEXT.Process(target=_work, args=(send, mem_mb * 2**20, fn, args), daemon=True)
        _start(proc)
        send.close()
        try:
            if not receive.poll(limit_s):
                raise RunLimitError(f"{what} stopped after {limit_s} s, this server's time limit per run: make it "
                                    "smaller (fewer jobs, a smaller cluster, fewer schedulers at once)")
            kind, value = receive.recv()
        except EOFError:  # the process died without answering: killed for memory, or crashed
            proc.join(5)
            raise RunLimitError(f"{what} stopped: its worker process ended (exit code {proc.exitcode}) before it "
                                f"answered, most likely past this server's memory limit of {mem_mb:,} MiB per run"
                                ) from None
        finally:
            receive.close()
            if proc.is_alive():
                proc.kill()
            proc.join()
    finally:
        slots.release()
    if kind == "ok":
        return value
    if kind == "memory":
        raise RunLimitError(f"{what} stopped: it needed more than {mem_mb:,} MiB, this server's memory limit per "
                            "run: make it smaller (fewer jobs, a smaller cluster)")
    if kind == "engine":
        raise WorkerError(value)
    raise RuntimeError(f"{what} failed in its worker process: {value}")


def _work(send, memory_bytes: int, fn: Callable, args: tuple) -> None:
    """The worker process: bound the address space, run, send ``(kind, value)`` back."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    try:
        answer: tuple[str, Any] = ("ok", fn(*args))
    except MemoryError:
        answer = ("memory", "")
    except EngineError as exc:
        answer = ("engine", str(exc))
    except Exception as exc:  # noqa: BLE001 -- a bug: the parent raises it with this text
        answer = ("crash", f"{type(exc).__name__}: {exc}")
    try:
        send.send(answer)
    except MemoryError:  # the answer itself did not fit
        send.send(("memory", ""))
    finally:
        send.close()


def simulate_named(cluster, jobs, scheduler: str, seed: int, user_models: str):
    """One run of the scheduler called ``scheduler`` (made in the worker, trained agents included: those trained
    on the Train page are looked for in ``user_models``, the server's folder as the page sees it; the worker may
    have forked from a server started before it was set)."""
    from engine.rl.agent import USER_MODELS_ENV

    os.environ[USER_MODELS_ENV] = user_models  # this worker process's own environment
    return simulate(cluster, jobs, make_scheduler(scheduler), seed=seed)
