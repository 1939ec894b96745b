"""Dominant resource fairness (DRF) across users, after Ghodsi et al. (NSDI'11).

Resources are the GPUs of each type and the GPU memory of each type (the two differ only for jobs that
share a GPU: a job holding 10 % of a GPU but 70 % of its memory uses more memory than compute). A user's
share of a resource is what their running jobs hold divided by the cluster's total; their *dominant share*
is the largest of these. At each decision point DRF repeatedly picks the waiting user with the lowest
dominant share and starts that user's oldest waiting job that fits now (progressive filling), then updates
the user's share. Ties go to the user whose oldest waiting job was submitted first.

Non-preemptive: a user who holds more than a fair share keeps it until their jobs end; fairness is restored
only as jobs finish and new ones start.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Iterator

import numpy as np
from mypy_extensions import mypyc_attr

from engine.schedulers.placement import PLACEMENTS, Placement, reset_placement
from engine.schedulers.registry import SchedulerSpec, register
from engine.sim.state import FRACTION_EPS, ClusterState, Decision, Start


@mypyc_attr(allow_interpreted_subclasses=True)  # a public base: subclassable compiled too (ARCHITECTURE.md)
class DrfScheduler:
    """Per-user dominant resource fairness with a pluggable placement rule (first-fit by default)."""

    def __init__(self, name: str = "drf", placement: str = "first-fit") -> None:
        self.name = name
        self.placement: Placement = PLACEMENTS[placement]()
        self._waiting: dict[str, dict[int, deque[int]]] = {}  # user -> shape -> waiting jobs, oldest first
        self._share: dict[str, float] = {}  # user -> dominant share
        self._usage: dict[str, np.ndarray] = {}  # user -> held [GPUs per type..., GiB per type...]
        self._held: dict[str, dict[int, np.ndarray]] = {}  # user -> running job -> its usage vector
        self._held_gpus: dict[str, float] = {}  # user -> GPUs their tracked jobs hold
        self._capacity = np.ones(1)

    def reset(self, state: ClusterState) -> None:
        reset_placement(self.placement, state)
        lay = state.layout
        n_types = len(lay.type_names)
        gpus_per_type = np.bincount(lay.gpu_type, minlength=n_types).astype(float)
        self._capacity = np.concatenate([gpus_per_type, gpus_per_type * lay.type_vram_gib])
        self._waiting, self._share, self._usage, self._held, self._held_gpus = {}, {}, {}, {}, {}
        for j, run in state.running.items():  # reset mid-run (a selector switching to drf): count what runs
            self._hold(state, j, run.gpu_ids)

    def dominant_share(self, user: str) -> float:
        """The user's largest share of any resource, as of the last decision point."""
        return self._share.get(user, 0.0)

    def _update_share(self, user: str) -> None:
        self._share[user] = float((self._usage[user] / self._capacity).max())

    def _sync(self, state: ClusterState, user: str) -> None:
        """Forget the user's jobs that have ended (only when the engine's GPU count for them disagrees)."""
        held = self._held.get(user)
        if not held or abs(self._held_gpus[user] - state.user_gpus.get(user, 0.0)) <= FRACTION_EPS:
            return
        running = state.running
        for j in [j for j in held if j not in running]:
            vec = held.pop(j)
            self._usage[user] -= vec
            self._held_gpus[user] = self._held_gpus[user] - state.jobs[j].gpu_demand
        if not held:  # exact zero: no drift from repeated float subtraction
            self._usage[user][:] = 0.0
            self._held_gpus[user] = 0.0
        self._update_share(user)

    def _usage_vector(self, state: ClusterState, j: int, gpus: tuple[int, ...]) -> np.ndarray:
        lay = state.layout
        job = state.jobs[j]
        t = int(lay.gpu_type[gpus[0]])
        vram = float(lay.type_vram_gib[t])
        vec = np.zeros_like(self._capacity)
        n_types = len(lay.type_names)
        vec[t] = job.gpus * job.gpu_fraction
        if job.gpu_fraction >= 1.0:
            vec[n_types + t] = job.gpus * vram
        else:
            vec[n_types + t] = job.vram_gib if job.vram_gib > 0 else job.gpu_fraction * vram
        return vec

    def _hold(self, state: ClusterState, j: int, gpus: tuple[int, ...]) -> None:
        """Count running job ``j`` (on ``gpus``) in its user's usage and share."""
        user = state.jobs[j].user
        vec = self._usage_vector(state, j, gpus)
        self._held.setdefault(user, {})[j] = vec
        self._usage[user] = self._usage.get(user, 0.0) + vec
        self._held_gpus[user] = self._held_gpus.get(user, 0.0) + state.jobs[j].gpu_demand
        self._update_share(user)

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        jobs, job_shape = state.jobs, state.job_shape
        for j in state.entered:  # arrival order, so each deque stays oldest first
            self._waiting.setdefault(jobs[j].user, {}).setdefault(job_shape[j], deque()).append(j)
        if state.free_capacity <= FRACTION_EPS:
            return
        heap: list[tuple[float, float, str]] = []
        for user, by_shape in self._waiting.items():
            if by_shape:
                self._sync(state, user)
                heap.append((self.dominant_share(user), _oldest_s(jobs, by_shape), user))
        heapq.heapify(heap)
        failed: set[int] = set()  # shapes that did not fit: resources only shrink during one decision
        shapes, place = state.queue_shape_counts, self.placement
        while heap:
            _, _, user = heapq.heappop(heap)
            by_shape = self._waiting[user]
            # The user's oldest waiting job that fits: try the oldest job of each shape, oldest first.
            for _, j, sid in sorted(
                (jobs[d[0]].submit_s, d[0], sid) for sid, d in by_shape.items() if sid not in failed
            ):
                gpus = place(state, jobs[j])
                if gpus is None:
                    failed.add(sid)
                    if len(failed) >= len(shapes):
                        return  # no kind of waiting job fits any more
                    continue
                yield Start(j, gpus)
                by_shape[sid].popleft()
                if not by_shape[sid]:
                    del by_shape[sid]
                self._hold(state, j, gpus)
                if state.free_capacity <= FRACTION_EPS:
                    return
                if by_shape:
                    heapq.heappush(heap, (self.dominant_share(user), _oldest_s(jobs, by_shape), user))
                break


def _oldest_s(jobs, by_shape: dict[int, deque[int]]) -> float:
    """Submit time of the user's oldest waiting job (the tie-break between users of equal share)."""
    return min(jobs[d[0]].submit_s for d in by_shape.values())


register(
    SchedulerSpec(
        "drf",
        DrfScheduler,
        "Dominant resource fairness: each user's share of the cluster is their largest share of any resource "
        "(GPUs or GPU memory of a type), and the user with the smallest share starts their next job first. "
        "Heavy users cannot crowd out light ones, but it never preempts, so fairness returns only as jobs end.",
    )
)
