"""tiresias checked against a plain reference that recomputes everything at every decision point: whole-GPU jobs on
one node of identical speed-1 GPUs (a placement is a count of GPUs), free preemption (a job keeps its work)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Job, parse_cluster, simulate
from engine.schedulers.tiresias import Tiresias

THRESHOLDS = (40.0, 400.0)


def reference_tiresias(n_gpus: int, jobs: list[Job], thresholds=THRESHOLDS, knob: float = 8.0) -> list[list[float]]:
    """Every job's segment start times under discretised 2D-LAS (module docstring of engine/schedulers/tiresias.py):

    at each decision point (an arrival, an end, a running job's service crossing a threshold, a waiting job due for
    promotion), queues in priority order and, within one, waiting jobs in arrival order: a job starts if it fits,
    else it preempts the running jobs of lower queues (lowest queue, then latest arrival, first) if that makes room.
    A waiting job's queue is set when it enters the queue (by its service then); a running job's queue moves down
    when its service crosses a threshold. A preempted job waiting longer than ``knob`` times its total run time
    is promoted to the top queue and its service counts from zero."""
    order = sorted(range(len(jobs)), key=lambda j: (jobs[j].submit_s, j))
    rank = {j: r for r, j in enumerate(order)}
    left = [j.duration_s for j in jobs]  # work left, seconds at speed 1
    service = [0.0] * len(jobs)  # GPU-seconds since the last promotion (up to the last stop)
    ran = [0.0] * len(jobs)  # total time run (up to the last stop)
    queue_of_waiting: dict[int, int] = {}  # waiting job -> its queue
    promotion: dict[int, float] = {}  # waiting job -> when it is promoted
    running: dict[int, tuple[float, int]] = {}  # running job -> (start of this segment, its queue)
    starts: list[list[float]] = [[] for _ in jobs]
    arrived = 0

    def queue_for(s: float) -> int:
        return sum(1 for t in thresholds if s >= t)

    def service_now(j: int, t: float) -> float:
        return service[j] + jobs[j].gpus * (t - running[j][0]) if j in running else service[j]

    def crossing(j: int) -> float:  # when running job j's service crosses into the next queue (inf: never)
        start, q = running[j]
        return start + (thresholds[q] - service[j]) / jobs[j].gpus if q < len(thresholds) else math.inf

    t = 0.0
    while arrived < len(jobs) or queue_of_waiting or running:
        ends = [running[j][0] + left[j] for j in running]
        t = min(
            ([jobs[order[arrived]].submit_s] if arrived < len(jobs) else [])
            + ends
            + [crossing(j) for j in running]
            + list(promotion.values())
        )
        for j in [j for j in running if running[j][0] + left[j] == t]:  # ends
            start, _ = running.pop(j)
            ran[j] += t - start
            left[j] = 0.0
        while arrived < len(jobs) and jobs[order[arrived]].submit_s == t:
            queue_of_waiting[order[arrived]] = 0
            arrived += 1
        for j in [j for j in promotion if promotion[j] <= t]:
            del promotion[j]
            service[j] = 0.0
            queue_of_waiting[j] = 0
        for j in list(running):  # demotions due by now (one queue per crossing)
            while crossing(j) <= t:
                start, q = running[j]
                running[j] = (start, q + 1)
        free = n_gpus - sum(jobs[j].gpus for j in running)
        preempted = []
        for q in range(len(thresholds) + 1):
            for j in sorted((j for j, qq in queue_of_waiting.items() if qq == q), key=rank.__getitem__):
                if jobs[j].gpus > free:
                    lower = sorted(
                        (k for k in running if running[k][1] > q), key=lambda k: (running[k][1], rank[k]), reverse=True
                    )
                    victims, room = [], free
                    for k in lower:
                        if room >= jobs[j].gpus:
                            break
                        victims.append(k)
                        room += jobs[k].gpus
                    if room < jobs[j].gpus:
                        continue
                    for k in victims:
                        start, _ = running.pop(k)
                        service[k] += jobs[k].gpus * (t - start)
                        ran[k] += t - start
                        left[k] -= t - start
                        preempted.append(k)
                    free = room
                del queue_of_waiting[j]
                promotion.pop(j, None)
                running[j] = (t, queue_for(service[j]))
                starts[j].append(t)
                free -= jobs[j].gpus
        for k in preempted:
            q = queue_for(service[k])
            queue_of_waiting[k] = q
            if ran[k] > 0 and q > 0 and math.isfinite(knob):
                promotion[k] = t + knob * ran[k]
    return starts


def engine_starts(n_gpus: int, jobs: list[Job], knob: float = 8.0) -> list[list[float]]:
    r = simulate(parse_cluster(f"1x{n_gpus}:generic"), jobs, Tiresias(thresholds_gpu_s=THRESHOLDS, promote_knob=knob))
    out: list[list[float]] = [[] for _ in jobs]
    for j, s in sorted(zip(r.seg_job.tolist(), r.seg_start_s.tolist()), key=lambda p: p[1]):
        out[j].append(s)
    return out


def test_reference_preempts_a_job_that_has_had_much_service():
    # Job 0 (2 GPUs) runs alone and crosses 40 GPU-s at 20 s; job 1 (2 GPUs) arrives at 30 s in the top queue and
    # preempts it; job 0 resumes when job 1 ends at 40 s.
    jobs = [Job(0, 0.0, 100.0, gpus=2), Job(1, 30.0, 10.0, gpus=2)]
    assert reference_tiresias(2, jobs) == [[0.0, 40.0], [30.0]]
    assert engine_starts(2, jobs) == [[0.0, 40.0], [30.0]]


def test_a_wake_up_whose_reason_has_gone_decides_nothing():
    # At 50 s job 1 asks to be woken at its next crossing, 140 s, but ends at 70 s. At 130 s job 8 preempts jobs 7
    # and 2, leaving a GPU free; preempted jobs wait for the next event, which is at 150 s (ends), not the stale
    # wake-up at 140 s.
    durations_gpus = [(12, 1), (3, 4), (9, 2), (1, 1), (1, 1), (1, 1), (2, 2), (7, 1), (2, 2)]
    submits = [0, 0, 0, 0, 0, 0, 0, 7, 13]
    jobs = [Job(i, 10.0 * s, 10.0 * d, gpus=g) for i, (s, (d, g)) in enumerate(zip(submits, durations_gpus))]
    assert reference_tiresias(4, jobs)[7] == [70.0, 150.0]
    assert engine_starts(4, jobs) == reference_tiresias(4, jobs)


@settings(max_examples=80, deadline=None)
@given(n_gpus=st.sampled_from([1, 2, 4, 8]), knob=st.sampled_from([8.0, 1.0, math.inf]), data=st.data())
def test_tiresias_matches_the_reference(n_gpus, knob, data):
    n = data.draw(st.integers(1, 25))
    # Times on a grid of 10 s and power-of-two GPU counts: every crossing and end time is exact in binary floats.
    submits = sorted(data.draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)))
    jobs = [
        Job(
            i,
            10.0 * s,
            10.0 * data.draw(st.integers(1, 30)),
            gpus=data.draw(st.sampled_from([g for g in (1, 2, 4, 8) if g <= n_gpus])),
        )
        for i, s in enumerate(submits)
    ]
    assert engine_starts(n_gpus, jobs, knob) == reference_tiresias(n_gpus, jobs, knob=knob)
