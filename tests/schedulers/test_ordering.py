"""Orderings: a walk that skips shapes (a merge of per-shape lists) yields exactly the plain sorted queue minus
the skipped shapes, also when the skip set grows during the walk, jobs it yields are left waiting, and the
queue grows long."""

from __future__ import annotations

import numpy as np
import pytest

from engine import Job, Preempt, Start, parse_cluster, simulate
from engine.schedulers.ordering import ORDERS
from engine.schedulers.placement import first_fit


class WalkChecker:
    """Each decision point: walk the ordering with a growing skip set and compare with a sorted scan; then
    start a few jobs and sometimes preempt one, so that jobs leave and re-enter the queue."""

    name = "walk-checker"

    def __init__(self, order_name: str, key, seed: int) -> None:
        self.order = ORDERS[order_name]()
        self.key = key
        self.rng = np.random.default_rng(seed)
        self.longest = 0

    def reset(self, state) -> None:
        self.order.reset(state)

    def decide(self, state):
        rng, shape = self.rng, state.job_shape
        seed = int(rng.integers(1 << 30))
        expected = self._walk(sorted(state.queue, key=lambda j: (self.key(state.jobs[j]), j)), shape, seed)
        got = self._walk(self.order.candidates(state, skip := set()), shape, seed, skip)
        assert got == expected
        assert list(self.order.candidates(state)) == sorted(  # the plain walk, after the merge put jobs back
            state.queue, key=lambda j: (self.key(state.jobs[j]), j)
        )
        self.longest = max(self.longest, len(state.queue))
        if state.running and rng.random() < 0.1:
            yield Preempt(int(rng.choice(sorted(state.running))))
        for j in got[:3]:
            gpus = first_fit(state, state.jobs[j])
            if gpus is not None:
                yield Start(j, gpus)

    @staticmethod
    def _walk(candidates, shape, seed, skip=None) -> list[int]:
        """Consume ``candidates``, skipping shapes in ``skip`` and adding shapes to it by a seeded rule."""
        rng = np.random.default_rng(seed)
        skip = set() if skip is None else skip
        out = []
        for j in candidates:
            if shape[j] in skip:
                continue
            out.append(j)
            if rng.random() < 0.3:
                skip.add(shape[j])
            if rng.random() < 0.2:
                skip.add(int(rng.integers(6)))
        return out


def _jobs(n: int, seed: int) -> list[Job]:
    rng = np.random.default_rng(seed)
    t, jobs = 0.0, []
    for i in range(n):
        t += float(rng.exponential(3.0))
        jobs.append(
            Job(
                i,
                round(t),
                float(rng.integers(50, 500)),
                gpus=int(rng.choice([1, 2, 4])),
                vram_gib=float(rng.choice([0.0, 8.0])),
                estimate_s=float(rng.integers(10, 900)),
                priority=int(rng.integers(3)),
            )
        )
    return jobs


@pytest.mark.parametrize(
    "order_name,key",
    [
        ("fifo", lambda job: (job.submit_s, job.job_id)),
        ("sjf", lambda job: (job.estimate_s * job.gpus * job.gpu_fraction, job.submit_s)),
        ("sjf-oracle", lambda job: (job.duration_s * job.gpus * job.gpu_fraction, job.submit_s)),
        ("priority", lambda job: (-job.priority, job.submit_s)),
    ],
)
@pytest.mark.parametrize("seed", range(2))
def test_skipping_walk_equals_filtered_sorted_queue(order_name, key, seed):
    checker = WalkChecker(order_name, key, seed)
    simulate(parse_cluster("2x4:generic"), _jobs(400, seed), checker)  # overloaded: the queue grows long
    assert checker.longest > 100  # a long queue: many stale and re-entered entries
