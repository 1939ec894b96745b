"""Heavy work in a bounded worker process: one fresh process per call, stopped when it passes its bounds.

:func:`call` runs ``fn(*args)`` in a new process (forked from a forkserver that has the engine imported, so a
start costs milliseconds; and one process is kept started ahead, waiting for its work on a pipe, so a call
usually pays no start at all: each process still runs one call only) with an address-space limit (``RLIMIT_AS``)
and a wall-clock limit; the caller's
thread only waits for the answer, and a run that passes a bound is killed and answered with a one-line
:class:`RunLimitError` instead of taking the server down. A call may also report progress (the work gets an
``on_progress(done, total)`` callback whose calls cross back to the caller) and be cancelled (a
:class:`threading.Event`: the process is killed, :class:`RunCancelled` raised).

An :class:`~engine.errors.EngineError` raised in the worker (bad input) comes back as :class:`WorkerError` with the
same message. The app (``app_pages/lib/workers.py``) and the HTTP API (:mod:`engine.api`) both call through here,
each with its own bounds.
"""

from __future__ import annotations

import multiprocessing
import resource
import threading
import time
from multiprocessing import spawn
from typing import Any, Callable

from engine.errors import EngineError, RunCancelled, TraceError

_CONTEXT = multiprocessing.get_context("forkserver")
# Children fork from a server with these imported: a worker starts in milliseconds, not seconds.
_PRELOAD = [
    "engine",
    "engine.analysis.scenario",
    "engine.analysis.presets",
    "engine.analysis.results",
    "engine.traces",
    "engine.runner.workers",
]
_CONTEXT.set_forkserver_preload(_PRELOAD)
_PREPARATION = spawn.get_preparation_data
_start_lock = threading.Lock()
#: The worker started ahead for the next call (``(process, work sender, answer receiver)``), and whether one is
#: being started.
_spare: tuple[Any, Any, Any] | None = None
_refilling = False
_spare_lock = threading.Lock()
#: How often a waiting call looks at its cancel event, seconds.
_CANCEL_POLL_S = 0.05


class RunLimitError(EngineError):
    """A call passed its time or memory bound (or found no free worker in time) and was stopped."""


class WorkerError(EngineError):
    """Bad input found by the work in the worker process (the message is the engine's own)."""


def add_preload(*modules: str) -> None:
    """Have the forkserver import ``modules`` too (the modules that hold a caller's work functions), before its
    first worker starts."""
    _PRELOAD.extend(m for m in modules if m not in _PRELOAD)
    _CONTEXT.set_forkserver_preload(_PRELOAD)


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


def call(
    fn: Callable,
    *args: Any,
    what: str,
    limit_s: float,
    memory_mb: int,
    slots: threading.BoundedSemaphore | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
) -> Any:
    """``fn(*args)`` in a worker process of at most ``memory_mb`` MiB that may take ``limit_s`` seconds; ``what``
    names the work in messages. With ``slots``, the call first takes one (waiting at most ``limit_s``). With
    ``on_progress``, the work is called as ``fn(*args, on_progress=callback)`` and each ``callback(done, total)``
    in the worker calls ``on_progress(done, total)`` here. A set ``cancel`` event stops the work, or the wait for a
    slot.

    Raises :class:`RunLimitError` when the call passes a bound or waits too long for a slot,
    :class:`RunCancelled`, and the ``EngineError`` the work raised (as :class:`WorkerError`, same message)."""
    if slots is not None:
        _take_slot(slots, what, limit_s, cancel)
    try:
        kind, value = _run(fn, args, what, limit_s, memory_mb, on_progress, cancel)
    finally:
        if slots is not None:
            slots.release()
    if kind == "ok":
        return value
    if kind == "memory":
        raise RunLimitError(
            f"{what} stopped: it needed more than {memory_mb:,} MiB, this server's memory limit per "
            "run: make it smaller (fewer jobs, a smaller cluster)"
        )
    if kind == "engine":
        raise WorkerError(value)
    if kind == "trace":
        reason, path, line, column = value
        raise TraceError(reason, path=path, line=line, column=column)
    raise RuntimeError(f"{what} failed in its worker process: {value}")


def _take_slot(slots: threading.BoundedSemaphore, what: str, limit_s: float, cancel: Any) -> None:
    """Take one of ``slots``, waiting at most ``limit_s``; a set ``cancel`` ends the wait (a call stopped while it
    waits must not hold its caller's place: the session's next call would find it taken)."""
    deadline = time.monotonic() + limit_s
    while not slots.acquire(timeout=max(0.0, min(_CANCEL_POLL_S, deadline - time.monotonic()))):
        if cancel is not None and cancel.is_set():
            raise RunCancelled(f"{what} was cancelled")
        if time.monotonic() >= deadline:
            raise RunLimitError(f"{what}: every worker of this server stayed busy for {limit_s:g} s; try again later")


