"""Failures: nodes that break and are repaired, jobs whose runs crash, and what checkpoints cost.

The failure process is checked against what it predicts, the same failures are met by every scheduler, a down
node's GPUs take no job, and every stop keeps the work up to the last checkpoint.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine import (
    FailureModel,
    Job,
    PreemptionModel,
    RunOptions,
    Simulation,
    Start,
    make_scheduler,
    parse_cluster,
    simulate,
)
from engine.sim.options import FAILURE_PRESETS
from engine.sim.simulator import COMPLETED, FAILED
from engine.traces.generator import generate

H = 3600.0


def _failures(**kw) -> RunOptions:
    return RunOptions(failures=FailureModel(**kw))


def _up_s(result, n_nodes: int, horizon_s: float) -> float:
    """Node-seconds up from 0 to ``horizon_s``."""
    down = np.minimum(np.nan_to_num(result.outage_end_s, nan=horizon_s), horizon_s) - result.outage_start_s
    return n_nodes * horizon_s - float(down.sum())


def _long_run(options: RunOptions, seed: int = 3):
    """16 nodes kept busy by one 1-GPU job of 20,000 h (it checkpoints when stopped: it loses nothing)."""
    cluster = parse_cluster("16x8:generic")
    return simulate(cluster, [Job(0, 0.0, 20_000 * H)], make_scheduler("fifo"), seed=seed, options=options)


@pytest.mark.parametrize("shape", [1.0, 2.0])
def test_the_failure_count_is_what_the_process_predicts(shape):
    result = _long_run(_failures(mtbf_h=2000.0, repair_h=4.0, weibull_shape=shape))
    horizon_s = float(result.end_s[0])
    # Each node alternates up times of mean 2000 h with 4 h repairs: failures ~ node up-time / MTBF (a renewal
    # process; its count has a standard deviation of about sqrt(mean) for the exponential law, less for shape 2).
    expected = _up_s(result, 16, horizon_s) / (2000.0 * H)
    count = result.outage_node.size
    assert expected == pytest.approx(16 * horizon_s / (2000 * H), rel=0.01)  # repairs are short
    assert abs(count - expected) < 4 * math.sqrt(expected)
    repaired = ~np.isnan(result.outage_end_s)
    assert np.allclose(result.outage_end_s[repaired] - result.outage_start_s[repaired], 4 * H)
    assert set(result.outage_node.tolist()) <= set(range(16)) and len(set(result.outage_node.tolist())) > 8


def test_lemons_fail_more_and_exponential_repairs_vary():
    plain = _long_run(_failures(mtbf_h=2000.0, repair_h=4.0))
    lemons = _long_run(
        _failures(mtbf_h=2000.0, repair_h=4.0, lemon_share=0.5, lemon_factor=10.0, repair_law="exponential")
    )
    assert lemons.outage_node.size > 2 * plain.outage_node.size
    counts = np.bincount(lemons.outage_node, minlength=16)
    assert counts.max() > 5 * max(np.median(counts[counts < np.median(counts)]), 1)  # a few nodes fail far more
    repairs = lemons.outage_end_s - lemons.outage_start_s
    repairs = repairs[~np.isnan(repairs)]
    assert repairs.std() > 0.5 * H and repairs.mean() == pytest.approx(4 * H, rel=0.3)


def test_per_gpu_mtbf_scales_to_the_node():
    per_node = _long_run(_failures(mtbf_h=8 * 2000.0, mtbf_per="gpu"))  # 8-GPU nodes: a node fails every 2000 h
    horizon_s = float(per_node.end_s[0])
    expected = 16 * horizon_s / (2000.0 * H)
    assert abs(per_node.outage_node.size - expected) < 4 * math.sqrt(expected)


def _busy_workload():
    cluster = parse_cluster("8x8:A100-80")
    return cluster, generate(cluster, 600, load=3.0, seed=4)


def test_every_scheduler_meets_the_same_failures():
    cluster, jobs = _busy_workload()
    options = RunOptions(
        preemption=PreemptionModel(checkpoint_interval_s=1800.0, restart_overhead_s=60.0),
        failures=FAILURE_PRESETS["stress"],
    )
    fifo = simulate(cluster, jobs, make_scheduler("fifo"), seed=7, options=options)
    easy = simulate(cluster, jobs, make_scheduler("easy-backfill"), seed=7, options=options)
    assert not np.array_equal(fifo.end_s, easy.end_s)  # the schedulers did differ
    horizon_s = min(np.nanmax(fifo.end_s), np.nanmax(easy.end_s))
    for a, b in ((fifo, easy), (easy, fifo)):
        early = a.outage_start_s <= horizon_s  # the longer run sees more of the same sequence
        assert np.array_equal(a.outage_node[early], b.outage_node[: early.sum()])
        assert np.array_equal(a.outage_start_s[early], b.outage_start_s[: early.sum()])
    assert fifo.outage_node.size > 5 and fifo.interruptions.sum() > 0
    other_seed = simulate(cluster, jobs, make_scheduler("fifo"), seed=8, options=options)
    assert not np.array_equal(other_seed.outage_start_s[:3], fifo.outage_start_s[:3])


def test_a_down_node_runs_nothing_and_its_jobs_stop_as_a_gang():
    cluster, jobs = _busy_workload()
    options = RunOptions(
        preemption=PreemptionModel(checkpoint_interval_s=1800.0, restart_overhead_s=60.0),
        failures=FAILURE_PRESETS["stress"],
    )
    r = simulate(cluster, jobs, make_scheduler("easy-backfill"), seed=7, options=options)
    gpu_node = cluster.layout.gpu_node
    end = np.nan_to_num(r.outage_end_s, nan=np.inf)
    stopped_by_failure = 0
    for i in range(r.seg_job.size):
        nodes = set(gpu_node[r.segment_gpus(i)].tolist())
        for k in np.flatnonzero(np.isin(r.outage_node, list(nodes))):
            # no run segment overlaps an outage of a node it holds a GPU on
            assert r.seg_end_s[i] <= r.outage_start_s[k] or r.seg_start_s[i] >= end[k]
            stopped_by_failure += r.seg_end_s[i] == r.outage_start_s[k]
    assert stopped_by_failure == r.interruptions.sum() > 0  # every GPU of a stopped job was freed at once
    assert (r.status == COMPLETED).all()
    assert r.failure_lost_gpu_s.sum() > 0 and r.restart_gpu_s.sum() == pytest.approx(
        60.0 * sum(jobs[j].gpu_demand * (r.interruptions[j] + r.preemptions[j]) for j in range(len(jobs)))
    )


def test_a_stopped_job_keeps_its_work_up_to_its_last_checkpoint():
    cluster = parse_cluster("1x1:generic")
    options = RunOptions(
        preemption=PreemptionModel(checkpoint_interval_s=1000.0, restart_overhead_s=100.0),
        failures=FailureModel(mtbf_h=1.0, repair_h=0.5),
    )
    r = simulate(cluster, [Job(0, 0.0, 3000.0)], make_scheduler("fifo"), seed=1, options=options)
    first_failure = float(r.outage_start_s[0])
    assert r.seg_end_s[0] == first_failure and r.seg_start_s[1] == r.outage_end_s[0]
    done = first_failure  # speed 1
    kept = math.floor(done / 1000.0) * 1000.0
    assert r.failure_lost_gpu_s[0] >= done - kept - 1e-6
    assert r.status[0] == COMPLETED
    # the job did its 3000 s, plus what each stop rolled back, plus a restart per stop
    assert r.run_s[0] == pytest.approx(3000.0 + r.failure_lost_gpu_s[0] + 100.0 * r.interruptions[0])


def test_checkpoints_cost_their_time():
    cluster = parse_cluster("1x1:generic")
    options = RunOptions(
        preemption=PreemptionModel(checkpoint_interval_s=600.0), failures=FailureModel(checkpoint_cost_s=30.0)
    )
    r = simulate(cluster, [Job(0, 0.0, 1800.0)], make_scheduler("fifo"), options=options)
    assert r.end_s[0] == 1860.0 and r.checkpoint_gpu_s[0] == 60.0  # two checkpoints, none at the end


def test_a_job_failure_rate_fails_that_share_of_jobs_early():
    cluster = parse_cluster("4x8:A100-80")
    jobs = generate(cluster, 2000, load=0.8, seed=2)
    r = simulate(cluster, jobs, make_scheduler("fifo"), seed=5, options=_failures(job_failure_rate=0.3))
    failed = r.status == FAILED
    assert failed.mean() == pytest.approx(0.3, abs=0.03)
    assert (r.job_failures == failed).all() and (r.status[~failed] == COMPLETED).all()
    # a failed job ran part of its run, mostly an early part (at U^3 of it: a median of 1/8)
    share_run = r.run_s[failed] / simulate(cluster, jobs, make_scheduler("fifo"), seed=5).run_s[failed]
    assert share_run.max() < 1.0 and 0.05 < np.median(share_run) < 0.25
    retried = simulate(
        cluster, jobs, make_scheduler("fifo"), seed=5, options=_failures(job_failure_rate=0.3, job_retries=1)
    )
    assert (retried.status == FAILED).mean() == pytest.approx(0.09, abs=0.02)  # both runs fail: 0.3 x 0.3
    assert (retried.job_failures >= 1).mean() == pytest.approx(0.3, abs=0.03)


def test_without_failures_nothing_fails():
    cluster, jobs = _busy_workload()
    plain = simulate(cluster, jobs, make_scheduler("easy-backfill"), seed=7)
    off = simulate(cluster, jobs, make_scheduler("easy-backfill"), seed=7, options=_failures())
    assert plain.outage_node.size == off.outage_node.size == 0
    assert np.array_equal(plain.end_s, off.end_s) and not off.interruptions.any() and not off.job_failures.any()


def test_a_scheduler_cannot_start_a_job_on_a_down_node():
    cluster = parse_cluster("2x2:generic")
    options = _failures(mtbf_h=10.0, repair_h=1000.0)
    probe = simulate(cluster, [Job(0, 0.0, 100 * H)], make_scheduler("fifo"), seed=2, options=options)
    down_s, node = float(probe.outage_start_s[0]), int(probe.outage_node[0])
    assert np.isnan(probe.outage_end_s[0]) or probe.outage_end_s[0] - down_s == 1000 * H
    sim = Simulation(cluster, [Job(0, down_s + 1.0, 60.0)], options=options, seed=2)
    state = sim.reset()
    assert state.now_s == down_s + 1.0 and state.occupancy.node_down[node]
    assert state.occupancy.node_failures == [1 if n == node else 0 for n in range(2)]
    assert state.free_gpus == state.free_capacity == 2 and state.node_free[node] == 0
    gpu = int(cluster.layout.node_first_gpu[node])
    assert "is not free" in state.validate(Start(0, (gpu,)))
    assert not state.can_host(state.jobs[0])[gpu : gpu + 2].any()
