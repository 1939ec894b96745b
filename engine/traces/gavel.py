"""Gavel simulator traces (OSDI'20, MIT licence): tab-separated, no header, in one of two layouts.

Gavel's current traces have 10 fields a line: ``job_type`` (model and batch size, e.g.
``ResNet-50 (batch size 64)``), ``command``, ``working_directory``, ``num_steps_arg``, ``needs_data_dir``,
``total_steps``, ``scale_factor`` (GPUs), ``priority_weight``, ``SLO`` (-1 = none), ``arrival_time`` (s).
Its older per-virtual-cluster Philly traces have 7: ``job_type``, ``command``, ``num_steps_arg``,
``scale_factor``, ``total_steps``, ``arrival_time``, ``priority_weight`` (the order Gavel's converter of
Microsoft's Philly log writes). The first line's width picks the layout; every line must have that width.

Durations are not in the file: duration = ``total_steps / (throughput x scale_factor)``, with the
per-model throughput (steps per second on one V100, the reference GPU, running alone) from Gavel's own
``scheduler/combined_throughputs.json`` (entry ``v100 -> model -> "null"``, rounded to 4 significant
digits) and linear scaling over GPUs assumed (Gavel measures multi-GPU throughputs separately; this
loader does not have them). :data:`THROUGHPUT_STEPS_PER_S`:

=================  ===============
model              steps/s on V100
=================  ===============
ResNet-18          46.82
ResNet-50          1.377
Transformer        8.742
LM                 96.25
Recommendation     0.4302
CycleGAN           3.676
A3C                7.238
=================  ===============

The model is the ``job_type`` text before `` (batch size``. A model not in the table drops the row as
``unknown_model``. Mapping: GPUs = ``scale_factor``; priority = ``priority_weight`` rounded; job type
``training``; user ``user0``; name = the ``job_type`` text; deadline (10-field layout) = arrival + ``SLO`` x
duration, none where ``SLO`` is negative (Gavel writes -1), the way Gavel's scheduler reads the column.
"""

from __future__ import annotations

import itertools
import math

from engine.traces.base import BadField, Columns, ReadContext, iter_lines, read_rows, to_float, to_int, to_time

FIELDS = (
    "job_type",
    "command",
    "working_directory",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "scale_factor",
    "priority_weight",
    "SLO",
    "arrival_time",
)
#: The older 7-field layout (Gavel's per-virtual-cluster Philly traces).
OLD_FIELDS = ("job_type", "command", "num_steps_arg", "scale_factor", "total_steps", "arrival_time", "priority_weight")
#: Field count -> the layout's field names.
LAYOUTS: dict[int, tuple[str, ...]] = {len(FIELDS): FIELDS, len(OLD_FIELDS): OLD_FIELDS}

#: Steps per second of each model on one V100 (Gavel's combined_throughputs.json, "v100", isolated).
THROUGHPUT_STEPS_PER_S: dict[str, float] = {
    "ResNet-18": 46.82,
    "ResNet-50": 1.377,
    "Transformer": 8.742,
    "LM": 96.25,
    "Recommendation": 0.4302,
    "CycleGAN": 3.676,
    "A3C": 7.238,
}


COLUMN_NAMES = Columns(gpus="scale_factor", duration_s="total_steps", deadline_s="SLO")


def model_of(job_type: str) -> str:
    """``"ResNet-50 (batch size 64)"`` -> ``"ResNet-50"``."""
    return job_type.split(" (batch size", 1)[0].strip()


def layout_of(width: int) -> tuple[str, ...] | None:
    """The field names of the Gavel layout with ``width`` tab-separated fields, or ``None``."""
    return LAYOUTS.get(width)


def read(ctx: ReadContext) -> None:
    """Read a Gavel TSV (either layout, picked by the first line's width) into ``ctx``."""
    # Plain tab splitting, no CSV quoting: commands may contain quote characters.
    rows = ((line, text.split("\t")) for line, text in iter_lines(ctx.path) if text.strip())
    first = next(rows, None)
    if first is None:
        return
    names = layout_of(len(first[1]))
    if names is None:
        raise ctx.error(
            f"a Gavel trace line has {len(FIELDS)} tab-separated fields (or {len(OLD_FIELDS)} in "
            f"Gavel's older Philly traces), but this one has {len(first[1])}",
            line=first[0],
        )
    at = {name: names.index(name) for name in names}
    i_type, i_steps, i_gpus = at["job_type"], at["total_steps"], at["scale_factor"]
    i_weight, i_arrival, i_slo = at["priority_weight"], at["arrival_time"], at.get("SLO")

    def row(f: list[str], line: int) -> None:
        steps = to_float(f[i_steps], "total_steps")
        gpus = to_int(f[i_gpus], "scale_factor")
        weight = to_float(f[i_weight], "priority_weight")
        submit = to_time(f[i_arrival], "arrival_time")
        if abs(weight) > 1e9:
            raise BadField("priority_weight", "a weight within +-1e9", f[i_weight])
        throughput = THROUGHPUT_STEPS_PER_S.get(model_of(f[i_type]))
        if throughput is None:
            ctx.drop("unknown_model")
            return
        duration = steps / (throughput * max(gpus, 1))
        slo = math.nan if i_slo is None else to_float(f[i_slo], "SLO")
        submit = submit if submit >= 0 else math.nan
        ctx.keep(
            submit,
            duration,
            gpus=gpus,
            priority=round(weight),
            job_type="training",
            name=f[i_type].strip(),
            deadline_s=submit + slo * duration if slo >= 0 else math.nan,
            columns=COLUMN_NAMES,
        )

    read_rows(
        ctx, itertools.chain([first], rows), row, width=len(names), header=list(names), like="as on the first line"
    )
