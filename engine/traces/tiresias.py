"""Tiresias simulator CSV (NSDI'19, Apache-2.0) and the Muri forks that share its column names.

Columns: ``job_id, num_gpu, submit_time, iterations, model_name, duration, interval``. The original
Tiresias writes times in **seconds**; forks (e.g. Muri) write the same columns in **milliseconds**, so the
unit is an option (``time_unit="ms"`` / ``--time-unit ms``), never a guess; the default is seconds.

Mapping: submit = ``submit_time``; duration = ``duration``; GPUs = ``num_gpu``; job type ``training``;
name = ``job_id``; user ``user0`` (the format has none); ``iterations``, ``model_name`` and ``interval``
are not used. Duration <= 0 drops the row as ``non_positive_duration``; ``num_gpu`` <= 0 as ``no_gpu``.
"""

from __future__ import annotations

import math

from engine.traces.base import Columns, ReadContext, read_header, read_rows, to_int, to_time
from engine.traces.options import seconds_per

COLUMNS = ("job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval")
REQUIRED = ("num_gpu", "submit_time", "duration")
COLUMN_NAMES = Columns(gpus="num_gpu", duration_s="duration")


def read(ctx: ReadContext) -> None:
    """Read a Tiresias CSV into ``ctx`` (times scaled by ``ctx.time_unit``, default seconds)."""
    scale = seconds_per(ctx.time_unit)
    header, rows = read_header(ctx, None, REQUIRED)
    ix = {c: header.index(c) for c in header}
    i_gpus, i_submit, i_dur = ix["num_gpu"], ix["submit_time"], ix["duration"]
    i_id = ix.get("job_id")

    def row(f: list[str], line: int) -> None:
        submit_txt, dur_txt = f[i_submit].strip(), f[i_dur].strip()
        ctx.keep(
            to_time(submit_txt, "submit_time", scale) if submit_txt else math.nan,
            to_time(dur_txt, "duration", scale) if dur_txt else math.nan,
            gpus=to_int(f[i_gpus], "num_gpu"),
            job_type="training",
            name=f[i_id].strip() if i_id is not None else str(ctx.n_rows),
            columns=COLUMN_NAMES,
        )

    read_rows(ctx, rows, row, width=len(header), header=header)
