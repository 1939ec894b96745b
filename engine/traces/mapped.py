"""Any other CSV, through a column map: ``--format mapped --map submit=creation_time,duration=run_s,...``.

Map keys (canonical field = the file's column):

=================  =================================================================================
key                meaning
=================  =================================================================================
``submit``         submit time: a number in ``time_unit`` or an ISO date-time (required)
``duration``       run time in ``time_unit`` (required unless ``end`` is given)
``end``            end time (number or ISO date-time); duration = end - submit
``gpus``           GPU count (default 1)
``gpu_fraction``   share of one GPU in (0, 1] (default 1)
``vram_gib``       GPU memory per GPU, GiB (default 0)
``user``           tenant (default ``user0``)
``job_type``       job type (default ``batch``)
``priority``       integer priority (default 0)
``allowed_types``  GPU types joined by ``|`` (default any)
``estimate``       run-time estimate in ``time_unit`` (default: the duration)
``name``           the job's label (default: the line number)
``deadline``       absolute deadline, same origin and unit as ``submit`` (or an ISO date-time; default none)
=================  =================================================================================

Keys may also be written with their canonical suffix (``submit_s``, ``duration_s``, ``estimate_s``,
``deadline_s``).
``time_unit`` is ``s`` (default) or ``ms``. Columns not in the map are ignored. The same drop rules as the
canonical CSV apply (missing time, duration <= 0, GPUs <= 0).
"""

from __future__ import annotations

import csv
import io
import math
import zlib
from dataclasses import dataclass
from typing import Mapping, Sequence

from engine.traces.base import (
    GZIP_MAGIC,
    MAX_TIME_S,
    BadField,
    Columns,
    ReadContext,
    read_header,
    read_rows,
    to_float,
    to_int,
)
from engine.traces.csv import split_types
from engine.traces.options import DEFAULT_TIME_UNIT, TIME_UNITS, seconds_per
from engine.traces.philly import parse_timestamp
from engine.traces.plausibility import unit_warning

KEYS = (
    "submit",
    "duration",
    "end",
    "gpus",
    "gpu_fraction",
    "vram_gib",
    "user",
    "job_type",
    "priority",
    "allowed_types",
    "estimate",
    "name",
    "deadline",
)
ALIASES = {
    "submit_s": "submit",
    "duration_s": "duration",
    "estimate_s": "estimate",
    "end_s": "end",
    "deadline_s": "deadline",
}


def parse_map(text: str) -> dict[str, str]:
    """``"submit=creation_time,duration=run_s"`` -> ``{"submit": "creation_time", "duration": "run_s"}``."""
    out: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        key, eq, column = part.partition("=")
        if not eq or not key.strip() or not column.strip():
            raise ValueError(f"--map part {part.strip()!r}: expected KEY=COLUMN")
        out[key.strip()] = column.strip()
    return out


def _normalise(ctx: ReadContext) -> dict[str, str]:
    raw = ctx.column_map or {}
    out: dict[str, str] = {}
    for key, column in raw.items():
        canon = ALIASES.get(key, key)
        if canon not in KEYS:
            raise ctx.error(f"column map key {key!r} is not a job field; valid keys: {', '.join(KEYS)}")
        out[canon] = column
    if "submit" not in out:
        raise ctx.error("the column map needs submit=COLUMN (and duration=COLUMN or end=COLUMN)")
    if "duration" not in out and "end" not in out:
        raise ctx.error("the column map needs duration=COLUMN or end=COLUMN")
    return out


def _time(text: str, column: str, scale: float) -> float:
    """A number in the time unit, or an ISO date-time (seconds)."""
    try:
        return to_float(text, column) * scale
    except BadField:
        return parse_timestamp(text, column)


