"""What the pages need of a scenario's failure model: its knobs as a person types them (durations with units, a
job-failure preset or rate) read into ``options.failures`` and the preemption checkpoint interval, and a line
saying what the model is."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from engine.sim.options import JOB_FAILURE_PRESETS, FailureModel, OptionsError, RunOptions
from engine.units import human_seconds, parse_duration

_H_S = 3600.0


def _duration_s(text: str, what: str) -> float | None:
    """Seconds of duration ``text`` (``None`` when empty), or an :class:`OptionsError` naming ``what``."""
    if not text.strip():
        return None
    try:
        return parse_duration(text.strip())
    except ValueError as exc:
        raise OptionsError(f"{what}: {exc}") from None


def _job_failures(text: str) -> str | float:
    """A job-failure preset's name, or a share as a number when ``text`` reads as one."""
    text = text.strip() or "none"
    try:
        return float(text)
    except ValueError:
        return text


def with_failures(
    options: RunOptions,
    base: FailureModel,
    *,
    mtbf: str,
    repair: str,
    checkpoint_every: str,
    checkpoint_cost: str,
    job_failures: str,
) -> RunOptions:
    """``options`` with the failure model ``base`` whose knobs are the texts typed: node MTBF and repair time
    (durations, ``"3692 h"``; an empty MTBF: nodes never fail), the checkpoint interval (empty: a job checkpoints
    when stopped) and cost, and the job failures (a name of :data:`JOB_FAILURE_PRESETS` or a share from 0 to 1).
    Bad input raises an :class:`OptionsError` in one line naming the knob."""
    mtbf_s = _duration_s(mtbf, "node MTBF")
    repair_s = _duration_s(repair, "repair time")
    failures = replace(
        base,
        mtbf_h=None if mtbf_s is None else mtbf_s / _H_S,
        repair_h=base.repair_h if repair_s is None else repair_s / _H_S,
    )
    failures = failures.with_job_failures(_job_failures(job_failures), "job failures")
    cost_s = _duration_s(checkpoint_cost, "checkpoint cost") or 0.0
    failures = replace(failures, checkpoint_cost_s=cost_s)
    preemption = replace(options.preemption, checkpoint_interval_s=_duration_s(checkpoint_every, "checkpoint interval"))
    return RunOptions.from_dict(
        {**options.to_dict(), "preemption": preemption.to_dict(), "failures": failures.to_dict()}
    )


def job_failures_text(model: FailureModel) -> str:
    """The job-failure knob's text for ``model``: a preset's name when its rate is one, else the rate."""
    return next(
        (n for n, rate in JOB_FAILURE_PRESETS.items() if rate == model.job_failure_rate), f"{model.job_failure_rate:g}"
    )


def describe(options: RunOptions) -> str:
    """One line saying what fails in a run of ``options`` and what checkpoints cost."""
    model = options.failures
    if not model.active:
        return "Nothing fails: nodes stay up and jobs never crash."
    parts = []
    if model.mtbf_h is not None:
        per = "GPU" if model.mtbf_per == "gpu" else "node"
        parts.append(
            f"each {per} fails every {human_seconds(model.mtbf_h * _H_S)} on average and is repaired in "
            f"{human_seconds(model.repair_h * _H_S)}"
            + (
                f" ({model.manual_repair_share:.0%} of repairs then take {human_seconds(model.manual_repair_h * _H_S)})"
                if model.manual_repair_share
                else ""
            )
        )
    if model.jobs_fail:
        parts.append(f"{model.job_failure_rate:.1%} of job runs crash by themselves")
    interval = options.preemption.checkpoint_interval_s
    parts.append(
        "jobs checkpoint when stopped"
        if interval is None
        else f"jobs checkpoint every {human_seconds(interval)}, each costing {human_seconds(model.checkpoint_cost_s)}"
    )
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


#: What the schedulers of a sweep's runs without failures are called beside those with them.
NO_FAILURES = " · no failures"


def without_failures(options: RunOptions) -> RunOptions:
    """``options`` with nodes that never fail and jobs that never crash (checkpoints cost what they cost)."""
    return replace(options, failures=replace(options.failures, mtbf_h=None, job_failure_rate=0.0))


#: The sweep axis of node MTBFs (hours) Explore offers: a run option path (:mod:`engine.analysis.sweep`).
MTBF_AXIS = "failures.mtbf_h"


def by_mtbf(frame: pd.DataFrame) -> pd.DataFrame:
    """A sweep frame over node MTBFs (:data:`MTBF_AXIS`) with each scheduler named by its MTBF too (``fifo · MTBF
    100 h``), so that every curve, heatmap and row is one scheduler at one MTBF; the column stays."""
    named = [f"{s} · MTBF {v:g} h" for s, v in zip(frame["scheduler"], frame[MTBF_AXIS])]
    out = frame.assign(scheduler=named)
    out.attrs = frame.attrs
    return out


def beside_no_failures(with_failures: pd.DataFrame, without: pd.DataFrame) -> pd.DataFrame:
    """One sweep frame of two runs of a grid (:func:`~engine.analysis.sweep.run_sweep`), with the scenario's
    failures and :func:`without_failures`: the second's schedulers renamed ``NAME`` + :data:`NO_FAILURES`, so that
    every curve, heatmap and row shows the two side by side; ``attrs`` add up (cells, completed, failed, wall)."""
    off = without.assign(scheduler=without["scheduler"] + NO_FAILURES)
    frame = pd.concat([with_failures, off], ignore_index=True)
    meta = dict(with_failures.attrs["meta"])
    for key in ("cells", "completed", "failed", "wall_s"):
        meta[key] += without.attrs["meta"][key]
    frame.attrs = {"failures": with_failures.attrs["failures"] + without.attrs["failures"], "meta": meta}
    return frame
