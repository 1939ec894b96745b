"""Hand-worked checks of discretised two-dimensional least-attained-service (``tiresias``)."""

from __future__ import annotations

import math

import pytest

from engine import Job, parse_cluster
from engine.schedulers.tiresias import Tiresias
from engine.traces.generator import generate


def _segments(r):
    return [(int(j), float(a), float(b)) for j, a, b in zip(r.seg_job, r.seg_start_s, r.seg_end_s)]


def test_tiresias_preempts_a_long_running_job_for_a_newcomer(run):
    # Job 0 holds both GPUs; at t=1800 it has 3600 GPU-seconds and drops to the second queue. Tiresias asked
    # to be woken then, and job 1 (first queue) preempts it at once. FIFO makes job 1 wait for job 0.
    jobs = [Job(0, 0.0, 10_000.0, gpus=2), Job(1, 100.0, 100.0), Job(2, 200.0, 50.0, gpus=2)]
    fifo = run("1x2:generic", jobs, "fifo")
    assert fifo.first_start_s.tolist() == [0, 10_000, 10_100]
    r = run("1x2:generic", jobs, "tiresias")
    assert r.first_start_s.tolist() == [0, 1800, 1900]
    assert r.preemptions.tolist() == [1, 0, 0]
    assert _segments(r) == [(0, 0, 1800), (1, 1800, 1900), (2, 1900, 1950), (0, 1950, 10_150)]


def test_jobs_in_the_same_queue_do_not_preempt_each_other(run):
    # Job 0 stays below 3600 GPU-seconds (first queue) for its whole run: job 1 simply waits.
    jobs = [Job(0, 0.0, 1000.0, gpus=2), Job(1, 100.0, 100.0)]
    r = run("1x2:generic", jobs, "tiresias")
    assert r.first_start_s.tolist() == [0, 1000] and r.preemptions.sum() == 0


@pytest.mark.parametrize(
    "knob, segments",
    [
        # Job 0 (preempted at t=100 after a 100 s run) is promoted at 100 + 2 x 100 = 300 and preempts job 1;
        # job 1 (preempted after 200 s) is promoted in turn at 300 + 2 x 200 = 700.
        (2.0, [(0, 0, 100), (1, 100, 300), (0, 300, 700), (1, 700, 1500), (0, 1500, 2000)]),
        # Without promotion job 0 waits behind job 1, both in the second queue.
        (math.inf, [(0, 0, 100), (1, 100, 1100), (0, 1100, 2000)]),
    ],
)
def test_starvation_guard_promotes_long_waiting_jobs(run, knob, segments):
    jobs = [Job(0, 0.0, 1000.0, gpus=2), Job(1, 100.0, 1000.0)]
    r = run("1x2:generic", jobs, Tiresias(thresholds_gpu_s=(50.0,), promote_knob=knob))
    assert _segments(r) == segments


def test_a_whole_gpu_job_preempts_every_sharer_of_a_gpu(run):
    # Two 0.5-GPU jobs share the only GPU and pass 50 GPU-seconds at t=100 (second queue).
    jobs = [Job(0, 0.0, 10_000.0, gpu_fraction=0.5), Job(1, 0.0, 10_000.0, gpu_fraction=0.5), Job(2, 200.0, 10.0)]
    r = run("1x1:generic", jobs, Tiresias(thresholds_gpu_s=(50.0,)))
    assert r.first_start_s[2] == 200 and r.preemptions.tolist() == [1, 1, 0]


def test_only_victims_that_free_the_needed_gpus_are_preempted(run):
    # Two long 1-GPU jobs in the second queue; a newcomer needs one GPU: exactly one (the later one) goes.
    jobs = [Job(0, 0.0, 10_000.0), Job(1, 0.0, 10_000.0), Job(2, 200.0, 10.0)]
    r = run("1x2:generic", jobs, Tiresias(thresholds_gpu_s=(50.0,)))
    assert r.preemptions.tolist() == [0, 1, 0] and r.gpu_ids[2] == (1,) and r.first_start_s[2] == 200


