"""The objective a learned scheduler is trained for, computed from a finished run's :class:`~engine.Result`.

The environment pays rewards whose sum over an episode equals ``-objective(result, weights)`` exactly (up to
floating-point rounding; ``tests/rl/test_reward.py`` checks it). The objective is a weighted sum of costs,
each over the jobs that ended, completed or failed (unschedulable jobs never ran and are left out):

Failed jobs (issue 34: a job that crashed with no retry left, ``Job.failed`` in a trace) count like completed
ones. Their end is where the scheduler's part ended: the wait it imposed on them and the GPU time they held are
as real as a completed job's, and a scheduler must not gain from a job failing (leaving them out would drop
their waits from the mean). It also keeps the episode's sum equal to the objective: the environment's dense
terms charge every schedulable job, whatever its end. Under no failure model no job fails, so every objective
and the shipped agents' evaluations are what they were.

* ``wait``: mean wait, ``mean(end_s - submit_s - run_s) / wait_scale_s``: all time spent queued, like
  ``engine.analysis.metrics`` (for a preemptive heuristic, time back in the queue counts too; the environment never
  preempts, so for an agent it is ``first_start_s - submit_s``). Paid densely: after every step the
  environment charges the wait that accrued since the previous step (jobs still queued wait on).
* ``jct``: mean job completion time, ``mean(end_s - submit_s) / wait_scale_s``; paid densely the same way
  (every job in the system, queued or running, accrues time), so a placement on faster GPUs pays off as
  soon as the job runs faster.
* ``bounded_slowdown``: mean of ``max(1, (end_s - submit_s) / max(run_s, bsld_tau_s))``; paid at the end.
* ``utilization_band``: time-weighted mean, over ``[0, makespan]``, of how far the busy share of GPUs is
  outside the target band ``[band_low, band_high]`` (0 inside the band); paid at the end.
* ``fairness``: Gini coefficient (:func:`engine.analysis.metrics.gini`) of the users' mean waits (0 = equal, towards 1 = one user bears all the
  waiting); paid at the end.
* ``comm``: communication overhead, GPU-hours per job lost to placements spread over nodes or racks
  (``Result.comm_overhead_gpu_s``); paid at the end.
* ``deadline``: the share of the jobs with a deadline that missed it, ``1 - deadline_ratio`` of
  :mod:`engine.analysis.deadlines` (over every job with a deadline: one declined, never run or ended failed
  counts as missed; 0 when no job has a deadline). The environment pays a job's share at the first step after
  its deadline passed with the job not completed by then (still queued or running, or ended late), and the rest
  (a job that ended failed before its deadline, say) at the end.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping

import numpy as np

from engine.analysis.deadlines import deadline_met
from engine.analysis.metrics import gini
from engine.errors import EngineError, reject_unknown_keys
from engine.sim.simulator import COMPLETED, FAILED, Result


@dataclass(frozen=True)
class RewardWeights:
    """Weights of the objective's terms (see the module docstring); 0 switches a term off.

    Attributes:
        wait: weight of the mean wait, measured in units of ``wait_scale_s``.
        jct: weight of the mean job completion time, in units of ``wait_scale_s``.
        bounded_slowdown: weight of the mean bounded slowdown.
        utilization_band: weight of the mean distance of utilisation from the target band.
        fairness: weight of the Gini coefficient of per-user mean waits.
        comm: weight of the communication overhead in GPU-hours per job.
        deadline: weight of the share of jobs with a deadline that missed it.
        wait_scale_s: seconds that count as one unit of wait (and of JCT).
        bsld_tau_s: run time floor of the bounded slowdown, seconds.
        band_low, band_high: the target utilisation band, as shares of the cluster's GPUs.
    """

    wait: float = 1.0
    jct: float = 0.0
    bounded_slowdown: float = 0.0
    utilization_band: float = 0.0
    fairness: float = 0.0
    comm: float = 0.0
    deadline: float = 0.0
    wait_scale_s: float = 3600.0
    bsld_tau_s: float = 10.0
    band_low: float = 0.6
    band_high: float = 0.8

    def __post_init__(self) -> None:
        for k, v in asdict(self).items():
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise EngineError(f"reward.{k} must be a number >= 0, got {v!r}")
        if self.wait_scale_s <= 0 or self.bsld_tau_s <= 0:
            raise EngineError("reward.wait_scale_s and reward.bsld_tau_s must be > 0")
        if not self.band_low <= self.band_high <= 1:
            raise EngineError(f"reward band [{self.band_low}, {self.band_high}] must satisfy low <= high <= 1")

    def to_dict(self) -> dict[str, float]:
        """Every weight; ``deadline`` only when set, so configs and cards written before it stay as they were."""
        out = asdict(self)
        if not self.deadline:
            del out["deadline"]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RewardWeights:
        valid = set(cls.__dataclass_fields__)
        reject_unknown_keys(data, valid, "reward")
        return cls(**data)


#: The objective's terms, in the order cards show them (:func:`objective_terms` returns each).
TERMS = ("wait", "jct", "bounded_slowdown", "utilization_band", "fairness", "comm", "deadline")


def objective_terms(result: Result, weights: RewardWeights = RewardWeights()) -> dict[str, float]:
    """The unweighted terms of the objective for one run (``wait`` in seconds); ``weights`` supplies only the
    slowdown floor and the utilisation band."""
    done = (result.status == COMPLETED) | (result.status == FAILED)  # ended (module docstring)
    missed = {"deadline": missed_deadline_share(result)}
    if not done.any():
        return dict.fromkeys(TERMS, 0.0) | missed
    submit = np.array([j.submit_s for j in result.jobs])[done]
    wait = np.maximum(result.end_s[done] - submit - result.run_s[done], 0.0)
    return {
        "wait": float(wait.mean()),
        "jct": float((result.end_s[done] - submit).mean()),
        "bounded_slowdown": _bsld(result, done, submit, weights.bsld_tau_s),
        "utilization_band": _band_distance(result, done, weights.band_low, weights.band_high),
        "fairness": gini(_user_means(result, done, wait)),
        "comm": float(result.comm_overhead_gpu_s[done].sum() / 3600.0 / done.sum()),
    } | missed


def objective(result: Result, weights: RewardWeights) -> float:
    """The weighted cost of a run (lower is better); the episode return is its negative."""
    return weighted(objective_terms(result, weights), weights)


def weighted(t: Mapping[str, float], weights: RewardWeights) -> float:
    """The objective from its unweighted terms (as :func:`objective_terms` returns them)."""
    return (
        (weights.wait * t["wait"] + weights.jct * t["jct"]) / weights.wait_scale_s
        + weights.bounded_slowdown * t["bounded_slowdown"]
        + weights.utilization_band * t["utilization_band"]
        + weights.fairness * t["fairness"]
        + weights.comm * t["comm"]
        + (weights.deadline * t["deadline"] if weights.deadline else 0.0)  # term tables written before it lack it
    )


def missed_deadline_share(result: Result) -> float:
    """``1 - deadline_ratio`` (:mod:`engine.analysis.deadlines`): the share of the jobs with a deadline that did
    not complete by it; 0 when no job has one."""
    timed = sum(j.has_deadline for j in result.jobs)
    return 1.0 - float(deadline_met(result).sum()) / timed if timed else 0.0


def terminal_cost(result: Result, weights: RewardWeights) -> float:
    """The part of the objective paid at the end of an episode (everything but the dense wait and JCT terms)."""
    t = objective_terms(result, weights)
    return objective(result, weights) - (weights.wait * t["wait"] + weights.jct * t["jct"]) / weights.wait_scale_s


def _bsld(result: Result, done: np.ndarray, submit: np.ndarray, tau: float) -> float:
    jct = result.end_s[done] - submit
    return float(np.maximum(1.0, jct / np.maximum(result.run_s[done], tau)).mean())


def _band_distance(result: Result, done: np.ndarray, low: float, high: float) -> float:
    makespan = float(np.nanmax(result.end_s[done]))
    t, busy = result.series_t, result.series_busy_gpus / result.cluster.n_gpus
    if makespan <= 0 or t.size == 0:
        return 0.0
    # The busy share is a step function: series value i holds from t[i] to t[i + 1] (the last one to makespan).
    edges = np.clip(np.append(t, makespan), 0.0, makespan)
    dist = np.maximum(low - busy, 0.0) + np.maximum(busy - high, 0.0)
    return float((dist * np.diff(edges)).sum() / makespan)


def _user_means(result: Result, done: np.ndarray, wait: np.ndarray) -> np.ndarray:
    users = np.array([j.user for j in result.jobs], dtype=object)[done]
    _, inv = np.unique(users.astype(str), return_inverse=True)
    return np.bincount(inv, weights=wait) / np.bincount(inv)
