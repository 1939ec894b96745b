"""What a server reads of an uploaded trace: at most so many jobs per run, and so many lines per trace (counted
before parsing, on the decompressed text, so a small gzip file cannot expand without bound). The app
(``app_pages/lib/uploads.py``) and the HTTP API (:mod:`engine.api`) refuse uploads with these checks.

Whoever hosts a server sets the limits by environment variable (:func:`host_setting`), e.g.
``PLAYGROUND_MAX_JOBS`` (jobs one run may simulate, default :data:`DEFAULT_MAX_JOBS`).
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from typing import Any, Callable

from engine.errors import EngineError

DEFAULT_MAX_JOBS = 100_000
#: A trace may have this many lines per job the run may hold (rows the loader drops need reading too).
LINES_PER_JOB = 5


class UploadLimitError(EngineError):
    """An upload is larger than this server's limits; the message states the limit and what to do."""


def host_setting(env: str, default: int, fallback: Callable[[], Any] | None = None) -> int:
    """A positive integer limit from environment variable ``env``, else from ``fallback()`` (e.g. the app's
    secrets; ``None`` when it has none), else ``default``. A value that is not a positive integer is an
    :class:`UploadLimitError` naming ``env``."""
    raw = os.environ.get(env)
    if raw is None and fallback is not None:
        raw = fallback()
    if raw is None:
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise UploadLimitError(f"the server setting {env} must be a positive integer, got {str(raw)[:40]!r}") from None
    if value < 1:
        raise UploadLimitError(f"the server setting {env} must be a positive integer, got {value}")
    return value


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


def check_trace_size(data: bytes, name: str, max_jobs: int) -> None:
    """:class:`UploadLimitError` before parsing when the file has more lines than a server that simulates at
    most ``max_jobs`` jobs per run reads per trace."""
    limit = LINES_PER_JOB * max_jobs
    lines = count_lines(data, limit)
    if lines > limit:
        raise UploadLimitError(
            f"{name} has more than {limit:,} lines; this server reads at most {limit:,} lines per trace "
            f"({max_jobs:,} jobs per run): cut the file to its first {limit:,} lines "
            f"(head -n {limit} FILE > smaller.csv), or use the command line (python -m engine) for the whole trace"
        )


def check_job_limit(n_jobs: int, name: str, max_jobs: int, keep_first: str) -> None:
    """:class:`UploadLimitError` when a trace gives more jobs than one run may simulate (``max_jobs``);
    ``keep_first`` names the setting that keeps the first N jobs where the upload came from."""
    if n_jobs > max_jobs:
        raise UploadLimitError(
            f"{name} gives {n_jobs:,} jobs; this server simulates at most {max_jobs:,} per run: set "
            f"{keep_first} to {max_jobs:,} or less (or use the command line, python -m engine, with --window)"
        )
