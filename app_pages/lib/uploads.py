"""Uploaded traces: a bounded store per session, and the host's limits on what one run may hold.

An upload's bytes live in the session that uploaded them, in an :class:`UploadStore`: bytes are counted, the
least recently used upload is evicted when a new one would pass :func:`store_limit_bytes`, and an upload
that does not load is dropped at once (whatever the failure). A link naming a trace by its SHA-256 works in
the session that holds the bytes; elsewhere the page asks for the upload.

Whoever hosts the app sets the limits, by environment variable or in ``.streamlit/secrets.toml`` (the
environment wins):

* ``PLAYGROUND_MAX_JOBS`` (``max_jobs``): jobs one run may simulate (default 100,000). A larger trace is
  refused with a message saying how to window it (keep the first N jobs);
* ``PLAYGROUND_UPLOAD_STORE_MB`` (``upload_store_mb``): bytes of uploads one session keeps (default 128 MiB).

A trace is also refused before it is parsed when it has more than :func:`max_trace_lines` lines (counted on
the decompressed text, so a small gzip file cannot expand without bound). The checks themselves are
:mod:`engine.traces.limits` (the HTTP API uses them too).

An upload that loaded is also kept in the run store the app shares with the HTTP API (:func:`keep_shared`), so
a link to a scenario on it opens in another session, after a restart, and through the API.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections import OrderedDict

import streamlit as st

from engine.analysis.scenario import content_hash
from engine.runner.store import DEFAULT_STORE, DEFAULT_TRACE_LIMIT_BYTES, RunStore, StoreError
from engine.traces import limits
from engine.traces.limits import DEFAULT_MAX_JOBS, UploadLimitError

__all__ = [
    "DEFAULT_MAX_JOBS",
    "UploadLimitError",
    "UploadStore",
    "check_job_limit",
    "check_trace_size",
    "host_setting",
    "keep_shared",
    "max_jobs_per_run",
    "max_trace_lines",
    "session_store",
    "shared_trace",
    "store_limit_bytes",
]
DEFAULT_STORE_MB = 128
_SESSION_KEY = "_upload_store"


def _secret(name: str):
    try:
        return st.secrets.get(name)
    except Exception:  # noqa: BLE001 -- no secrets file (the usual case) or an unreadable one: the default
        return None


def host_setting(env: str, secret: str, default: int) -> int:
    """A positive integer limit from the environment, else from Streamlit's secrets, else ``default``."""
    return limits.host_setting(env, default, lambda: _secret(secret))


def max_jobs_per_run() -> int:
    """Jobs one run may simulate on this server (``PLAYGROUND_MAX_JOBS``, default 100,000)."""
    return host_setting("PLAYGROUND_MAX_JOBS", "max_jobs", DEFAULT_MAX_JOBS)


def store_limit_bytes() -> int:
    """Bytes of uploads one session keeps (``PLAYGROUND_UPLOAD_STORE_MB``, default 128 MiB)."""
    return host_setting("PLAYGROUND_UPLOAD_STORE_MB", "upload_store_mb", DEFAULT_STORE_MB) * 2**20


def max_trace_lines() -> int:
    return limits.LINES_PER_JOB * max_jobs_per_run()


class UploadStore:
    """Upload bytes by SHA-256, at most ``limit_bytes`` in all; the least recently used go first."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()  # a session's reruns may overlap
        self.total_bytes = 0

    def put(self, data: bytes) -> str:
        """Keep ``data`` (evicting the least recently used uploads to make room); returns its SHA-256.
        ``UploadLimitError`` when ``data`` alone is larger than the store."""
        if len(data) > self.limit_bytes:
            raise UploadLimitError(
                f"the file is {len(data) / 2**20:.1f} MiB; this server keeps at most "
                f"{self.limit_bytes / 2**20:.0f} MiB of uploads per session"
            )
        digest = content_hash(data)
        with self._lock:
            self._pop(digest)
            while self._items and self.total_bytes + len(data) > self.limit_bytes:
                self._pop(next(iter(self._items)))
            self._items[digest] = data
            self.total_bytes += len(data)
        return digest

    def get(self, digest: str) -> bytes | None:
        with self._lock:
            data = self._items.get(digest)
            if data is not None:
                self._items.move_to_end(digest)
            return data

    def drop(self, digest: str) -> None:
        with self._lock:
            self._pop(digest)

    def __len__(self) -> int:
        return len(self._items)

    def _pop(self, digest: str) -> None:
        data = self._items.pop(digest, None)
        if data is not None:
            self.total_bytes -= len(data)


def session_store() -> UploadStore:
    """This session's store (made on first use with the host's limit)."""
    store = st.session_state.get(_SESSION_KEY)
    if store is None:
        store = st.session_state[_SESSION_KEY] = UploadStore(store_limit_bytes())
    return store


def check_trace_size(data: bytes, name: str) -> None:
    """``UploadLimitError`` before parsing when the file has more lines than this server reads per trace."""
    limits.check_trace_size(data, name, max_jobs_per_run())


def check_job_limit(n_jobs: int, name: str) -> None:
    """``UploadLimitError`` when a trace gives more jobs than one run may simulate here."""
    limits.check_job_limit(n_jobs, name, max_jobs_per_run(), "'Keep the first N jobs'")


# ----------------------------------------------------------------------------- the store shared with the API
@st.cache_resource(show_spinner=False)
def _shared_store() -> RunStore | None:
    """The run store this server shares with the HTTP API (``PLAYGROUND_STORE``, default ``runs/playground.sqlite``;
    ``PLAYGROUND_API_TRACE_STORE_MB`` bounds its traces), opened for its traces only; ``None`` when it cannot be
    opened (the app then keeps uploads in the session alone)."""
    limit = host_setting("PLAYGROUND_API_TRACE_STORE_MB", "trace_store_mb", DEFAULT_TRACE_LIMIT_BYTES // 2**20)
    try:
        return RunStore(
            os.environ.get("PLAYGROUND_STORE") or DEFAULT_STORE, trace_limit_bytes=limit * 2**20, runs=False
        )
    except (OSError, sqlite3.Error) as exc:
        logging.getLogger(__name__).warning("the shared run store cannot be opened: %s", exc)
        return None


def keep_shared(data: bytes, name: str, report: dict) -> None:
    """Keep an upload that loaded in the shared store too, so that a link naming it by its SHA-256 opens in any
    session of this server and after a restart (and the API can run it); a full or broken store is skipped."""
    store = _shared_store()
    if store is not None:
        try:
            store.put_trace(data, name, report)
        except (StoreError, OSError, sqlite3.Error) as exc:
            logging.getLogger(__name__).warning("upload %s not kept in the shared store: %s", name, exc)


def shared_trace(digest: str) -> bytes | None:
    """The bytes of an upload another session (or the API) kept in the shared store, else ``None``."""
    store = _shared_store()
    try:
        return None if store is None else store.get_trace(digest)
    except sqlite3.Error:
        return None
