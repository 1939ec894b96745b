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
=================  =================================================================================

Keys may also be written with their canonical suffix (``submit_s``, ``duration_s``, ``estimate_s``).
``time_unit`` is ``s`` (default) or ``ms``. Columns not in the map are ignored. The same drop rules as the
canonical CSV apply (missing time, duration <= 0, GPUs <= 0).
"""

from __future__ import annotations

import math

from engine.traces.base import MAX_TIME_S, BadField, Columns, ReadContext, read_header, read_rows, to_float, to_int
from engine.traces.csv import split_types
from engine.traces.philly import parse_timestamp
from engine.traces.tiresias import TIME_UNITS

KEYS = ("submit", "duration", "end", "gpus", "gpu_fraction", "vram_gib", "user", "job_type", "priority",
        "allowed_types", "estimate", "name")
ALIASES = {"submit_s": "submit", "duration_s": "duration", "estimate_s": "estimate", "end_s": "end"}


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
    scale = TIME_UNITS[ctx.time_unit or "s"]
    header, rows = read_header(ctx, None, list(dict.fromkeys(cmap.values())))
    ix = {key: header.index(col) for key, col in cmap.items()}

    col = cmap.get
    names = Columns(gpus=col("gpus") or "gpus", gpu_fraction=col("gpu_fraction") or "gpu_fraction",
                    vram_gib=col("vram_gib") or "vram_gib", estimate_s=col("estimate") or "estimate",
                    duration_s=col("duration") or col("end"))

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
        g_txt, fr_txt, v_txt, p_txt, e_txt = (get(f, k) for k in ("gpus", "gpu_fraction", "vram_gib", "priority",
                                                                 "estimate"))
        gpus = to_int(g_txt, col("gpus")) if g_txt else 1
        frac = to_float(fr_txt, col("gpu_fraction")) if fr_txt else 1.0
        vram = to_float(v_txt, col("vram_gib")) if v_txt else 0.0
        priority = to_int(p_txt, col("priority")) if p_txt else 0
        estimate = to_float(e_txt, col("estimate")) * scale if e_txt else math.nan
        if math.isfinite(submit) and abs(submit) > MAX_TIME_S:
            raise BadField(col("submit"), f"a time within +-{MAX_TIME_S:.0e} seconds", submit)
        ctx.keep(submit, duration, gpus=gpus, gpu_fraction=frac, vram_gib=vram, user=get(f, "user") or "user0",
                 job_type=get(f, "job_type") or "batch", priority=priority,
                 allowed_types=split_types(get(f, "allowed_types")), estimate_s=estimate,
                 name=get(f, "name") if "name" in ix else str(ctx.n_rows), columns=names)

    read_rows(ctx, rows, row, width=len(header), header=header)
