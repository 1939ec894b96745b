"""A scenario's run and its results as JSON: what ``python -m engine simulate --scenario FILE --json OUT`` writes
and what the HTTP API answers for the same scenario (both call :func:`run_scenario` and :func:`metrics_json`).

* :func:`run_scenario`: every scheduler of a scenario on its cluster and jobs, with one progress callback.
* :func:`metrics_json`: ``{scheduler: {metric: value}}``, the metrics table (the CLI's ``--json``).
* :func:`jobs_json`: ``{scheduler: [one record per job]}`` (:func:`~engine.analysis.metrics.job_frame`'s rows).
* :func:`timeline_json`: ``{scheduler: {t_s, queue, running, busy_gpus}}``, the run's state over time.
* :func:`scenario_results`: the three at once, from a scenario; :func:`results_as_json` as JSON texts (what a
  stored run keeps).
* :func:`sweep_json`: a sweep's frame as ``{"rows": [...], "failures": [...], "meta": {...}}`` (the rows of
  ``sweep --out``'s CSV, and the failures and facts of its ``--json``).

Every value is strict JSON: a number that is not one (NaN: a wait of a job that never ran) is ``null``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from engine.analysis.energy import sets_energy
from engine.analysis.evaluate import run_scheduler
from engine.analysis.metrics import Summary, job_columns, summarize
from engine.analysis.scenario import Scenario, ScenarioError
from engine.schedulers import make_scheduler
from engine.sim.cluster import Cluster
from engine.sim.job import Job
from engine.sim.options import EnergyModel
from engine.sim.simulator import Result


@dataclass(frozen=True)
class ScenarioRun:
    """A scenario's cluster and jobs as built, and each scheduler's :class:`Result`, in the scenario's order."""

    cluster: Cluster
    jobs: tuple[Job, ...]
    results: Mapping[str, Result]


def run_scenario(
    scenario: Scenario,
    trace_bytes: bytes | None = None,
    *,
    trusted: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
) -> ScenarioRun:
    """Simulate every scheduler of ``scenario`` on its jobs with its seed and run options.

    Every scheduler name is checked before any run starts. ``trace_bytes`` are an uploaded trace's bytes;
    ``trusted`` lets the cluster be a file (the command line). ``on_progress(done, total)`` counts finished
    jobs over all the schedulers' runs (``total`` = jobs x schedulers)."""
    if not scenario.schedulers:
        raise ScenarioError("the scenario names no scheduler")
    for name in scenario.schedulers:
        make_scheduler(name)
    cluster = scenario.build_cluster(trusted=trusted)
    jobs = scenario.build_jobs(cluster, trace_bytes)
    total = len(jobs) * len(scenario.schedulers)
    results = {}
    for i, name in enumerate(scenario.schedulers):
        step = None if on_progress is None else _offset(on_progress, i * len(jobs), total)
        results[name] = run_scheduler(name, cluster, jobs, scenario.seed, scenario.options, step)
    return ScenarioRun(cluster, jobs, results)


def _offset(on_progress: Callable[[int, int], None], before: int, total: int) -> Callable[[int, int], None]:
    return lambda done, _n: on_progress(before + done, total)


def metrics_json(
    results: Mapping[str, Result | Summary], energy: EnergyModel | None = None
) -> dict[str, dict[str, Any]]:
    """``{scheduler: {metric: value}}``: the metrics table, as ``simulate --scenario --json`` writes it (a
    :class:`Result` is summarized, with the energy metrics under ``energy``; a :class:`Summary` taken as it is)."""
    return {
        name: (r if isinstance(r, Summary) else summarize(r, energy=energy)).to_dict() for name, r in results.items()
    }


def jobs_json(results: Mapping[str, Result]) -> dict[str, list[dict[str, Any]]]:
    """``{scheduler: [{column: value}, ...]}``: one record per job (the columns of ``job_frame``, built without
    pandas: :func:`~engine.analysis.metrics.job_columns`)."""
    out = {}
    for name, r in results.items():
        columns = job_columns(r)
        out[name] = [dict(zip(columns, row)) for row in zip(*map(_plain_column, columns.values()))]
    return out


def timeline_json(results: Mapping[str, Result]) -> dict[str, dict[str, list]]:
    """``{scheduler: {"t_s": [...], "queue": [...], "running": [...], "busy_gpus": [...]}}``: queued and running
    jobs and busy GPUs from each time on (a step series: a value holds until the next time)."""
    return {
        name: {
            "t_s": [float(t) for t in r.series_t],
            "queue": [int(q) for q in r.series_queue],
            "running": [int(n) for n in r.series_running],
            "busy_gpus": [float(b) for b in r.series_busy_gpus],
        }
        for name, r in results.items()
    }


def scenario_results(
    scenario: Scenario, trace_bytes: bytes | None = None, *, on_progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """``{"metrics": ..., "jobs": ..., "timeline": ...}`` of an untrusted scenario (see :func:`run_scenario`)."""
    results = run_scenario(scenario, trace_bytes, on_progress=on_progress).results
    energy = scenario.options.energy if sets_energy(scenario.options) else None
    return {"metrics": metrics_json(results, energy), "jobs": jobs_json(results), "timeline": timeline_json(results)}


def results_as_json(results: Mapping[str, Any]) -> dict[str, str]:
    """Each part of :func:`scenario_results` as compact strict JSON text (what a run store keeps)."""
    return {part: json.dumps(value, allow_nan=False, separators=(",", ":")) for part, value in results.items()}


def sweep_json(frame) -> dict[str, Any]:
    """A sweep's frame (:func:`~engine.analysis.sweep.run_sweep`): ``rows`` (one object per completed cell, its
    columns in the frame's order), ``failures`` and ``meta`` (its ``attrs``)."""
    return {
        "rows": [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict("records")],
        "failures": frame.attrs["failures"],
        "meta": frame.attrs["meta"],
    }


def _plain_column(values: Any) -> list[Any]:
    """A column of :func:`~engine.analysis.metrics.job_columns` as JSON values (as :func:`_plain` makes each)."""
    if isinstance(values, np.ndarray):
        items = values.tolist()
        return [v if math.isfinite(v) else None for v in items] if values.dtype.kind == "f" else items
    return [_plain(v) for v in values]


def _plain(value: Any) -> Any:
    """A pandas cell as a JSON value: NumPy scalars as Python numbers, NaN as ``None``."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
