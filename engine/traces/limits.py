"""What a server reads of an uploaded trace: at most so many jobs per run, and so many lines per trace (counted
before parsing, on the decompressed text, which is itself bounded: a small gzip file cannot expand without
bound). The app (``app_pages/lib/uploads.py``) and the HTTP API (:mod:`engine.api`) refuse uploads with these
checks.

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
#: A gzip upload is read up to this many times its size (text traces compress 3-20 times; a bomb, 1,000)...
MAX_GZIP_RATIO = 100
#: ...or up to this many bytes when that is more (a small, very regular trace may compress 1,000 times)...
MIN_EXPANDED_BYTES = 64 * 2**20
#: ...and up to this many bytes per line a run may read (trace lines are tens to hundreds of bytes).
MAX_LINE_BYTES = 1024


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
    body ends the count where it breaks: the loader then names the problem. Un-gzipping stops with an
    :class:`UploadLimitError` ("expands to more than ...") past :func:`max_expanded_bytes`, so a gzip bomb
    costs the caller a fixed budget whatever its lines."""
    if data[:2] != b"\x1f\x8b":
        return data.count(b"\n")
    budget = max_expanded_bytes(len(data), limit)
    count = expanded = 0
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            while count <= limit and (block := f.read(block_bytes)):
                count += block.count(b"\n")
                expanded += len(block)
                if expanded > budget:
                    raise UploadLimitError(
                        f"expands to more than {budget / 2**20:,.0f} MiB when un-gzipped (at most "
                        f"{MAX_GZIP_RATIO} times its size and {MAX_LINE_BYTES:,} bytes a line are read): upload it "
                        "uncompressed, or use the command line (python -m engine)"
                    )
    except (OSError, EOFError, zlib.error):
        pass
    return count


def max_expanded_bytes(gzip_bytes: int, max_lines: int) -> int:
    """Bytes a gzip upload of ``gzip_bytes`` may expand to when at most ``max_lines`` lines are read:
    :data:`MAX_GZIP_RATIO` times its size (a small file, :data:`MIN_EXPANDED_BYTES`) and :data:`MAX_LINE_BYTES`
    a line, whichever is less."""
    return min(max(MAX_GZIP_RATIO * gzip_bytes, MIN_EXPANDED_BYTES), MAX_LINE_BYTES * max_lines)


def check_trace_size(data: bytes, name: str, max_jobs: int) -> None:
    """:class:`UploadLimitError` before parsing when the file has more lines than a server that simulates at
    most ``max_jobs`` jobs per run reads per trace, or is a gzip file that expands past
    :func:`max_expanded_bytes`."""
    limit = LINES_PER_JOB * max_jobs
    try:
        lines = count_lines(data, limit)
    except UploadLimitError as exc:
        raise UploadLimitError(f"{name} {exc}") from None
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
