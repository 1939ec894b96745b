"""Trainings started on the Train page, bounded like every other piece of work a visitor can start.

A training is a process of its own (:func:`engine.rl.launch.start`); :func:`start` counts it against a cap for
the whole server, limits its address space (``RLIMIT_AS``, set on the running process), asks it to stop (it
exports what it learned) when its wall time is up and kills its process group a grace period later, and kills it
when the session that started it ends. Whoever hosts the app sets the bounds by environment variable (or
``.streamlit/secrets.toml``, as in :mod:`app_pages.lib.uploads`):

* ``PLAYGROUND_TRAIN_MAX_STEPS`` (``train_max_steps``): environment steps one training may ask for (default 100,000);
* ``PLAYGROUND_TRAININGS`` (``trainings``): trainings at once on the whole server (default 2);
* ``PLAYGROUND_SESSION_TRAININGS`` (``session_trainings``): trainings at once of one browser session (default 1),
  so that one visitor cannot hold every training the server allows;
* ``PLAYGROUND_TRAIN_TIMEOUT_S`` (``train_timeout_s``): seconds one training may run (default 1,800);
* ``PLAYGROUND_TRAIN_MEMORY_MB`` (``train_memory_mb``): address space of one training, MiB (default 16,384).
"""

from __future__ import annotations

import os
import resource
import secrets
import signal
import subprocess
import threading
import weakref
from typing import Callable

import streamlit as st

from app_pages.lib.uploads import host_setting
from engine.runner.workers import RunLimitError

__all__ = [
    "GRACE_S",
    "default_name",
    "max_per_session",
    "max_running",
    "max_steps",
    "memory_mb",
    "start",
    "timeout_s",
]
#: Seconds between asking a training to stop (past its time) and killing it.
GRACE_S = 60
_SESSION_KEY = "_trainings"
_lock = threading.Lock()
_running: list[subprocess.Popen] = []  # the server's trainings (finished ones are pruned on each start)


def max_steps() -> int:
    return host_setting("PLAYGROUND_TRAIN_MAX_STEPS", "train_max_steps", 100_000)


def max_running() -> int:
    return host_setting("PLAYGROUND_TRAININGS", "trainings", 2)


def max_per_session() -> int:
    return host_setting("PLAYGROUND_SESSION_TRAININGS", "session_trainings", 1)


def timeout_s() -> int:
    return host_setting("PLAYGROUND_TRAIN_TIMEOUT_S", "train_timeout_s", 1_800)


def memory_mb() -> int:
    return host_setting("PLAYGROUND_TRAIN_MEMORY_MB", "train_memory_mb", 16_384)


def default_name(config: str) -> str:
    """``<config>-<6 hex digits>``, the digits drawn once per session: two sessions never share a default."""
    suffix = st.session_state.setdefault("_train_suffix", secrets.token_hex(3))
    return f"{config}-{suffix}"


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the training and any environments it forked
        except (ProcessLookupError, PermissionError):
            pass


class _SessionTrainings:
    """The trainings of one session; when the session's state is dropped (the session ended), they are killed."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []
        weakref.finalize(self, lambda procs=self.procs: [_kill(p) for p in procs])


def start(launch: Callable[[], subprocess.Popen], request_stop: Callable[[], None]) -> subprocess.Popen:
    """``launch()`` within this server's bounds (see the module); :class:`RunLimitError` when the server already
    runs :func:`max_running` trainings or this session :func:`max_per_session`. ``request_stop()`` asks the
    training to stop and export."""
    mine = st.session_state.setdefault(_SESSION_KEY, _SessionTrainings())
    with _lock:
        _running[:] = [p for p in _running if p.poll() is None]
        if len(_running) >= max_running():
            raise RunLimitError(
                f"this server runs at most {max_running()} trainings at once; start yours when one has ended"
            )
        if sum(p.poll() is None for p in mine.procs) >= max_per_session():
            raise RunLimitError(
                f"a session runs at most {max_per_session()} training(s) at once on this server; start another "
                "when yours has ended"
            )
        proc = launch()
        _running.append(proc)
        mine.procs.append(proc)
    limit = memory_mb() * 2**20
    try:
        resource.prlimit(proc.pid, resource.RLIMIT_AS, (limit, limit))
    except (ProcessLookupError, PermissionError):
        pass  # it has already ended
    for delay_s, action in ((timeout_s(), request_stop), (timeout_s() + GRACE_S, lambda: _kill(proc))):
        timer = threading.Timer(delay_s, lambda act=action: proc.poll() is None and act())
        timer.daemon = True
        timer.start()
    return proc
