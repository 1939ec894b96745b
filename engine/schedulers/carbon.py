"""Carbon-aware deferral: a job with slack before its deadline waits for the low-carbon hours of the grid.

``carbon-defer`` walks the queue in arrival order and starts every job it can place (best-fit: the fullest node that
fits; a job that does not fit is skipped, so later ones may start). A job with a deadline (``Job.deadline_s``) may be
held back first: its *latest safe start* is ``deadline_s - run_s``, with ``run_s`` = ``estimate_s`` / (the slowest
speed it may get: its slowest eligible GPU type and, for a gang of several GPUs, the worse communication factor of
a spread over nodes or racks). Among the starts from now to the latest safe start — now, each step of the run's
carbon series (``ClusterState.carbon_g_per_kwh``, the energy model's) and the latest safe start itself, over at most
one period of the series (it repeats) — the scheduler picks the one whose run would emit least: the lowest
``C(t + run_s) - C(t)``, ``C`` the integral of the intensity (:func:`~engine.sim.options.carbon_integral`), the
earliest among equals. When that is later than now, the job waits until then (the scheduler asks to be woken);
it is never held past its latest safe start.

Jobs without a deadline are never held back, and under a constant intensity no job is: every hour is alike, and
the scheduler starts jobs as best-fit in arrival order would. A held job still needs room when its hour comes: a
full cluster can make it miss the deadline all the same, and a shared GPU's co-location slowdown is not foreseen.
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from engine.schedulers.placement import best_fit
from engine.schedulers.registry import SchedulerSpec, register
from engine.sim.job import Job
from engine.sim.options import CarbonSeries, carbon_integral
from engine.sim.state import FRACTION_EPS, ClusterState, Decision, Start, Wake


def run_bound_s(state: ClusterState, job: Job) -> float:
    """The longest ``job`` may run once started, as far as a scheduler knows: ``estimate_s`` over its slowest
    eligible GPU type's speed and, for several GPUs, the worse of a spread over nodes or over racks."""
    cluster, names = state.cluster, state.layout.type_names
    eligible = state.eligible_types(job)
    speeds = [cluster.speed(job.job_type, names[t]) for t in range(len(names)) if eligible[t]]
    slowest = min(speeds) if speeds else 1.0
    if job.gpus > 1:
        slowest *= min(cluster.comm_factor(job.job_type, 2, 1), cluster.comm_factor(job.job_type, 2, 2))
    return job.estimate_s / slowest


def best_start_s(carbon: CarbonSeries, now_s: float, latest_s: float, run_s: float) -> float:
    """The start in ``[now_s, latest_s]`` whose run of ``run_s`` seconds emits least under ``carbon`` (the module
    docstring's candidates); ``now_s`` unless a later one is strictly lower."""
    if latest_s <= now_s:
        return now_s
    step = carbon.step_s
    first = math.floor(now_s / step) + 1
    last = min(math.floor(latest_s / step), first + len(carbon.g_per_kwh))
    starts = np.array([now_s, *(k * step for k in range(first, last + 1)), latest_s])
    starts = starts[starts <= latest_s]
    emitted = carbon_integral(carbon, starts + run_s) - carbon_integral(carbon, starts)
    best = int(np.argmin(emitted))
    return float(starts[best]) if emitted[best] < emitted[0] * (1.0 - 1e-9) else now_s


class CarbonDefer:
    """The scheduler ``carbon-defer`` (see the module docstring)."""

    name = "carbon-defer"

    def __init__(self) -> None:
        self._held_until: dict[int, float] = {}  # job -> the start it waits for
        self._wakes: set[float] = set()  # wake-ups asked for
        self._run_s: dict[int, float] = {}  # run_bound_s by job: it depends on the job and the cluster alone

    def reset(self, state: ClusterState) -> None:
        self._held_until = {}
        self._wakes = set()
        self._run_s = {}

    def _held(self, state: ClusterState, j: int, job: Job) -> float:
        """When job ``j`` should start, now or later (``state.now_s`` when it need not wait)."""
        now, carbon = state.now_s, state.carbon_g_per_kwh
        until = self._held_until.get(j, -math.inf)
        if until > now:
            return until
        if not isinstance(carbon, CarbonSeries) or not math.isfinite(job.deadline_s):
            return now
        run_s = self._run_s.get(j)
        if run_s is None:
            run_s = self._run_s[j] = run_bound_s(state, job)
        until = best_start_s(carbon, now, job.deadline_s - run_s, run_s)
        self._held_until[j] = until
        return until

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        now, jobs, shapes = state.now_s, state.jobs, state.job_shape
        wake_s = math.inf
        failed: set[int] = set()  # shapes that did not fit at this decision point
        for j in list(state.queue):
            if state.free_capacity <= FRACTION_EPS:
                break
            job = jobs[j]
            until = self._held(state, j, job)
            if until > now:
                wake_s = min(wake_s, until)
                continue
            if shapes[j] in failed:
                continue
            gpus = best_fit(state, job)
            if gpus is None:
                failed.add(shapes[j])
                continue
            self._held_until.pop(j, None)
            yield Start(j, gpus)
        if wake_s < math.inf and wake_s not in self._wakes:
            self._wakes.add(wake_s)
            yield Wake(wake_s)


register(
    SchedulerSpec(
        "carbon-defer",
        CarbonDefer,
        "Starts jobs in arrival order (skipping those that do not fit), but holds a job with slack before its "
        "deadline back until the hours of the grid's carbon series when its run would emit least, never past the "
        "latest start that still meets the deadline. Jobs without a deadline, and every job under a constant "
        "carbon intensity, start as soon as they fit.",
    )
)
