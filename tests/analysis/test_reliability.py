"""What failures cost a run, in numbers: counts, lost GPU-hours by cause, ETTR, availability; absent without
failures (summaries unchanged), neutral when computed anyway."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from engine import FailureModel, Job, PreemptionModel, RunOptions, make_scheduler, parse_cluster, simulate
from engine.analysis.metrics import (
    METRICS,
    RELIABILITY_METRICS,
    STATUS_NAMES,
    compare,
    job_frame,
    summarize,
    user_frame,
)
from engine.analysis.reliability import (
    availability_series,
    interruptions_by_size,
    summarize_reliability,
    up_gpu_s,
)
from engine.sim.simulator import COMPLETED, FAILED, UNSCHEDULABLE
from engine.traces.generator import generate

COSTLY = PreemptionModel(checkpoint_interval_s=1800.0, restart_overhead_s=60.0)


def _workload(stretch: float = 1.0):
    """16 nodes, 800 jobs offered 3 times what the cluster serves; every time ``stretch`` times longer (a run long
    enough for 2000-hour MTBFs to matter)."""
    cluster = parse_cluster("16x8:A100-80")
    jobs = generate(cluster, 800, load=3.0, seed=6)
    return cluster, [
        dataclasses.replace(
            j, submit_s=j.submit_s * stretch, duration_s=j.duration_s * stretch, estimate_s=j.estimate_s * stretch
        )
        for j in jobs
    ]


def test_status_names_follow_the_codes():
    assert (STATUS_NAMES[COMPLETED], STATUS_NAMES[UNSCHEDULABLE], STATUS_NAMES[FAILED]) == (
        "completed",
        "unschedulable",
        "failed",
    )


def test_node_failures_cost_work_and_lower_ettr():
    cluster, jobs = _workload(stretch=20.0)
    options = RunOptions(preemption=COSTLY, failures=FailureModel(mtbf_h=2000.0, repair_h=4.0))
    for name in ("fifo", "easy-backfill"):
        result = simulate(cluster, jobs, make_scheduler(name), seed=11, options=options)
        summary = summarize(result)
        rel = summary.reliability
        assert rel is not None and rel.node_failures == result.outage_node.size > 0
        assert rel.interruptions > 0 and rel.failure_lost_gpu_h > 0 and rel.restart_gpu_h > 0
        assert 0.5 < rel.ettr < 1.0 and 0.9 < rel.availability < 1.0
        assert rel.failed_jobs == 0 and rel.failed_job_gpu_h == 0.0
        assert list(summary.to_dict())[-len(RELIABILITY_METRICS) :] == list(RELIABILITY_METRICS)
        # ETTR by hand: each job's useful share is duration / work performed (the lost work and restarts added)
        frame = job_frame(result)
        performed = frame["duration_s"] + (
            frame["lost_gpu_s"] + frame["failure_lost_gpu_s"] + frame["restart_gpu_s"]
        ) / (frame["gpus"] * frame["gpu_fraction"])
        useful = (frame["gpu_s"] * frame["duration_s"] / performed).sum()
        assert rel.ettr == pytest.approx(useful / frame["gpu_s"].sum())


def test_without_failures_nothing_is_lost():
    cluster, jobs = _workload()
    plain = simulate(cluster, jobs, make_scheduler("fifo"), seed=11)
    summary = summarize(plain)
    assert summary.reliability is None and list(summary.to_dict()) == list(METRICS)  # as before failures existed
    assert list(compare({"fifo": plain}).index) == list(METRICS)
    assert "interruptions" not in job_frame(plain) and "failed" not in user_frame(plain)
    per_job = job_frame(plain)["gpu_s"].to_numpy()
    end = summary.makespan_s
    rel = summarize_reliability(plain, per_job, 0.0, end)
    assert rel.node_failures == 0 and rel.ettr == 1.0 and rel.availability == 1.0
    assert rel.failure_lost_gpu_h == rel.checkpoint_gpu_h == rel.restart_gpu_h == 0.0


def test_failed_jobs_are_counted_apart_and_their_gpu_time_is_not_useful():
    cluster, jobs = _workload()
    result = simulate(
        cluster, jobs, make_scheduler("fifo"), seed=11, options=RunOptions(failures=FailureModel(job_failure_rate=0.3))
    )
    summary = summarize(result)
    failed = result.status == FAILED
    assert summary.reliability.failed_jobs == failed.sum() > 0
    assert summary.completed + summary.unschedulable + failed.sum() == len(jobs) and summary.unschedulable == 0
    frame = job_frame(result)
    assert (frame["status"] == "failed").sum() == failed.sum()
    assert summary.reliability.failed_job_gpu_h == pytest.approx(frame["gpu_s"][failed].sum() / 3600)
    assert summary.reliability.ettr == pytest.approx(1 - frame["gpu_s"][failed].sum() / frame["gpu_s"].sum())
    assert user_frame(result)["failed"].sum() == failed.sum()
    table = compare({"fifo": result, "plain": simulate(cluster, jobs, make_scheduler("fifo"), seed=11)})
    assert table.loc["failed_jobs", "fifo"] == failed.sum() and math.isnan(table.loc["failed_jobs", "plain"])


def test_checkpoint_cost_is_its_own_cause():
    cluster = parse_cluster("1x1:generic")
    options = RunOptions(
        preemption=PreemptionModel(checkpoint_interval_s=600.0), failures=FailureModel(checkpoint_cost_s=30.0)
    )
    result = simulate(cluster, [Job(0, 0.0, 1800.0)], make_scheduler("fifo"), options=options)
    rel = summarize(result).reliability
    assert rel.checkpoint_gpu_h == pytest.approx(60.0 / 3600) and rel.ettr == pytest.approx(1800.0 / 1860.0)


def test_availability_over_time_and_interruptions_by_size():
    cluster, jobs = _workload()
    result = simulate(
        cluster,
        jobs,
        make_scheduler("fifo"),
        seed=11,
        options=RunOptions(preemption=COSTLY, failures=FailureModel(mtbf_h=300.0, repair_h=4.0)),
    )
    series = availability_series(result)
    assert series["t_s"].iloc[0] == 0.0 and series["up_gpus"].iloc[0] == cluster.n_gpus
    assert series["up_gpus"].min() < cluster.n_gpus and series["t_s"].is_monotonic_increasing
    # the series integrates to the up GPU-seconds
    end_s = 50 * 3600.0
    t = np.append(series["t_s"].to_numpy(), end_s)
    inside = t[:-1] < end_s
    integral = float(np.dot(series["up_gpus"].to_numpy()[inside], np.diff(np.minimum(t, end_s))[inside]))
    assert integral == pytest.approx(up_gpu_s(result, 0.0, 50 * 3600.0))
    sizes = interruptions_by_size(result)
    assert sizes["interruptions"].sum() == result.interruptions.sum() > 0
    assert sizes["jobs"].sum() == (result.run_s > 0).sum()
    assert list(sizes["gpus"]) == sorted(sizes["gpus"]) and set(sizes["gpus"]) <= {1, 2, 4, 8, 16, 32, 64}
    hit = sizes["interruptions"] > 0
    assert np.allclose(sizes["mtti_h"][hit], sizes["run_h"][hit] / sizes["interruptions"][hit])


def test_the_best_checkpoint_interval_is_near_young_daly():
    """Checkpoint too rarely and failures eat the work; too often and checkpoints do: ETTR peaks within a factor of
    two of Young/Daly's sqrt(2 x cost x MTBF) (4.1 h for 300 s checkpoints and a 100 h MTBF)."""
    cluster = parse_cluster("16x1:generic")
    jobs = [Job(i, 0.0, 2000 * 3600.0) for i in range(16)]
    young_daly_h = math.sqrt(2 * 300.0 * 100.0 * 3600.0) / 3600.0
    ettrs = {}
    for interval_h in (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0):
        options = RunOptions(
            preemption=PreemptionModel(checkpoint_interval_s=interval_h * 3600.0),
            failures=FailureModel(mtbf_h=100.0, repair_h=0.0, checkpoint_cost_s=300.0),
        )
        ettrs[interval_h] = summarize(
            simulate(cluster, jobs, make_scheduler("fifo"), seed=1, options=options)
        ).reliability.ettr
    best = max(ettrs, key=ettrs.get)
    assert young_daly_h / 2 <= best <= young_daly_h * 2
    assert ettrs[0.5] < ettrs[best] - 0.05 and ettrs[32.0] < ettrs[best] - 0.05
