"""easy-backfill checked against a plain reference that tries every waiting job at every decision point:
whole-GPU jobs on one node of identical speed-1 GPUs, where a placement is only a count of GPUs."""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Job, make_scheduler, parse_cluster, simulate


def reference_easy(n_gpus: int, jobs: list[Job]) -> list[float]:
    """Start times under EASY backfilling (module docstring of engine/schedulers/backfill.py), by the book:

    at each event time, start waiting jobs in arrival order until the first that does not fit (the head); the head's
    shadow time is when, by the running jobs' estimates (an overrun one ends now), enough GPUs are free, and the
    extra GPUs are those free then beyond its need; every later waiting job that fits now starts if it ends by the
    shadow time, or else if it needs no more than the extra GPUs (which it then uses up)."""
    arrivals = sorted(jobs, key=lambda j: (j.submit_s, j.job_id))
    ends: list[tuple[float, int, int]] = []  # heap of (true end, job id, GPUs)
    running: dict[int, tuple[float, int]] = {}  # job id -> (estimated end, GPUs)
    queue: list[Job] = []
    start = [0.0] * len(jobs)
    free, i = n_gpus, 0

    def run(job: Job, t: float) -> None:
        nonlocal free
        start[job.job_id] = t
        free -= job.gpus
        heapq.heappush(ends, (t + job.duration_s, job.job_id, job.gpus))
        running[job.job_id] = (t + job.estimate_s, job.gpus)

    while i < len(arrivals) or queue:
        t = min(arrivals[i].submit_s if i < len(arrivals) else float("inf"), ends[0][0] if ends else float("inf"))
        while ends and ends[0][0] == t:
            _, j, gpus = heapq.heappop(ends)
            free += gpus
            del running[j]
        while i < len(arrivals) and arrivals[i].submit_s == t:
            queue.append(arrivals[i])
            i += 1
        while queue and queue[0].gpus <= free:
            run(queue.pop(0), t)
        if not queue:
            continue
        head = queue[0]
        est_ends = sorted({max(est_end, t) for est_end, _ in running.values()})  # an overrun job ends now
        shadow = next(
            e for e in est_ends if free + sum(g for est_end, g in running.values() if max(est_end, t) <= e) >= head.gpus
        )
        avail = free + sum(g for est_end, g in running.values() if max(est_end, t) <= shadow)
        extra = avail - head.gpus
        for job in list(queue[1:]):
            if job.gpus > free:
                continue
            if t + job.estimate_s <= shadow:
                queue.remove(job)
                run(job, t)
            elif job.gpus <= extra:
                queue.remove(job)
                run(job, t)
                extra -= job.gpus
    return start


def test_reference_backfills_a_short_job_and_holds_the_head():
    # Job 0 holds 1 of 2 GPUs until 100; job 1 (2 GPUs) must wait; job 2 (1 GPU, estimate 50) ends before the
    # shadow time 100 and backfills; job 3 (1 GPU, estimate 200) would delay the head and waits.
    jobs = [Job(0, 0.0, 100.0), Job(1, 1.0, 10.0, gpus=2), Job(2, 2.0, 50.0), Job(3, 3.0, 200.0)]
    assert reference_easy(2, jobs) == [0.0, 100.0, 2.0, 110.0]


@settings(max_examples=80, deadline=None)
@given(n_gpus=st.integers(1, 8), data=st.data())
def test_easy_backfill_matches_the_reference(n_gpus, data):
    n = data.draw(st.integers(1, 30))
    # Times on a coarse grid, so that ends, estimates and shadow times often tie (the boundaries of each rule).
    submits = sorted(data.draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)))
    jobs = []
    for i, s in enumerate(submits):
        duration = 10 * data.draw(st.integers(1, 30))
        # Estimates over and under the truth: overrun jobs are taken to end now.
        estimate = 10 * data.draw(st.integers(1, 60))
        s = 10 * s
        jobs.append(
            Job(i, float(s), float(duration), gpus=data.draw(st.integers(1, n_gpus)), estimate_s=float(estimate))
        )
    r = simulate(parse_cluster(f"1x{n_gpus}:generic"), jobs, make_scheduler("easy-backfill"))
    assert r.first_start_s.tolist() == reference_easy(n_gpus, jobs)
