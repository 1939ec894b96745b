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
``failed``          ``1`` (or ``true``) when the source recorded the job as failed         ``0``
``deadline_s``      absolute deadline, seconds, same origin as ``submit_s`` (> submit)      none
``min_gpus``        fewest GPUs an elastic job may run on (1 to ``gpus``)                   ``gpus``
``max_gpus``        most GPUs an elastic job may run on (``gpus`` or more)                  ``gpus``
``scaling``         an elastic job's scaling curve (:data:`engine.sim.scaling.SCALING_CURVES`)  rigid
==================  =====================================================================  ===============

:func:`write_csv` writes every column (``failed`` only when some job failed, ``deadline_s`` only when some job has
a deadline, ``min_gpus``, ``max_gpus`` and ``scaling`` only when some job is elastic), floats in their shortest exact
form,
so reading the file back gives equal jobs.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from engine.io import atomic_open
from engine.sim.job import Job
from engine.traces.base import BadField, ReadContext, read_header, read_rows, to_float, to_int, to_time
from engine.traces.fast import Fallback, keep_frame, numbers, read_chunks, strings

COLUMNS = (
    "job_id",
    "name",
    "submit_s",
    "duration_s",
    "gpus",
    "gpu_fraction",
    "vram_gib",
    "user",
    "job_type",
    "priority",
    "allowed_types",
    "estimate_s",
    "failed",
    "deadline_s",
    "min_gpus",
    "max_gpus",
    "scaling",
)
#: The columns of elastic jobs (the vectorised path leaves files with them to the row path).
ELASTIC_COLUMNS = ("min_gpus", "max_gpus", "scaling")
#: What the ``failed`` column may hold, and what it means.
FAILED_VALUES = {"": False, "0": False, "false": False, "1": True, "true": True}
REQUIRED = ("submit_s", "duration_s")


def read(ctx: ReadContext) -> None:
    """Read a canonical CSV into ``ctx``, row by row."""
    header, rows = read_header(ctx, COLUMNS, REQUIRED)
    read_rows(
        ctx,
        rows,
        lambda fields, line: _row(ctx, dict(zip(header, (f.strip() for f in fields)))),
        width=len(header),
        header=header,
    )


def _row(ctx: ReadContext, f: dict[str, str]) -> None:
    submit_txt, dur_txt = f["submit_s"], f["duration_s"]
    get = f.get
    submit = to_time(submit_txt, "submit_s") if submit_txt else math.nan
    duration = to_time(dur_txt, "duration_s") if dur_txt else math.nan
    ctx.keep(
        submit,
        duration,
        gpus=to_int(f["gpus"], "gpus") if get("gpus") else 1,
        gpu_fraction=to_float(f["gpu_fraction"], "gpu_fraction") if get("gpu_fraction") else 1.0,
        vram_gib=to_float(f["vram_gib"], "vram_gib") if get("vram_gib") else 0.0,
        priority=to_int(f["priority"], "priority") if get("priority") else 0,
        estimate_s=to_time(f["estimate_s"], "estimate_s") if get("estimate_s") else math.nan,
        user=get("user") or "user0",
        job_type=get("job_type") or "batch",
        allowed_types=split_types(get("allowed_types", "")),
        name=f["name"] if "name" in f else get("job_id", ""),
        failed=to_failed(get("failed", "")),
        deadline_s=to_time(f["deadline_s"], "deadline_s") if get("deadline_s") else math.nan,
        min_gpus=to_int(f["min_gpus"], "min_gpus") if get("min_gpus") else None,
        max_gpus=to_int(f["max_gpus"], "max_gpus") if get("max_gpus") else None,
        scaling=get("scaling", ""),
    )


def to_failed(text: str) -> bool:
    """The ``failed`` column's value (:data:`FAILED_VALUES`, any case), or ``BadField``."""
    value = FAILED_VALUES.get(text.strip().lower())
    if value is None:
        raise BadField("failed", "0, 1, true, false or empty", text)
    return value


def split_types(text: str) -> frozenset[str]:
    """``"A100-80|H100-80"`` -> ``frozenset({"A100-80", "H100-80"})``; empty -> any type."""
    return frozenset(t.strip() for t in text.split("|") if t.strip())


