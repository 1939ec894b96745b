"""The project's canonical trace format: a CSV with a header, one job a row.

Columns (only ``submit_s`` and ``duration_s`` are required; order is free; other column names are an error,
so a typo cannot silently fall back to a default):

==================  =====================================================================  ===============
column              meaning                                                                empty/absent
==================  =====================================================================  ===============
``job_id``          the job's id in its source (kept as the job's ``name`` when no ``name``)  row number
``name``            free-text label of the job                                             ``job_id``
``submit_s``        submit time, seconds (any origin; the loader shifts the first to 0)    row dropped
``duration_s``      true run time at reference speed, seconds (> 0)                        row dropped
``gpus``            GPUs requested (integer >= 1; 0 or less: dropped as ``no_gpu``)       1
``gpu_fraction``    share of one GPU in (0, 1]; below 1 only with ``gpus`` = 1              1
``vram_gib``        GPU memory needed on each GPU, GiB (0 = fits any GPU)                  0
``user``            tenant                                                                 ``user0``
``job_type``        ``training``, ``inference``, ``batch``, ``interactive`` or any label   ``batch``
``priority``        integer, larger = more important                                       0
``allowed_types``   GPU types the job may use, joined by ``|`` (e.g. ``A100-80|H100-80``)  any type
``estimate_s``      the user's run-time estimate, seconds (> 0)                            ``duration_s``
==================  =====================================================================  ===============

:func:`write_csv` writes every column, floats in their shortest exact form, so reading the file back gives
equal jobs.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Iterable

from ..job import Job
from .base import BadField, ReadContext, check_shape, iter_csv, to_float, to_int, to_time

COLUMNS = ("job_id", "name", "submit_s", "duration_s", "gpus", "gpu_fraction", "vram_gib", "user", "job_type",
           "priority", "allowed_types", "estimate_s")
REQUIRED = ("submit_s", "duration_s")


def read_header(ctx: ReadContext, valid: Iterable[str], required: Iterable[str]) -> tuple[int, list[str], Iterable]:
    """Read and check a CSV header: returns ``(line, column names, remaining rows)``."""
    rows = iter_csv(ctx.path)
    first = next(rows, None)
    if first is None:
        raise ctx.error("empty file; expected a header line naming the columns")
    line, header = first
    header = [h.strip() for h in header]
    valid = tuple(valid)
    unknown = [h for h in header if h not in valid]
    if unknown:
        raise ctx.error(f"unknown column {unknown[0]!r}; valid columns: {', '.join(valid)}", line, unknown[0])
    missing = [c for c in required if c not in header]
    if missing:
        raise ctx.error(f"missing required column {missing[0]!r}; header is {', '.join(header)}", line)
    dup = next((h for h in header if header.count(h) > 1), None)
    if dup:
        raise ctx.error(f"column {dup!r} appears twice", line, dup)
    return line, header, rows


def check_width(fields: list[str], header: list[str]) -> None:
    """``BadField`` when a row has fewer or more fields than the header."""
    if len(fields) < len(header):
        raise BadField(header[len(fields)], f"{len(header)} fields as in the header, got {len(fields)}",
                       ",".join(fields))
    if len(fields) > len(header):
        raise BadField(f"field {len(header) + 1}", f"{len(header)} fields as in the header, got {len(fields)}",
                       fields[len(header)])


def read(ctx: ReadContext) -> None:
    """Read a canonical CSV into ``ctx``."""
    _, header, rows = read_header(ctx, COLUMNS, REQUIRED)
    ix = {c: header.index(c) for c in header}
    for line, fields in rows:
        ctx.n_rows += 1
        try:
            check_width(fields, header)
            _row(ctx, {c: fields[i].strip() for c, i in ix.items()}, line)
        except BadField as exc:
            ctx.bad(line, exc)


def _row(ctx: ReadContext, f: dict[str, str], line: int) -> None:
    submit_txt, dur_txt = f["submit_s"], f["duration_s"]
    submit = to_time(submit_txt, "submit_s") if submit_txt else math.nan
    duration = to_time(dur_txt, "duration_s") if dur_txt else math.nan
    gpus = to_int(f["gpus"], "gpus") if f.get("gpus") else 1
    frac = to_float(f["gpu_fraction"], "gpu_fraction") if f.get("gpu_fraction") else 1.0
    vram = to_float(f["vram_gib"], "vram_gib") if f.get("vram_gib") else 0.0
    priority = to_int(f["priority"], "priority") if f.get("priority") else 0
    estimate = to_time(f["estimate_s"], "estimate_s") if f.get("estimate_s") else math.nan
    if math.isnan(submit) or math.isnan(duration):
        ctx.drop("missing_time")
        return
    if duration <= 0:
        ctx.drop("non_positive_duration")
        return
    if gpus <= 0:
        ctx.drop("no_gpu")
        return
    check_shape(gpus, frac, vram, estimate)
    allowed = frozenset(t.strip() for t in f.get("allowed_types", "").split("|") if t.strip())
    job_id = f.get("job_id", "")
    ctx.rows.add(submit, duration, gpus=gpus, gpu_fraction=frac, vram_gib=vram, user=f.get("user") or "user0",
                 job_type=f.get("job_type") or "batch", priority=priority, allowed_types=allowed,
                 estimate_s=estimate, name=f["name"] if "name" in f else job_id)


def write_csv(jobs: Iterable[Job], path: str | Path) -> Path:
    """Write ``jobs`` as a canonical CSV (every column; floats exact); returns the path.

    Reading the file back with ``load_trace(path, "csv")`` gives equal jobs when ``jobs`` are numbered
    ``0..n-1`` in submit order with the first submit at 0 (what every loader and the generator produce).
    """
    path = Path(path)
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(COLUMNS)
        for j in jobs:
            w.writerow((j.job_id, j.name, repr(float(j.submit_s)), repr(float(j.duration_s)), j.gpus,
                        repr(float(j.gpu_fraction)), repr(float(j.vram_gib)), j.user, j.job_type, j.priority,
                        "|".join(sorted(j.allowed_types)), repr(float(j.estimate_s))))
    return path
