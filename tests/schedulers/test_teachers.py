"""Hand-worked scenarios for the teachers, registered schedulers over the agents' action space
(``engine/rl/teacher.py``): which job they start first, on which GPU type, and when they preempt."""

from __future__ import annotations

import pytest

from engine import SCHEDULERS, Job
from engine.rl.teacher import EVICTING, TEACHERS

# One node of two 16 GiB GPUs at speed 1 (GPUs 0-1), one node of two 80 GiB GPUs at speed 2 (GPUs 2-3).
TWO_TYPES = {
    "groups": [
        {"gpu_type": "SMALL", "nodes": 1, "gpus_per_node": 2},
        {"gpu_type": "BIG", "nodes": 1, "gpus_per_node": 2},
    ],
    "gpu_types": [{"name": "SMALL", "vram_gib": 16, "speed": 1}, {"name": "BIG", "vram_gib": 80, "speed": 2}],
}
SPARE = {"short-spare", "short-spare-evict", "short-spare-evict-est", "short-spare-evict-est-cap"}


def test_every_teacher_is_registered_and_only_evicting_ones_preempt():
    assert set(TEACHERS) <= set(SCHEDULERS)
    assert {n for n in TEACHERS if SCHEDULERS[n].preemptive} == EVICTING
    assert not any(SCHEDULERS[n].oracle for n in TEACHERS)


@pytest.mark.parametrize("name", sorted(TEACHERS))
def test_gpu_type_choice(run, name):
    # A 10 GiB training job (full speed-up) fits both types: the short-spare family keeps the 80 GiB GPUs
    # free, the rest take the fastest (every other key ties: one job, one GPU, equal idle blocks).
    r = run(TWO_TYPES, [Job(0, 0.0, 100.0, vram_gib=10.0, job_type="training")], name)
    assert r.gpu_ids == (((0,),) if name in SPARE else ((2,),))
    assert r.end_s.tolist() == ([100.0] if name in SPARE else [50.0])


# One GPU. Job 0 (100 s) starts at 0; job 1 (50 s) arrives at 1, job 2 (10 s) at 2; estimates are exact.
QUEUE = [Job(0, 0.0, 100.0), Job(1, 1.0, 50.0), Job(2, 2.0, 10.0)]
#: name group -> (first starts, ends, preemptions), worked by hand.
ORDERS = {
    # Oldest first: job 1 at 100, job 2 at 150.
    "fifo": ([0, 100, 150], [100, 150, 160], [0, 0, 0]),
    # Shortest first: job 2 at 100, job 1 at 110.
    "short": ([0, 110, 100], [100, 160, 110], [0, 0, 0]),
    # At 1, job 1 fits nowhere and job 0 would outlast it (99 s left > 50 s): job 0 is preempted and job 1
    # starts. At 2, job 2 evicts job 1 the same way (49 s left > 10 s). At 12 the shorter job 1 resumes (49 s
    # left, ends 61), then job 0 (99 s left, ends 160); preemption is free by default.
    "evict": ([0, 1, 2], [160, 61, 12], [1, 1, 0]),
}


@pytest.mark.parametrize("name", sorted(TEACHERS))
def test_queue_order_and_eviction(run, name):
    group = "fifo" if name == "fifo-fast" else "evict" if name in EVICTING else "short"
    starts, ends, preemptions = ORDERS[group]
    r = run("1x1:generic", QUEUE, name)
    assert r.first_start_s.tolist() == starts
    assert r.end_s.tolist() == ends
    assert r.preemptions.tolist() == preemptions