def fast(ctx: ReadContext) -> None:
    """The vectorised path (see :mod:`engine.traces.fast`)."""
    header, _ = read_header(ctx, COLUMNS, REQUIRED)
    if set(ELASTIC_COLUMNS) & set(header):
        raise Fallback  # elastic jobs: the row path reads them
    for chunk in read_chunks(ctx, expected=tuple(header)):
        n = len(chunk)

        def num(c, default, chunk=chunk, n=n, **kw):  # defaults bind this chunk (ruff B023)
            return numbers(chunk, c, allow_missing=True, **kw) if c in chunk else np.full(n, default)

        def text(c, default, chunk=chunk, n=n):
            if c not in chunk:
                return np.full(n, default, dtype=object)
            values = strings(chunk, c)
            return np.where(values == "", default, values) if default else values

        gpus = num("gpus", 1.0, integer=True)
        vram, prio = num("vram_gib", 0.0), num("priority", 0.0, integer=True)
        frac = num("gpu_fraction", 1.0)
        gpus, frac, vram, prio = (
            np.where(np.isnan(a), d, a) for a, d in ((gpus, 1.0), (frac, 1.0), (vram, 0.0), (prio, 0.0))
        )
        codes, uniques = pd.factorize(text("allowed_types", ""))  # few distinct sets: split each once
        allowed = np.array([split_types(t) for t in uniques], dtype=object)[codes]
        keep_frame(
            ctx,
            submit_s=num("submit_s", np.nan, time=True),
            duration_s=num("duration_s", np.nan, time=True),
            gpus=gpus,
            gpu_fraction=frac,
            vram_gib=vram,
            priority=prio,
            user=text("user", "user0"),
            job_type=text("job_type", "batch"),
            allowed=allowed,
            estimate_s=num("estimate_s", np.nan, time=True),
            name=text("name", "") if "name" in chunk else text("job_id", ""),
            failed=_failed_column(text("failed", "")),
            deadline_s=num("deadline_s", np.nan, time=True),
        )


def _failed_column(values: np.ndarray) -> np.ndarray:
    """The ``failed`` column of a chunk as booleans; ``Fallback`` (the row path names the bad row) on a bad value."""
    codes, uniques = pd.factorize(pd.Series(values, dtype=object).str.lower())
    meaning = [FAILED_VALUES.get(u) for u in uniques]
    if None in meaning:
        raise Fallback
    return np.array(meaning, dtype=bool)[codes] if len(values) else np.zeros(0, dtype=bool)


def write_csv(jobs: Iterable[Job], path: str | Path) -> Path:
    """Write ``jobs`` as a canonical CSV (every column; floats exact); returns the path.

    Raises ``ValueError`` for a text field with a NUL character (no CSV reader accepts it) or with a character
    UTF-8 cannot encode (a lone surrogate), naming the job.

    Reading the file back with ``load_trace(path, "csv")`` gives equal jobs when ``jobs`` are numbered
    ``0..n-1`` in submit order with the first submit at 0 (what every loader and the generator produce).
    """
    # Every row is checked before the file is opened: a refused job leaves no half-written file behind.
    rows = []
    jobs_written = list(jobs)
    for j in jobs_written:
        types = "|".join(sorted(j.allowed_types))
        text = j.name + j.user + j.job_type + types
        if "\x00" in text:
            raise ValueError(
                f"job {j.job_id}: a NUL character in its name, user, type or GPU types cannot be written to CSV"
            )
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as e:
                raise ValueError(
                    f"job {j.job_id}: its name, user, type or GPU types hold {text[e.start]!r}, "
                    "which UTF-8 cannot encode (a lone surrogate)"
                ) from None
        rows.append(
            (
                "\r" in text,
                (
                    j.job_id,
                    j.name,
                    repr(float(j.submit_s)),
                    repr(float(j.duration_s)),
                    j.gpus,
                    repr(float(j.gpu_fraction)),
                    repr(float(j.vram_gib)),
                    j.user,
                    j.job_type,
                    j.priority,
                    types,
                    repr(float(j.estimate_s)),
                    int(j.failed),
                    repr(j.deadline_s) if j.has_deadline else "",
                    j.min_gpus,
                    j.max_gpus,
                    j.scaling,
                ),
            )
        )
    # failed, deadline_s and the elastic columns only when they say something: files of rigid jobs that never failed
    # stay as they were
    optional = COLUMNS.index("failed")
    kept = [*range(optional), *(k for k in (optional, optional + 1) if any(row[k] for _, row in rows))]
    if any(j.elastic or j.scaling for j in jobs_written):
        kept += [COLUMNS.index(c) for c in ELASTIC_COLUMNS]
    path = Path(path)
    with atomic_open(path, "w", encoding="utf-8", newline="") as f:
        plain = csv.writer(f, lineterminator="\n")
        # csv quotes fields holding the line terminator ("\n") but not a lone "\r", which readers take for a
        # line end: rows with one are written fully quoted.
        quoted = csv.writer(f, lineterminator="\n", quoting=csv.QUOTE_ALL)
        plain.writerow([COLUMNS[k] for k in kept])
        for has_cr, row in rows:
            (quoted if has_cr else plain).writerow([row[k] for k in kept])
    return path