def _run(
    fn: Callable,
    args: tuple,
    what: str,
    limit_s: float,
    memory_mb: int,
    on_progress: Callable[[int, int], None] | None,
    cancel: threading.Event | None,
) -> tuple[str, Any]:
    """Start the worker and wait for its answer, passing progress on. A worker that answered is left to exit on
    its own (a thread reaps it: its exit takes milliseconds the caller need not wait); any other is killed."""
    proc, receive = _hand_over((memory_mb * 2**20, fn, args, on_progress is not None))
    deadline = time.monotonic() + limit_s
    answered = False
    try:
        while True:
            if cancel is not None and cancel.is_set():
                raise RunCancelled(f"{what} was cancelled")
            left_s = deadline - time.monotonic()
            if left_s <= 0:
                raise RunLimitError(
                    f"{what} stopped after {limit_s:g} s, this server's time limit per run: make it "
                    "smaller (fewer jobs, a smaller cluster, fewer schedulers at once)"
                )
            if not receive.poll(left_s if cancel is None else min(left_s, _CANCEL_POLL_S)):
                continue
            kind, value = receive.recv()
            if kind != "progress":
                answered = True
                return kind, value
            if on_progress is not None:
                on_progress(*value)
    except EOFError:  # the process died without answering: killed for memory, or crashed
        proc.join(5)
        raise RunLimitError(
            f"{what} stopped: its worker process ended (exit code {proc.exitcode}) before it "
            f"answered, most likely past this server's memory limit of {memory_mb:,} MiB per run"
        ) from None
    finally:
        receive.close()
        if answered:
            threading.Thread(target=_reap, args=(proc,), daemon=True).start()
        else:
            _reap(proc, wait_s=0)


def _new_worker() -> tuple[Any, Any, Any]:
    """A worker process started now that waits for its work on a pipe: ``(process, work sender, answer
    receiver)``."""
    work_receive, work_send = _CONTEXT.Pipe(duplex=False)
    receive, send = _CONTEXT.Pipe(duplex=False)
    proc = _CONTEXT.Process(target=_serve_one, args=(work_receive, send), daemon=True)
    _start(proc)
    work_receive.close()
    send.close()
    return proc, work_send, receive


def _take_worker() -> tuple[Any, Any, Any]:
    """The spare worker when there is a live one (a new one is started in the background for the next call),
    else a worker started now."""
    global _spare, _refilling
    with _spare_lock:
        spare, _spare = _spare, None
        refill = not _refilling
        _refilling = True
    if refill:
        threading.Thread(target=_refill, name="spare-worker", daemon=True).start()
    if spare is not None and spare[0].is_alive():
        return spare
    if spare is not None:
        _discard(spare)
    return _new_worker()


def _refill() -> None:
    """Start the next spare worker (a failed start leaves none: calls then start their own)."""
    global _spare, _refilling
    try:
        worker = _new_worker()
    except Exception:  # noqa: BLE001 -- no spare this time; the next call starts its own worker
        worker = None
    with _spare_lock:
        _refilling = False
        if _spare is None:
            _spare, worker = worker, None
    if worker is not None:
        _discard(worker)


def _discard(worker: tuple[Any, Any, Any]) -> None:
    proc, work_send, receive = worker
    work_send.close()
    receive.close()
    _reap(proc, wait_s=0)


def _hand_over(work: tuple) -> tuple[Any, Any]:
    """Send ``work`` (``memory_bytes, fn, args, progress``) to a worker: ``(its process, its answer receiver)``.
    A spare that died meanwhile is replaced by a worker started now."""
    for attempt in range(2):
        worker = _take_worker() if attempt == 0 else _new_worker()
        proc, work_send, receive = worker
        try:
            work_send.send(work)
        except (BrokenPipeError, ConnectionResetError):
            _discard(worker)
            continue
        except BaseException:  # the work does not pickle: the worker goes, the error stays the caller's
            _discard(worker)
            raise
        work_send.close()
        return proc, receive
    raise RuntimeError("no worker process could be started")


def _serve_one(work_receive, send) -> None:
    """A worker process: wait for one piece of work, then run it (:func:`_work`); a closed pipe ends it."""
    try:
        memory_bytes, fn, args, progress = work_receive.recv()
    except EOFError:
        return
    finally:
        work_receive.close()
    _work(send, memory_bytes, fn, args, progress)


def _reap(proc, wait_s: float = 5.0) -> None:
    """Wait ``wait_s`` for the worker to exit, then kill it."""
    proc.join(wait_s)
    if proc.is_alive():
        proc.kill()
    proc.join()


def _work(send, memory_bytes: int, fn: Callable, args: tuple, progress: bool) -> None:
    """The worker process: bound the address space, run, send ``(kind, value)`` back (progress as it goes)."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    try:
        if progress:
            answer: tuple[str, Any] = (
                "ok",
                fn(*args, on_progress=lambda done, total: send.send(("progress", (done, total)))),
            )
        else:
            answer = ("ok", fn(*args))
    except MemoryError:
        answer = ("memory", "")
    except TraceError as exc:  # its parts travel, so a page can word where in the file it went wrong
        answer = ("trace", (exc.reason, exc.path, exc.line, exc.column))
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
