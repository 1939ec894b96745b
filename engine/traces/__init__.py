"""Trace loading: every supported format into one tuple of :class:`~engine.sim.job.Job`, plus a report.

    from engine.traces import load_trace
    trace = load_trace("philly.csv")             # format auto-detected
    trace.jobs, trace.report.dropped              # jobs 0..n-1 in submit order, first submit at 0

Each format is one module with ``read(ctx)``; :data:`TRACE_FORMATS` is the registry. Readers stream their
file row by row (memory grows with the jobs kept, not with the file) and report rows they drop by reason.
Formats with many rows also have a vectorised ``fast(ctx)`` for clean files; anything unusual falls back to
the row path, which names the line and column of an error (see :mod:`engine.traces.fast`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from engine.errors import TraceError, UnknownNameError
from engine.sim.job import Job
from engine.traces import csv as _csv
from engine.traces import gavel as _gavel
from engine.traces import mapped as _mapped
from engine.traces import openb as _openb
from engine.traces import philly as _philly
from engine.traces import pollux as _pollux
from engine.traces import swf as _swf
from engine.traces import tiresias as _tiresias
from engine.traces.base import DROP_REASONS, MAX_TIME_S, ReadContext
from engine.traces.csv import write_csv
from engine.traces.fast import Fallback
from engine.traces.options import TIME_UNITS
from engine.traces.plausibility import unit_warning
from engine.traces.report import TraceReport, make_report

__all__ = [
    "DROP_REASONS",
    "TRACE_FORMATS",
    "Trace",
    "TraceError",
    "TraceFormat",
    "TraceReport",
    "load_trace",
    "trace_format",
    "write_csv",
]


@dataclass(frozen=True)
class TraceFormat:
    """A registered trace format.

    Attributes:
        name: what ``--format`` takes.
        read: fills a :class:`~engine.traces.base.ReadContext` from its file.
        summary: one line for ``python -m engine list``.
        options: which of ``time_unit`` and ``column_map`` the format accepts.
        fast: an optional vectorised reader for clean files (see :mod:`engine.traces.fast`); ``read`` is the
            reference it falls back to.
    """

    name: str
    read: Callable[[ReadContext], None]
    summary: str
    options: frozenset[str] = frozenset()
    fast: Callable[[ReadContext], None] | None = None


TRACE_FORMATS: dict[str, TraceFormat] = {
    f.name: f
    for f in (
        TraceFormat("csv", _csv.read, "the project's canonical CSV (submit_s, duration_s, gpus, ...)", fast=_csv.fast),
        TraceFormat(
            "swf", _swf.read, "Standard Workload Format, Parallel Workloads Archive (.swf, .swf.gz)", fast=_swf.fast
        ),
        TraceFormat(
            "philly",
            _philly.read,
            "Microsoft Philly (Pollux CSV: timestamp, duration, num_gpus, cluster)",
            fast=_philly.fast,
        ),
        TraceFormat(
            "openb", _openb.read, "Alibaba openb pod list (gpu_milli fractions, gpu_spec types)", fast=_openb.fast
        ),
        TraceFormat("tiresias", _tiresias.read, "Tiresias/Muri CSV (--time-unit s|ms)", frozenset({"time_unit"})),
        TraceFormat("gavel", _gavel.read, "Gavel TSV (durations from steps and a throughput table)"),
        TraceFormat(
            "pollux",
            _pollux.read,
            "Pollux workload CSV (name, time, application, num_replicas, "
            "batch_size; durations from application profiles)",
        ),
        TraceFormat(
            "mapped",
            _mapped.read,
            "any CSV through --map submit=COL,duration=COL,... (--time-unit)",
            frozenset({"time_unit", "column_map"}),
        ),
    )
}


def trace_format(name: str) -> TraceFormat:
    """The registered format ``name``; ``UnknownNameError`` lists the valid names."""
    fmt = TRACE_FORMATS.get(name)
    if fmt is None:
        raise UnknownNameError(f"unknown trace format {name!r}; valid: {', '.join(TRACE_FORMATS)}")
    return fmt


@dataclass(frozen=True)
class Trace:
    """A loaded trace: jobs numbered ``0..n-1`` in submit order with the first submit at 0, and its report."""

    jobs: tuple[Job, ...]
    report: TraceReport
    format: str
    source: str


def load_trace(
    path: str | Path,
    format: str | None = None,
    *,
    skip_bad: bool = False,
    time_unit: str | None = None,
    column_map: dict[str, str] | None = None,
    first: int | None = None,
    window: tuple[float, float] | None = None,
    load_scale: float | None = None,
) -> Trace:
    """Load a trace file of any registered format.

    Args:
        path: the file (gzipped files are read transparently).
        format: a name in :data:`TRACE_FORMATS`; ``None`` detects it from the file's first lines.
        skip_bad: skip rows with unreadable fields (counted as ``malformed``) instead of raising.
        time_unit: ``"s"`` or ``"ms"``, for formats whose time unit is not fixed (tiresias, mapped).
        column_map: ``canonical column -> file column``, for the ``mapped`` format.
        first: keep only the first N jobs (in submit order, after ``window``).
        window: ``(start_s, end_s)``: keep jobs submitted in ``[start_s, end_s)`` seconds after the first
            arrival, then shift again so the first kept job arrives at 0.
        load_scale: divide all submit times by this factor (2 = arrivals twice as dense = twice the load).

    Raises:
        TraceError: a missing, unreadable or malformed file (the message names line, column and expectation),
            or invalid options.
        UnknownNameError: an unknown ``format``.
    """
    path = Path(path)
    if format is None:
        from engine.traces.detect import detect_format

        format = detect_format(path)
    fmt = trace_format(format)
    given = {k for k, v in (("time_unit", time_unit), ("column_map", column_map)) if v is not None}
    if given - fmt.options:
        opt = sorted(given - fmt.options)[0]
        users = [f.name for f in TRACE_FORMATS.values() if opt in f.options]
        raise TraceError(
            f"option {opt} does not apply to format {fmt.name!r} (only to: {', '.join(users)})", path=str(path)
        )
    if time_unit is not None and time_unit not in TIME_UNITS:
        raise TraceError(f"time unit {time_unit!r}: expected {' or '.join(map(repr, TIME_UNITS))}", path=str(path))
    if first is not None and first < 0:
        raise TraceError(f"first must be >= 0, got {first}", path=str(path))
    if window is not None and not (window[0] <= window[1]):
        raise TraceError(f"window {window[0]}:{window[1]}: expected START <= END", path=str(path))
    if load_scale is not None and not (math.isfinite(load_scale) and load_scale > 0):
        raise TraceError(f"load scale must be a number > 0, got {load_scale}", path=str(path))
    ctx = read_file(fmt, path, skip_bad=skip_bad, time_unit=time_unit, column_map=column_map)
    jobs, trimmed = _build_jobs(ctx, first=first, window=window, load_scale=load_scale)
    warning = unit_warning(
        np.frombuffer(ctx.rows.submit_s, dtype=np.float64),
        np.frombuffer(ctx.rows.duration_s, dtype=np.float64),
        time_unit=time_unit or "s",
        switchable="time_unit" in fmt.options,
    )
    report = make_report(
        jobs, rows=ctx.n_rows, dropped=ctx.dropped, trimmed=trimmed, examples=ctx.examples, unit_warning=warning
    )
    return Trace(jobs=jobs, report=report, format=fmt.name, source=str(path))


def read_file(fmt: TraceFormat, path: Path, *, use_fast: bool = True, **options) -> ReadContext:
    """Read ``path`` with ``fmt``: the fast path when it has one and the file is clean, else row by row."""
    if use_fast and fmt.fast is not None:
        ctx = ReadContext(path=path, **options)
        try:
            fmt.fast(ctx)
            ctx.used_fast_path = True
            return ctx
        except Fallback:
            pass
    ctx = ReadContext(path=path, **options)
    fmt.read(ctx)
    return ctx


def _build_jobs(
    ctx: ReadContext, *, first: int | None, window: tuple[float, float] | None, load_scale: float | None
) -> tuple[tuple[Job, ...], int]:
    """Sort the kept rows by submit time (stable), shift, trim, scale and number them: ``(jobs, trimmed)``."""
    rows = ctx.rows
    n = len(rows)
    if n == 0:
        return (), 0
    submit = np.frombuffer(rows.submit_s, dtype=np.float64)
    order = np.argsort(submit, kind="stable")
    times = submit[order] - submit[order[0]]
    # deadlines take the same shifts as the submit times (exact round trips), then keep their slack under a scale
    deadlines = np.frombuffer(rows.deadline_s, dtype=np.float64)[order] - submit[order[0]]
    if window is not None:
        keep = (times >= window[0]) & (times < window[1])
        order, times, deadlines = order[keep], times[keep], deadlines[keep]
        if len(times):
            deadlines = deadlines - times[0]
            times = times - times[0]
    if first is not None:
        order, times, deadlines = order[:first], times[:first], deadlines[:first]
    if load_scale is not None:
        span_s = float(times[-1]) if len(times) else 0.0  # finite: the trace's own times are
        slack = deadlines - times
        with np.errstate(over="ignore"):
            times = times / load_scale
        if len(times) and not times[-1] <= MAX_TIME_S:  # the scale needed comes from the span, never from an inf
            raise ctx.error(
                f"load scale {load_scale:g} stretches the submit times past {MAX_TIME_S:.0e} seconds; "
                f"use a scale of at least {span_s / MAX_TIME_S:.3g}"
            )
        deadlines = times + slack
    # a deadline stays after its submit time where the shift rounds it onto it (NaN stays NaN: none)
    deadlines = np.maximum(deadlines, np.nextafter(times, np.inf))
    order_list = order.tolist()

    def column(values) -> list:
        return np.frombuffer(values, dtype=np.float64 if values.typecode == "d" else np.int64)[order].tolist()

    def strings(codes, table: list) -> list:
        return [table[c] for c in np.frombuffer(codes, dtype=np.int64)[order].tolist()]

    rigid = (None, None, "")
    elastic = [rows.elastic.get(k, rigid) for k in order_list] if rows.elastic else [rigid] * len(order_list)
    jobs = tuple(
        map(
            Job,
            range(len(order_list)),
            times.tolist(),
            column(rows.duration_s),
            column(rows.gpus),
            column(rows.gpu_fraction),
            column(rows.vram_gib),
            strings(rows.user, rows.user_names),
            strings(rows.job_type, rows.job_types),
            column(rows.priority),
            strings(rows.allowed, rows.allowed_sets),
            column(rows.estimate_s),
            [rows.name[k] for k in order_list],
            [bool(f) for f in column(rows.failed)],
            deadlines.tolist(),
            [e[0] for e in elastic],
            [e[1] for e in elastic],
            [e[2] for e in elastic],
        )
    )
    return jobs, n - len(jobs)
