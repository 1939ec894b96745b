"""The failures of one run: when each node breaks and is repaired, and where each job's runs crash.

Everything here is drawn from the run's seed alone, never from what the scheduler does, so every scheduler meets
the same failures: node ``n``'s times come from a generator seeded by ``(seed, n)`` and are drawn in one fixed
order (whether it is a lemon, then an up time, a repair time, an up time, ...) whatever happens in the run; each
job's crashes come from one generator of the seed, a row of draws per job. The model is the run's
:class:`~engine.sim.options.FailureModel`.

:class:`FailureCalendar` holds them; the simulation (:mod:`engine.sim.simulator`) reads :attr:`~FailureCalendar.next_s`
between its other events, takes the node events due with :meth:`~FailureCalendar.pop` (a failed node's jobs stop
through its preemption path, its GPUs are held by :meth:`engine.sim.occupancy.Occupancy.take_down` until the repair),
and asks :meth:`~FailureCalendar.fail_left_s` where a job's run will crash. A calendar of a model that fails nothing
draws nothing and never has an event (its ``next_s`` is infinite).

Compiled, like the other hot modules (``engine/_native.py``); its idioms are explained once in ARCHITECTURE.md.
"""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np

from engine.sim.agenda import Agenda
from engine.sim.cluster import Layout
from engine.sim.options import FailureModel
from engine.sim.state import RunningJob

# Streams of one seed: node draws and job draws never share a generator with each other or with a scheduler's.
_NODE_STREAM: Final = 0x6E6F6465  # "node"
_JOB_STREAM: Final = 0x6A6F6273  # "jobs"
_SEED_MASK: Final = (1 << 64) - 1  # a seed sequence takes non-negative entropy
_H: Final = 3600.0


class FailureCalendar:
    """Node failures and repairs, and job crashes, of one run.

    Args:
        model: what fails.
        layout: the cluster's flat arrays.
        seed: the run's seed.
        work_s: each job's work (reference seconds, its checkpoints' cost included).

    Attributes:
        next_s: time of the next node failure or repair (``inf`` when none is due).
        down: whether each node is down now (a node :meth:`pop` hands back has just changed state).
        fail_left_s: per job, where its current run crashes: the work it will still have left then (> 0), or 0
            when it does not crash (the simulation reads this list as its own).
        interruptions: per job, times a node failure stopped it; job_failures: per job, times its run crashed.
        outage_node, outage_start_s, outage_end_s: one entry per outage so far, in the order they began
            (``outage_end_s`` is NaN until the repair).
    """

    def __init__(self, model: FailureModel, layout: Layout, seed: int, work_s: list[float]) -> None:
        self.model = model
        node_gpus: list[int] = layout.node_gpus.tolist()
        n_nodes, n_jobs = len(node_gpus), len(work_s)
        self._node_gpus = node_gpus
        self._node_first: list[int] = layout.node_first_gpu.tolist()
        self.interruptions = [0] * n_jobs
        self.job_failures = [0] * n_jobs
        self.down = [False] * n_nodes
        self.outage_node: list[int] = []
        self.outage_start_s: list[float] = []
        self.outage_end_s: list[float] = []
        self._open: dict[int, int] = {}  # node -> its outage now under repair
        self._agenda = Agenda()
        self._rngs: list[Any] = []
        self._up_scale_s: list[float] = []  # per node, the scale of its up-time law
        key = seed & _SEED_MASK
        if model.mtbf_h is not None:
            shape = model.weibull_shape
            mean_s = model.mtbf_h * _H
            for n in range(n_nodes):
                rng = np.random.default_rng([key, _NODE_STREAM, n])
                node_mean_s = mean_s / node_gpus[n] if model.mtbf_per == "gpu" else mean_s
                if rng.random() < model.lemon_share:  # drawn for every node: the draws stay aligned
                    node_mean_s /= model.lemon_factor
                self._rngs.append(rng)
                self._up_scale_s.append(node_mean_s / math.gamma(1.0 + 1.0 / shape))  # the law's mean: node_mean_s
                self._agenda.push(self._up_time_s(n), n)
        self.next_s = self._agenda.earliest()
        # Row j: one draw per run of job j (its first and each retry): whether it crashes, and where.
        self._crashes: list[list[bool]] = []
        self._crash_at: list[list[float]] = []
        self.fail_left_s = [0.0] * n_jobs
        if model.job_failure_rate > 0:
            rng = np.random.default_rng([key, _JOB_STREAM])
            tries = model.job_retries + 1
            self._crashes = (rng.random((n_jobs, tries)) < model.job_failure_rate).tolist()
            self._crash_at = (rng.random((n_jobs, tries)) ** model.job_failure_skew).tolist()
            self.fail_left_s = [self._fail_left_s(j, 0, w) for j, w in enumerate(work_s)]

    def _up_time_s(self, n: int) -> float:
        return float(self._up_scale_s[n] * self._rngs[n].weibull(self.model.weibull_shape))

    def _repair_time_s(self, n: int) -> float:
        model, rng = self.model, self._rngs[n]
        repair_h = model.repair_h if model.repair_law == "fixed" else float(rng.exponential(model.repair_h))
        if rng.random() < model.manual_repair_share:  # the automatic repair did not work: a manual one follows
            repair_h += model.manual_repair_h
        return repair_h * _H

    def pop(self, now_s: float) -> list[int]:
        """The nodes that fail or come back at ``now_s`` (``next_s``), in node order of their events; each one's
        ``down`` says which. Schedules each one's next event."""
        nodes = self._agenda.pop()
        for n in nodes:
            if self.down[n]:
                self.down[n] = False
                self.outage_end_s[self._open.pop(n)] = now_s
                self._agenda.push(now_s + self._up_time_s(n), n)
            else:
                self.down[n] = True
                self._open[n] = len(self.outage_node)
                self.outage_node.append(n)
                self.outage_start_s.append(now_s)
                self.outage_end_s.append(math.nan)
                self._agenda.push(now_s + self._repair_time_s(n), n)
        self.next_s = self._agenda.earliest()
        return nodes

    def interrupted(self, node: int, running: dict[int, RunningJob]) -> list[int]:
        """The running jobs with a GPU on ``node``, just failed, in the order they started (each counts an
        interruption): the simulation stops them."""
        first = self._node_first[node]
        end = first + self._node_gpus[node]
        jobs = [j for j, r in running.items() if any(first <= g < end for g in r.gpu_ids)]
        for j in jobs:
            self.interruptions[j] = self.interruptions[j] + 1
        return jobs

    def crashed(self, j: int) -> bool:
        """Count a crash of job ``j``'s run; whether it has a retry left (:meth:`retry`: where that one crashes)."""
        runs = self.job_failures[j] + 1
        self.job_failures[j] = runs
        return runs <= self.model.job_retries

    def retry(self, j: int, work_left_s: float) -> None:
        """Job ``j`` retries with ``work_left_s`` seconds of work left: draw where its new run crashes."""
        self.fail_left_s[j] = self._fail_left_s(j, self.job_failures[j], work_left_s)

    def _fail_left_s(self, j: int, run: int, work_left_s: float) -> float:
        """Where run ``run`` (0: the first, 1: the first retry, ...) of job ``j``, beginning with ``work_left_s``
        seconds of work left, crashes: the work it will still have left then (> 0), or 0 when it does not."""
        if not self._crashes or not self._crashes[j][run]:
            return 0.0
        return work_left_s * (1.0 - self._crash_at[j][run])
