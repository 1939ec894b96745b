"""FIFO checked against a tiny independent reference: whole-GPU jobs on one node of identical GPUs."""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Job, make_scheduler, parse_cluster, simulate


def reference_fifo(n_gpus: int, jobs: list[Job]) -> list[float]:
    """Start times under strict FIFO with a plain GPU counter (no nodes, no speeds: one node of speed 1)."""
    arrivals = sorted(jobs, key=lambda j: (j.submit_s, j.job_id))
    ends: list[tuple[float, int]] = []  # heap of (end time, GPUs)
    queue: list[Job] = []
    start = [0.0] * len(jobs)
    free, i = n_gpus, 0
    while i < len(arrivals) or queue:
        t = min(arrivals[i].submit_s if i < len(arrivals) else float("inf"), ends[0][0] if ends else float("inf"))
        while ends and ends[0][0] == t:
            free += heapq.heappop(ends)[1]
        while i < len(arrivals) and arrivals[i].submit_s == t:
            queue.append(arrivals[i])
            i += 1
        while queue and queue[0].gpus <= free:
            job = queue.pop(0)
            start[job.job_id] = t
            free -= job.gpus
            heapq.heappush(ends, (t + job.duration_s, job.gpus))
    return start


@settings(max_examples=60, deadline=None)
@given(n_gpus=st.integers(1, 8), data=st.data())
def test_fifo_matches_the_reference(n_gpus, data):
    n = data.draw(st.integers(1, 30))
    submits = sorted(data.draw(st.lists(st.integers(0, 500), min_size=n, max_size=n)))
    jobs = [
        Job(
            i,
            float(s),
            float(data.draw(st.integers(1, 300))),
            gpus=data.draw(st.integers(1, n_gpus)),
            estimate_s=float(data.draw(st.integers(1, 600))),
        )
        for i, s in enumerate(submits)
    ]
    r = simulate(parse_cluster(f"1x{n_gpus}:generic"), jobs, make_scheduler("fifo"))
    assert r.first_start_s.tolist() == reference_fifo(n_gpus, jobs)
    assert r.end_s.tolist() == [s + j.duration_s for s, j in zip(reference_fifo(n_gpus, jobs), jobs)]


def test_reference_blocks_behind_the_head():
    jobs = [Job(0, 0.0, 10.0, gpus=2), Job(1, 1.0, 10.0, gpus=2), Job(2, 2.0, 1.0)]
    assert reference_fifo(2, jobs) == [0.0, 10.0, 20.0]
