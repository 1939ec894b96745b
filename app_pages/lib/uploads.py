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
the decompressed text, so a small gzip file cannot expand without bound).
"""

from __future__ import annotations

import gzip
import io
import os
import threading
import zlib
from collections import OrderedDict

import streamlit as st

from engine import EngineError
from engine.analysis.scenario import content_hash

DEFAULT_MAX_JOBS = 100_000
DEFAULT_STORE_MB = 128
#: A trace may have this many lines per job the run may hold (rows the loader drops need reading too).
LINES_PER_JOB = 5
_SESSION_KEY = "_upload_store"


class UploadLimitError(EngineError):
    """An upload is larger than this server's limits; the message states the limit and what to do."""


def host_setting(env: str, secret: str, default: int) -> int:
    """A positive integer limit from the environment, else from Streamlit's secrets, else ``default``."""
    raw = os.environ.get(env)
    if raw is None:
        try:
            raw = st.secrets.get(secret)
        except Exception:  # noqa: BLE001 -- no secrets file (the usual case) or an unreadable one: the default
            raw = None
    if raw is None:
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise UploadLimitError(f"the server setting {env} must be a positive integer, got {str(raw)[:40]!r}") from None
    if value < 1:
        raise UploadLimitError(f"the server setting {env} must be a positive integer, got {value}")
    return value


def max_jobs_per_run() -> int:
    """Jobs one run may simulate on this server (``PLAYGROUND_MAX_JOBS``, default 100,000)."""
    return host_setting("PLAYGROUND_MAX_JOBS", "max_jobs", DEFAULT_MAX_JOBS)


def store_limit_bytes() -> int:
    """Bytes of uploads one session keeps (``PLAYGROUND_UPLOAD_STORE_MB``, default 128 MiB)."""
    return host_setting("PLAYGROUND_UPLOAD_STORE_MB", "upload_store_mb", DEFAULT_STORE_MB) * 2**20


def max_trace_lines() -> int:
    return LINES_PER_JOB * max_jobs_per_run()


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
            raise UploadLimitError(f"the file is {len(data) / 2**20:.1f} MiB; this server keeps at most "
                                   f"{self.limit_bytes / 2**20:.0f} MiB of uploads per session")
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


def count_lines(data: bytes, limit: int, block_bytes: int = 1 << 20) -> int:
    """Newlines in ``data`` (un-gzipped when it is gzip), counting stops once past ``limit``. A corrupt gzip
    body ends the count where it breaks: the loader then names the problem."""
    if data[:2] != b"\x1f\x8b":
        return data.count(b"\n")
    count = 0
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            while count <= limit and (block := f.read(block_bytes)):
                count += block.count(b"\n")
    except (OSError, EOFError, zlib.error):
        pass
    return count


def check_trace_size(data: bytes, name: str) -> None:
    """``UploadLimitError`` before parsing when the file has more lines than this server reads per trace."""
    limit = max_trace_lines()
    lines = count_lines(data, limit)
    if lines > limit:
        raise UploadLimitError(
            f"{name} has more than {limit:,} lines; this server reads at most {limit:,} lines per trace "
            f"({max_jobs_per_run():,} jobs per run): cut the file to its first {limit:,} lines "
            f"(head -n {limit} FILE > smaller.csv), or use the command line (python -m engine) for the whole trace")


def check_job_limit(n_jobs: int, name: str) -> None:
    """``UploadLimitError`` when a trace gives more jobs than one run may simulate here."""
    limit = max_jobs_per_run()
    if n_jobs > limit:
        raise UploadLimitError(
            f"{name} gives {n_jobs:,} jobs; this server simulates at most {limit:,} per run: set "
            f"'Keep the first N jobs' to {limit:,} or less (or use the command line, python -m engine, with --window)")
