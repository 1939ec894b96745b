"""Offered load: the GPU-time a workload asks for over the GPU-time the cluster has while its jobs arrive.

The one place this arithmetic lives: the trace report and the workload page and its chart read it from here, and
the load an evaluation's trace block is scaled to is :func:`offered_load_of` with ``until_last_arrival``. A job
asks for ``gpus x gpu_fraction x duration_s`` GPU-seconds at reference speed.

* :func:`gpu_hours`: the work the jobs ask for.
* :func:`load_ratio`: ``gpu_s / (n_gpus x span_s)``, with the rules for an empty workload and a zero span.
* :func:`offered_load` (jobs) and :func:`offered_load_of` (arrays): the scalar, over the span from the first to
  the last arrival; optionally with arrivals scaled and each job counted only up to the last arrival.
* :func:`offered_load_series`: the load per submit-time bin, for a chart.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.sim.job import Job


def load_ratio(gpu_s: float, n_gpus: int, span_s: float) -> float:
    """``gpu_s / (n_gpus x span_s)``: 1.0 means the work would keep every GPU busy for the whole span.

    0.0 when there is no work (``gpu_s == 0``); ``inf`` when there is work and the span is 0 (every job arrives at
    once). Raises ``ValueError`` when ``n_gpus < 1``.
    """
    if n_gpus < 1:
        raise ValueError(f"n_gpus must be >= 1, got {n_gpus}")
    if gpu_s == 0:
        return 0.0
    return float("inf") if span_s <= 0 else gpu_s / (n_gpus * span_s)


def demand_arrays(jobs: Sequence[Job]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(submit_s, gpu demand = gpus x gpu_fraction, duration_s)`` of ``jobs`` as float arrays."""
    submit_s = np.array([j.submit_s for j in jobs], dtype=float)
    gpus = np.array([j.gpus for j in jobs], dtype=np.int64) * np.array([j.gpu_fraction for j in jobs], dtype=float)
    return submit_s, gpus, np.array([j.duration_s for j in jobs], dtype=float)


def gpu_hours(jobs: Sequence[Job]) -> float:
    """GPU-hours ``jobs`` ask for at reference speed: ``sum(gpus x gpu_fraction x duration_s) / 3600``."""
    _, gpu_demand, duration_s = demand_arrays(jobs)
    return float((gpu_demand * duration_s).sum()) / 3600.0


def offered_load(
    jobs: Sequence[Job], n_gpus: int, *, arrival_scale: float = 1.0, until_last_arrival: bool = False
) -> float:
    """The offered load of ``jobs`` on ``n_gpus`` GPUs: :func:`offered_load_of` of their :func:`demand_arrays`."""
    return offered_load_of(
        *demand_arrays(jobs), n_gpus, arrival_scale=arrival_scale, until_last_arrival=until_last_arrival
    )


def offered_load_of(
    submit_s: np.ndarray,
    gpu_demand: np.ndarray,
    duration_s: np.ndarray,
    n_gpus: int,
    *,
    arrival_scale: float = 1.0,
    until_last_arrival: bool = False,
) -> float:
    """GPU-seconds asked for over ``n_gpus x span``, the span running from the first to the last arrival.

    With ``t_i = submit_s[i] - min(submit_s)`` and ``T = max(t_i)``, and every arrival time multiplied by
    ``arrival_scale`` (``a``; > 1 stretches the arrivals, so the load falls):

    * by default: ``sum(gpu_demand_i x duration_i) / (n_gpus x a x T)``, the generator's "load" (arrival rate x
      mean GPU-seconds per job / GPUs), measured;
    * with ``until_last_arrival``: ``sum(gpu_demand_i x min(duration_i, a x (T - t_i))) / (n_gpus x a x T)``: the
      GPU-time the jobs would use before the last arrival had each started on arrival, so that one job running
      for weeks does not stand for load arriving long after the others.

    The rules of :func:`load_ratio` apply (0 without work, ``inf`` for a zero span).
    """
    if len(submit_s) == 0:
        return load_ratio(0.0, n_gpus, 0.0)
    since = np.asarray(submit_s, dtype=float) - np.min(submit_s)
    span_s = float(since.max())
    run_s = np.asarray(duration_s, dtype=float)
    if until_last_arrival:
        run_s = np.minimum(run_s, arrival_scale * (span_s - since))
    return load_ratio(float((gpu_demand * run_s).sum()), n_gpus, arrival_scale * span_s)


def offered_load_series(jobs: Sequence[Job], n_gpus: int, bins: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Offered load per submit-time bin: GPU-seconds submitted in the bin / (``n_gpus`` x bin length), over
    ``bins`` equal bins from 0 to the last submit (at least 1 s). Returns ``(bin centres in seconds, load)``."""
    if n_gpus < 1:
        raise ValueError(f"n_gpus must be >= 1, got {n_gpus}")
    submit_s, gpu_demand, duration_s = demand_arrays(jobs)
    span_s = max(float(submit_s.max()) if len(submit_s) else 0.0, 1.0)
    gpu_s, edges = np.histogram(submit_s, bins=bins, range=(0.0, span_s), weights=gpu_demand * duration_s)
    return (edges[:-1] + edges[1:]) / 2, gpu_s / (n_gpus * np.diff(edges))