def test_a_fractional_newcomer_preempts_a_whole_gpu_job(run):
    jobs = [Job(0, 0.0, 10_000.0), Job(1, 200.0, 10.0, gpu_fraction=0.5)]
    r = run("1x1:generic", jobs, Tiresias(thresholds_gpu_s=(50.0,)))
    assert r.first_start_s[1] == 200.0 and r.preemptions.tolist() == [1, 0]


def test_a_fractional_newcomer_preempts_sharers_latest_first_until_its_share_fits(run):
    # A 0.25 job (submitted first) and a 0.75 job fill the GPU; both pass 50 GPU-seconds by t=200.
    # Preempting the later-submitted 0.75 job frees enough for a 0.5 newcomer: the 0.25 job keeps running.
    jobs = [
        Job(0, 0.0, 10_000.0, gpu_fraction=0.25),
        Job(1, 1.0, 10_000.0, gpu_fraction=0.75),
        Job(2, 250.0, 10.0, gpu_fraction=0.5),
    ]
    r = run("1x1:generic", jobs, Tiresias(thresholds_gpu_s=(50.0,)))
    assert r.first_start_s[2] == 250.0 and r.preemptions.tolist() == [0, 1, 0]


def test_a_fractional_newcomer_takes_the_gpu_that_needs_the_fewest_victims(run):
    # GPU 0 holds two 0.5 jobs, GPU 1 a whole-GPU job, all in the second queue by t=300. A 0.75 newcomer
    # would need both sharers of GPU 0 to go, but only the whole-GPU job on GPU 1 (the higher id).
    jobs = [
        Job(0, 0.0, 10_000.0, gpu_fraction=0.5),
        Job(1, 0.0, 10_000.0, gpu_fraction=0.5),
        Job(2, 0.0, 10_000.0),
        Job(3, 300.0, 10.0, gpu_fraction=0.75),
    ]
    r = run("1x2:generic", jobs, Tiresias(thresholds_gpu_s=(50.0,)))
    assert r.gpu_ids[:3] == ((0,), (0,), (1,))
    assert r.preemptions.tolist() == [0, 0, 1, 0] and r.gpu_ids[3] == (1,) and r.first_start_s[3] == 300.0


def test_queue_of_uses_the_thresholds():
    t = Tiresias(thresholds_gpu_s=(10.0, 100.0))
    assert [t.queue_of(s) for s in (0.0, 9.9, 10.0, 99.0, 100.0, 1e9)] == [0, 0, 1, 1, 2, 2]


@pytest.mark.parametrize("bad", [(), (0.0,), (100.0, 10.0), (math.inf,)])
def test_bad_thresholds_are_refused(bad):
    with pytest.raises(ValueError, match="thresholds"):
        Tiresias(thresholds_gpu_s=bad)


class _CheckedBookkeeping:
    """Tiresias, checked after each decision point: its lists hold exactly the running jobs. (A wrapper, not a
    subclass: the compiled class does not take interpreted subclasses.)"""

    def __init__(self) -> None:
        self.inner = Tiresias()
        self.name = self.inner.name
        self.checks = 0

    def reset(self, state):
        self.inner.reset(state)

    def decide(self, state):
        t = self.inner
        yield from t.decide(state)
        running, lists = state.running, t._running
        assert {j for j, q in enumerate(lists.run_queue) if q >= 0} == set(running)
        assert {j for j, run in enumerate(lists.run_id) if run} == set(running)
        assert sorted(t._job_of[r] for entries in lists.by_queue for r in entries) == sorted(running)
        on_gpus = sorted((g, j) for g, jobs in enumerate(lists.gpu_jobs) for j in jobs)
        assert on_gpus == sorted((g, j) for j, r in running.items() for g in r.gpu_ids)
        self.checks += 1


def test_jobs_that_ended_leave_the_bookkeeping_at_the_next_decision_point(run):
    # Ended jobs used to stay listed until looked at again: the lists grew with the run and each removal
    # from them with it.
    cluster = parse_cluster("3x4:A100-80,2x2:T4")
    jobs = generate(cluster, 600, load=1.3, seed=4)
    assert any(j.gpu_fraction < 1 for j in jobs) and any(j.gpus > 1 for j in jobs)
    checked = _CheckedBookkeeping()
    r = run(cluster, jobs, checked)
    assert checked.checks > 300 and r.preemptions.sum() > 0
