"""Pollux-style workload CSV (Pollux, OSDI'21, Apache-2.0): jobs that name an application instead of a run time.

Columns: ``name, time, application, num_replicas, batch_size``, as in Pollux's ``simulator/workloads/*.csv`` (and
Sia-style workloads with the same header). ``time`` is the submit time in seconds.

Durations are not in the file: a job runs ``reference_run_s / speedup(num_replicas)`` seconds, from the
application's profile in :data:`engine.traces.profiles.APPLICATION_PROFILES` (cifar10, imagenet, bert,
deepspeech2, yolov3, ncf: measured in Pollux's artifact). Jobs are rigid: they hold ``num_replicas`` GPUs from
start to end (Pollux would resize them). ``batch_size`` is not used: each profile is for one batch size (the one
Pollux's workloads use most); a job of another batch size runs as long as the profile's.

Mapping: submit = ``time``; GPUs = ``num_replicas``; job type ``training``; name = ``name``; user ``user0`` (the
format has no tenants; as in the other formats without a user column, fair-share schedulers see one user). An
application without a profile drops the row as ``unknown_application``.
"""

from __future__ import annotations

import math

from engine.traces.base import Columns, ReadContext, read_header, read_rows, to_int, to_time
from engine.traces.profiles import APPLICATION_PROFILES

REQUIRED = ("time", "application", "num_replicas")
COLUMN_NAMES = Columns(gpus="num_replicas", duration_s="application")


def read(ctx: ReadContext) -> None:
    """Read a Pollux/Sia workload CSV into ``ctx``."""
    header, rows = read_header(ctx, None, REQUIRED)
    ix = {c: header.index(c) for c in header}
    i_time, i_app, i_gpus = ix["time"], ix["application"], ix["num_replicas"]
    i_name = ix.get("name")

    def row(f: list[str], line: int) -> None:
        time_txt = f[i_time].strip()
        submit = to_time(time_txt, "time") if time_txt else math.nan
        gpus = to_int(f[i_gpus], "num_replicas")
        profile = APPLICATION_PROFILES.get(f[i_app].strip())
        if profile is None:
            ctx.drop("unknown_application")
            return
        ctx.keep(
            submit,
            profile.run_time_s(max(gpus, 1)),
            gpus=gpus,
            job_type="training",
            name=f[i_name].strip() if i_name is not None else str(ctx.n_rows),
            columns=COLUMN_NAMES,
        )

    read_rows(ctx, rows, row, width=len(header), header=header)
