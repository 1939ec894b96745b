"""Gavel simulator traces (OSDI'20, MIT licence): tab-separated, no header, 10 fields a line.

Fields: ``job_type`` (model and batch size, e.g. ``ResNet-50 (batch size 64)``), ``command``,
``working_directory``, ``num_steps_arg``, ``needs_data_dir``, ``total_steps``, ``scale_factor`` (GPUs),
``priority_weight``, ``SLO`` (-1 = none), ``arrival_time`` (s).

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
``training``; user ``user0``; name = the ``job_type`` text.
"""

from __future__ import annotations

import math

from engine.traces.base import BadField, Columns, ReadContext, iter_lines, read_rows, to_float, to_int, to_time

FIELDS = ("job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir", "total_steps",
          "scale_factor", "priority_weight", "SLO", "arrival_time")

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


COLUMN_NAMES = Columns(gpus="scale_factor", duration_s="total_steps")


def model_of(job_type: str) -> str:
    """``"ResNet-50 (batch size 64)"`` -> ``"ResNet-50"``."""
    return job_type.split(" (batch size", 1)[0].strip()


def read(ctx: ReadContext) -> None:
    """Read a Gavel TSV into ``ctx``."""

    def row(f: list[str], line: int) -> None:
        steps = to_float(f[5], "total_steps")
        gpus = to_int(f[6], "scale_factor")
        weight = to_float(f[7], "priority_weight")
        submit = to_time(f[9], "arrival_time")
        if abs(weight) > 1e9:
            raise BadField("priority_weight", "a weight within +-1e9", f[7])
        throughput = THROUGHPUT_STEPS_PER_S.get(model_of(f[0]))
        if throughput is None:
            ctx.drop("unknown_model")
            return
        ctx.keep(submit if submit >= 0 else math.nan, steps / (throughput * max(gpus, 1)), gpus=gpus,
                 priority=round(weight), job_type="training", name=f[0].strip(), columns=COLUMN_NAMES)

    # Plain tab splitting, no CSV quoting: commands may contain quote characters.
    rows = ((line, text.split("\t")) for line, text in iter_lines(ctx.path) if text.strip())
    read_rows(ctx, rows, row, width=len(FIELDS), header=list(FIELDS))
