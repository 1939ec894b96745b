"""Standard Workload Format (Parallel Workloads Archive), plain or gzipped (``.swf.gz``).

One job a line, 18 whitespace-separated numbers, ``-1`` meaning unknown; lines starting with ``;`` are
header comments. Fields used (1-based): 1 job id, 2 submit time (s), 4 run time (s), 5 allocated
processors, 8 requested processors, 9 requested time (s), 11 status, 12 user id.

Mapping to jobs (one processor = one GPU; a reference-speed GPU, so run times are kept as they are):

* GPUs = requested processors (field 8) when > 0, else allocated processors (field 5); when neither is
  > 0 the row is dropped as ``no_gpu``.
* duration = run time (field 4); a run time <= 0 (including -1, unknown) drops the row as
  ``non_positive_duration``. A submit time of -1 drops it as ``missing_time``.
* estimate = requested time (field 9) when > 0, else the run time. Users' estimates can be shorter than the
  run time (KTH: 475 jobs ran longer than requested); they are kept as given.
* user = ``u<field 12>`` (``unknown`` for -1); job type ``batch``; name = the job id (field 1).
* failed = status (field 11) is 0, "failed" in the SWF definition: the job runs its recorded time and ends
  failed (:attr:`~engine.sim.job.Job.failed`). Other statuses (1 completed, 5 cancelled, -1 unknown, ...) run
  as completed jobs.

Cite the archive and the site named in the file's ``; Acknowledge:`` line (see ``sample_traces/README.md``).
"""

from __future__ import annotations

import math

import numpy as np

from engine.traces.base import (
    MAX_INT,
    MAX_TIME_S,
    BadField,
    Columns,
    ReadContext,
    iter_lines,
    read_rows,
    to_int,
    to_time,
)
from engine.traces.fast import CHUNK_ROWS, Fallback, keep_frame

N_FIELDS = 18
#: Field 11's code for a job that failed (the SWF definition: 1 completed, 0 failed, 5 cancelled).
FAILED_STATUS = 0
FIELD_NAMES = (
    "job_id",
    "submit",
    "wait",
    "run_time",
    "allocated_processors",
    "avg_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user",
    "group",
    "app",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)


def _col(i: int) -> str:
    """Column label used in errors: ``field 4 (run_time)``."""
    return f"field {i + 1} ({FIELD_NAMES[i]})"


def read(ctx: ReadContext) -> None:
    """Read an SWF file into ``ctx``."""
    rows = (
        (line, text.split())
        for line, text in iter_lines(ctx.path)
        if text.strip() and not text.lstrip().startswith(";")
    )
    read_rows(ctx, rows, lambda fields, line: _row(ctx, fields))


def _row(ctx: ReadContext, f: list[str]) -> None:
    if len(f) != N_FIELDS:
        col = _col(min(len(f), N_FIELDS - 1)) if len(f) < N_FIELDS else f"field {N_FIELDS + 1}"
        raise BadField(col, f"{N_FIELDS} whitespace-separated numbers, got {len(f)} fields", " ".join(f[:4]))
    submit = to_time(f[1], _col(1))
    run = to_time(f[3], _col(3))
    allocated = to_int(f[4], _col(4))
    requested = to_int(f[7], _col(7))
    req_time = to_time(f[8], _col(8))
    status = to_int(f[10], _col(10))
    user = to_int(f[11], _col(11))
    gpus = requested if requested > 0 else allocated
    ctx.keep(
        submit if submit >= 0 else math.nan,
        run,
        gpus=gpus,
        user="unknown" if user < 0 else f"u{user}",
        estimate_s=req_time if req_time > 0 else run,
        name=f[0],
        failed=status == FAILED_STATUS,
        columns=Columns(gpus=_col(7 if requested > 0 else 4), duration_s=_col(3), estimate_s=_col(8)),
    )


def fast(ctx: ReadContext) -> None:
    """The vectorised path (see :mod:`engine.traces.fast`): whole blocks of lines converted by numpy."""
    chunk: list[list[str]] = []
    for _, text in iter_lines(ctx.path):
        stripped = text.strip()
        if not stripped or stripped.startswith(";"):
            continue
        fields = stripped.split()
        if len(fields) != N_FIELDS:
            raise Fallback
        chunk.append(fields)
        if len(chunk) == CHUNK_ROWS:
            _fast_chunk(ctx, chunk)
            chunk = []
    if chunk:
        _fast_chunk(ctx, chunk)


def _fast_chunk(ctx: ReadContext, rows: list[list[str]]) -> None:
    table = np.array(rows, dtype=object)
    try:  # object -> float64 calls Python's float() on each field, as the row path does
        values = table[:, [1, 3, 4, 7, 8, 11, 10]].astype(np.float64)
    except (TypeError, ValueError):
        raise Fallback from None
    if not np.isfinite(values).all():
        raise Fallback
    submit, run, allocated, requested, req_time, user, status = values.T
    if (np.abs(values[:, [0, 1, 4]]) > MAX_TIME_S).any():
        raise Fallback
    ints = values[:, [2, 3, 5, 6]]
    if (ints != np.floor(ints)).any() or (np.abs(ints) >= MAX_INT).any():
        raise Fallback
    users = np.array(["unknown" if u < 0 else f"u{u}" for u in user.astype(np.int64).tolist()], dtype=object)
    keep_frame(
        ctx,
        submit_s=np.where(submit >= 0, submit, np.nan),
        duration_s=run,
        gpus=np.where(requested > 0, requested, allocated),
        user=users,
        estimate_s=np.where(req_time > 0, req_time, run),
        name=table[:, 0],
        failed=status == FAILED_STATUS,
    )