def read(ctx: ReadContext) -> None:
    """Read a CSV into ``ctx`` through ``ctx.column_map``."""
    cmap = _normalise(ctx)
    scale = seconds_per(ctx.time_unit)
    header, rows = read_header(ctx, None, list(dict.fromkeys(cmap.values())))
    ix = {key: header.index(col) for key, col in cmap.items()}

    def col(key: str) -> str:
        """The file's column for ``key`` ("" when the map has none)."""
        return cmap.get(key, "")

    names = Columns(
        gpus=col("gpus") or "gpus",
        gpu_fraction=col("gpu_fraction") or "gpu_fraction",
        vram_gib=col("vram_gib") or "vram_gib",
        estimate_s=col("estimate") or "estimate",
        duration_s=col("duration") or col("end"),
        deadline_s=col("deadline") or "deadline",
    )

    def get(f: list[str], key: str) -> str:
        return f[ix[key]].strip() if key in ix else ""

    def row(f: list[str], line: int) -> None:
        submit_txt = get(f, "submit")
        submit = _time(submit_txt, col("submit"), scale) if submit_txt else math.nan
        if "duration" in ix:
            d_txt = get(f, "duration")
            duration = to_float(d_txt, col("duration")) * scale if d_txt else math.nan
        else:
            e_txt = get(f, "end")
            duration = _time(e_txt, col("end"), scale) - submit if e_txt else math.nan
        g_txt, fr_txt, v_txt, p_txt, e_txt = (
            get(f, k) for k in ("gpus", "gpu_fraction", "vram_gib", "priority", "estimate")
        )
        gpus = to_int(g_txt, col("gpus")) if g_txt else 1
        frac = to_float(fr_txt, col("gpu_fraction")) if fr_txt else 1.0
        vram = to_float(v_txt, col("vram_gib")) if v_txt else 0.0
        priority = to_int(p_txt, col("priority")) if p_txt else 0
        estimate = to_float(e_txt, col("estimate")) * scale if e_txt else math.nan
        deadline_txt = get(f, "deadline")
        deadline = _time(deadline_txt, col("deadline"), scale) if deadline_txt else math.nan
        if math.isfinite(submit) and abs(submit) > MAX_TIME_S:
            raise BadField(col("submit"), f"a time within +-{MAX_TIME_S:.0e} seconds", submit)
        ctx.keep(
            submit,
            duration,
            gpus=gpus,
            gpu_fraction=frac,
            vram_gib=vram,
            user=get(f, "user") or "user0",
            job_type=get(f, "job_type") or "batch",
            priority=priority,
            allowed_types=split_types(get(f, "allowed_types")),
            estimate_s=estimate,
            name=get(f, "name") if "name" in ix else str(ctx.n_rows),
            deadline_s=deadline,
            columns=names,
        )

    read_rows(ctx, rows, row, width=len(header), header=header)


# ----------------------------------------------------------------------------------------- inspecting a CSV
#: Column names (lower case, ``-``/space as ``_``) that suggest each key, best first; used by :func:`guess_map`.
HINTS: dict[str, tuple[str, ...]] = {
    "submit": (
        "submit_s",
        "submit",
        "submit_time",
        "submitted",
        "submission_time",
        "arrival",
        "arrival_time",
        "creation_time",
        "created",
        "create_time",
        "queue_time",
        "enqueue_time",
        "start",
        "start_time",
        "start_s",
        "begin",
        "time",
        "timestamp",
        "t0",
    ),
    "duration": (
        "duration_s",
        "duration",
        "runtime",
        "run_time",
        "run_s",
        "elapsed",
        "wall_time",
        "walltime",
        "exec_time",
        "run",
    ),
    "end": (
        "end_s",
        "end",
        "end_time",
        "finish",
        "finish_time",
        "finished",
        "completion_time",
        "stop_time",
        "stop",
        "t1",
        "deletion_time",
    ),
    # num_replicas: Pollux/Sia workloads; gpu_request: Alibaba's 2025 traces.
    "gpus": (
        "gpus",
        "num_gpus",
        "num_gpu",
        "n_gpus",
        "n_gpu",
        "ngpu",
        "ngpus",
        "gpu",
        "gpu_count",
        "gpu_num",
        "gpus_requested",
        "plan_gpu",
        "gpu_request",
        "num_replicas",
        "replicas",
    ),
    "user": ("user", "user_id", "username", "user_name", "owner", "team", "tenant", "vc", "group", "app_name"),
    "job_type": ("job_type", "type", "task_type", "kind", "application", "app", "model", "model_name"),
    "name": ("name", "job_name", "job_id", "jobid", "job", "id"),
    "vram_gib": ("vram_gib", "gpu_mem_gib", "gpu_memory_gib"),
    "estimate": ("estimate_s", "estimate", "requested_time", "time_limit", "walltime_limit"),
    "deadline": ("deadline_s", "deadline", "due", "due_time"),
}


@dataclass(frozen=True)
class CsvPreview:
    """What a CSV holds, read from its first rows: for a person choosing the column map.

    Attributes:
        header: the file's column names.
        rows: the first rows (at most ``preview_rows``), as text.
        guess: ``key -> column`` guessed from the column names (:func:`guess_map`).
        sample: the rows read to check time units (at most ``sample_rows``).
    """

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    guess: tuple[tuple[str, str], ...]
    sample: tuple[tuple[str, ...], ...]


def _norm(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def guess_map(header: Sequence[str]) -> dict[str, str]:
    """``key -> column`` for each key of :data:`HINTS` one of whose names is a column (each column used once);
    a duration column makes an end column unnecessary, so ``end`` is guessed only without one."""
    by_norm = {_norm(h): h for h in header}
    out: dict[str, str] = {}
    for key, names in HINTS.items():
        if key == "end" and "duration" in out:
            continue
        column = next((by_norm[n] for n in names if n in by_norm and by_norm[n] not in out.values()), None)
        if column is not None:
            out[key] = column
    return out


#: Text a preview reads from the start of a file (after un-gzipping): the header, the rows shown and a sample.
PREVIEW_BYTES = 4_000_000


def preview(data: bytes, preview_rows: int = 5, sample_rows: int = 2_000) -> CsvPreview:
    """Header, first rows and guessed map of the CSV ``data``, un-gzipped when it is gzip (``TraceError`` when it
    is not CSV text). Reads at most :data:`PREVIEW_BYTES` of text."""
    from engine.errors import TraceError

    if data[:2] == GZIP_MAGIC:  # what the loader reads: the un-gzipped text (its first PREVIEW_BYTES only)
        try:
            data = zlib.decompressobj(wbits=31).decompress(data, PREVIEW_BYTES)
        except zlib.error as exc:
            raise TraceError(f"not a valid gzip file ({exc})") from None
    text = data[:PREVIEW_BYTES].decode("utf-8-sig", errors="replace")
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        lines = [r for r, _ in zip((r for r in reader if any(f.strip() for f in r)), range(sample_rows + 1))]
    except csv.Error as exc:
        raise TraceError(f"not valid CSV ({exc})") from None
    if not lines:
        raise TraceError("the file is empty; a trace needs a header line naming its columns")
    header = tuple(h.strip() for h in lines[0])
    if len(header) < 2:
        raise TraceError(
            f"the first line has {len(header)} column; a CSV trace needs at least a submit time and a "
            "duration (or an end time), separated by commas"
        )
    sample = tuple(tuple(f.strip() for f in r) for r in lines[1:])
    return CsvPreview(header=header, rows=sample[:preview_rows], guess=tuple(guess_map(header).items()), sample=sample)


def missing_for_run(cmap: Mapping[str, str]) -> str:
    """A sentence saying what a run needs and ``cmap`` lacks; empty when it has a submit time and a duration or
    an end time."""
    if not cmap.get("submit"):
        return (
            "A run needs each job's submit time: choose the column that holds when jobs were submitted "
            "(or started). Without one, this file cannot be simulated."
        )
    if not cmap.get("duration") and not cmap.get("end"):
        return (
            "A run needs each job's length: choose a duration (run time) column, or an end time column, from "
            "which the duration is end - submit. Without either, this file cannot be simulated."
        )
    return ""


def _seconds(text: str, scale: float) -> float:
    try:
        return float(text) * scale
    except ValueError:
        try:
            return parse_timestamp(text, "")
        except BadField:
            return math.nan


def time_unit_note(pv: CsvPreview, cmap: Mapping[str, str], time_unit: str) -> tuple[str, str]:
    """``(suggested unit, sentence)`` from the sampled rows under ``cmap``: the sentence of
    :func:`engine.traces.plausibility.unit_warning` (empty when the times look plausible); the suggestion is
    ``"ms"`` when it says the numbers look like milliseconds, else ``time_unit``."""
    scale = TIME_UNITS.get(time_unit or DEFAULT_TIME_UNIT, 1.0)
    ix = {k: pv.header.index(c) for k, c in cmap.items() if c in pv.header}
    if "submit" not in ix:
        return time_unit, ""
    submit = [_seconds(r[ix["submit"]], scale) for r in pv.sample if len(r) > ix["submit"] and r[ix["submit"]]]
    if "duration" in ix:
        lengths = [_seconds(r[ix["duration"]], scale) for r in pv.sample if len(r) > ix["duration"]]
    elif "end" in ix:
        lengths = [
            _seconds(r[ix["end"]], scale) - _seconds(r[ix["submit"]], scale)
            for r in pv.sample
            if len(r) > max(ix["end"], ix["submit"])
        ]
    else:
        lengths = []
    unit = time_unit or DEFAULT_TIME_UNIT
    note = unit_warning(submit, lengths, time_unit=unit, jobs_label=f"the first {len(submit):,} jobs")
    return ("ms" if note and unit == "s" else time_unit), note


def needs_map(pv: CsvPreview) -> bool:
    """True when the CSV's header is none of the formats auto-detection knows (it then needs a column map)."""
    from engine.traces.detect import HEADER_SIGNATURES, OPENB_NODE_COLUMNS

    header = set(pv.header)
    return not any(cols <= header for cols in (*HEADER_SIGNATURES.values(), OPENB_NODE_COLUMNS))
