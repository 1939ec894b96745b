"""Metrics on tiny hand-worked runs and on vectors with known Gini / Jain values."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import Job, Preempt, PreemptionModel, RunOptions, Simulation, Start, make_scheduler, parse_cluster, simulate
from engine.analysis.deadlines import DeadlineSummary
from engine.analysis.elastic import ElasticSummary
from engine.analysis.energy import EnergySummary
from engine.analysis.metrics import (
    ALL_METRICS,
    DEADLINE_METRICS,
    ELASTIC_METRICS,
    ENERGY_METRICS,
    METRICS,
    RELIABILITY_METRICS,
    Summary,
    best_columns,
    compare,
    fragmentation,
    gini,
    gpu_busy_s,
    jain,
    job_frame,
    summarize,
    user_frame,
)
from engine.analysis.reliability import ReliabilitySummary


def fifo_run():
    """2 GPUs, strict FIFO. Job 0 (2 GPUs) runs 0-100; job 3 (4 GPUs) is unschedulable; jobs 1 and 2 wait
    for job 0 and run 100-150 and 100-130."""
    jobs = [Job(0, 0.0, 100.0, gpus=2), Job(1, 10.0, 50.0), Job(2, 20.0, 30.0, user="b"), Job(3, 0.0, 10.0, gpus=4)]
    return simulate(parse_cluster("1x2:generic"), jobs, make_scheduler("fifo"))


def test_summary_of_hand_worked_fifo_run():
    s = summarize(fifo_run())
    assert (s.jobs, s.completed, s.unschedulable, s.preemptions) == (4, 3, 1, 0)
    # waits 0, 90, 80; JCTs 100, 140, 110
    assert s.mean_wait_s == pytest.approx(170 / 3)
    assert s.p50_wait_s == pytest.approx(80)
    assert s.p95_wait_s == pytest.approx(80 + 0.9 * 10)  # linear interpolation between 80 and 90
    assert s.max_wait_s == 90
    assert s.mean_jct_s == pytest.approx(350 / 3)
    assert s.max_jct_s == 140
    # bounded slowdowns 100/100, 140/50, 110/30
    assert s.mean_bounded_slowdown == pytest.approx((1 + 2.8 + 110 / 30) / 3)
    assert s.makespan_s == 150
    assert s.utilization == pytest.approx((200 + 50 + 30) / (2 * 150))
    # per-user mean waits: user0 (0 + 90) / 2 = 45, b 80
    assert s.gini_user_wait == pytest.approx(2 * 35 / (2 * 2**2 * 62.5))  # sum |xi - xj| / (2 n^2 mean)
    assert s.jain_user_wait == pytest.approx(125**2 / (2 * (45**2 + 80**2)))
    # GPU 0 busy 150 s, GPU 1 busy 130 s
    assert s.gini_gpu_busy == pytest.approx(2 * 20 / (2 * 2**2 * 140))
    assert s.fragmentation == 0 and s.comm_overhead_gpu_h == 0 and s.lost_gpu_h == 0


def test_job_frame_of_hand_worked_fifo_run():
    f = job_frame(fifo_run())
    assert list(f["job_id"]) == [0, 1, 2, 3]
    assert list(f["status"]) == ["completed", "completed", "completed", "unschedulable"]
    np.testing.assert_allclose(f["wait_s"][:3], [0, 90, 80])
    np.testing.assert_allclose(f["jct_s"][:3], [100, 140, 110])
    np.testing.assert_allclose(f["slowdown"][:3], [1, 140 / 50, 110 / 30])
    np.testing.assert_allclose(f["gpu_s"], [200, 50, 30, 0])
    # without preemption, wait is exactly first start - submit
    np.testing.assert_allclose(f["wait_s"][:3], (f["start_s"] - f["submit_s"])[:3])
    assert f["wait_s"][3:].isna().all() and "4 GPUs" in f["reason"][3]
    assert list(f["gpu_type"]) == ["generic", "generic", "generic", ""]


def test_user_frame_of_hand_worked_fifo_run():
    u = user_frame(fifo_run()).set_index("user")
    assert list(u.index) == ["b", "user0"]
    assert u.loc["user0", "jobs"] == 3 and u.loc["user0", "completed"] == 2 and u.loc["user0", "unschedulable"] == 1
    assert u.loc["user0", "mean_wait_s"] == 45 and u.loc["b", "mean_wait_s"] == 80
    assert u.loc["b", "gpu_h"] == pytest.approx(30 / 3600)
    assert u["gpu_share"].sum() == pytest.approx(1.0)
    assert u.loc["b", "gpu_share"] == pytest.approx(30 / 280)


@pytest.mark.parametrize("interval, lost_s, end_s", [(None, 0.0, 120.0), (4.0, 2.0, 122.0)])
def test_wait_counts_time_back_in_the_queue_after_preemption(interval, lost_s, end_s):
    # Job 0 runs 0-10, is preempted for job 1 (10-30), resumes at 30. A 4 s checkpoint interval rolls its
    # 10 s of work back to 8 s, so it runs 92 s more (2 GPU-s lost).
    jobs = [Job(0, 0.0, 100.0), Job(1, 10.0, 20.0)]
    sim = Simulation(
        parse_cluster("1x1:generic"),
        jobs,
        options=RunOptions(preemption=PreemptionModel(checkpoint_interval_s=interval)),
    )
    assert sim.reset().now_s == 0
    assert sim.step([Start(0, (0,))]) and sim.now_s == 10
    assert sim.step([Preempt(0), Start(1, (0,))]) and sim.now_s == 30
    assert not sim.step([Start(0, (0,))])
    r = sim.result()
    f = job_frame(r)
    assert f["end_s"][0] == pytest.approx(end_s)
    assert f["run_s"][0] == pytest.approx(end_s - 20)
    assert f["wait_s"][0] == pytest.approx(20)  # first start - submit would say 0
    assert f["start_s"][0] == 0
    s = summarize(r)
    assert s.preemptions == 1
    assert s.lost_gpu_h == pytest.approx(lost_s / 3600)
    assert s.mean_wait_s == pytest.approx(10)
    assert s.utilization == pytest.approx(1.0)  # the GPU never idled


def test_fractional_job_strands_capacity():
    # A half-GPU job alone on a 2-GPU cluster for 100 s: 0.5 of 1.5 free GPUs is stranded.
    r = simulate(parse_cluster("1x2:generic"), [Job(0, 0.0, 100.0, gpu_fraction=0.5)], make_scheduler("first-fit"))
    s = summarize(r)
    assert s.fragmentation == pytest.approx(0.5 / 1.5)
    assert fragmentation(r) == s.fragmentation
    assert s.utilization == pytest.approx(50 / 200)
    np.testing.assert_allclose(gpu_busy_s(r), [50, 0])
    assert s.gini_gpu_busy == pytest.approx(0.5)


def test_single_short_job():
    r = simulate(parse_cluster("1x2:generic"), [Job(0, 3.0, 5.0)], make_scheduler("fifo"))
    s = summarize(r)
    assert (s.mean_wait_s, s.mean_jct_s, s.makespan_s) == (0, 5, 5)
    assert s.mean_bounded_slowdown == 1  # max(1, 5 / max(5, 10))
    assert s.utilization == pytest.approx(0.5)
    assert s.gini_user_wait == 0 and s.jain_user_wait == 1  # one user, zero wait: the all-zero conventions
    assert s.p99_wait_s == 0 and s.max_jct_s == 5


def test_every_job_unschedulable():
    jobs = [Job(0, 0.0, 10.0, gpus=2), Job(1, 5.0, 10.0, vram_gib=100.0)]
    r = simulate(parse_cluster("1x1:generic"), jobs, make_scheduler("fifo"))
    s = summarize(r)
    assert (s.jobs, s.completed, s.unschedulable) == (2, 0, 2)
    assert math.isnan(s.mean_wait_s) and math.isnan(s.p95_jct_s) and math.isnan(s.mean_bounded_slowdown)
    assert s.makespan_s == 0 and s.utilization == 0 and s.gini_gpu_busy == 0
    assert math.isnan(s.gini_user_wait) and math.isnan(s.jain_user_wait)  # no user has a wait at all
    d = s.to_dict()
    assert d["mean_wait_s"] is None and d["completed"] == 0 and d["utilization"] == 0.0
    assert user_frame(r)["completed"].tolist() == [0]


def test_busy_time_from_segments_matches_the_busy_series():
    # Two sources computed independently by the simulator: run segments and the busy-GPU time series.
    rng = np.random.default_rng(3)
    jobs = []
    t = 0.0
    for i in range(60):
        t += float(rng.exponential(20))
        frac = float(rng.choice([0.25, 0.5, 1.0]))
        gpus = 1 if frac < 1 else int(rng.choice([1, 2, 4]))
        jobs.append(Job(i, t, float(rng.uniform(10, 200)), gpus=gpus, gpu_fraction=frac, user=f"u{i % 3}"))
    r = simulate(parse_cluster("2x4:generic"), jobs, make_scheduler("best-fit"))
    integral = float(np.dot(r.series_busy_gpus[:-1], np.diff(r.series_t)))
    assert gpu_busy_s(r).sum() == pytest.approx(integral)
    s = summarize(r)
    assert s.utilization == pytest.approx(integral / (8 * s.makespan_s))
    assert 0 < s.fragmentation < 1
    assert job_frame(r)["gpu_s"].sum() == pytest.approx(integral)


@pytest.mark.parametrize(
    "values, g, j",
    [
        ([1, 1, 1, 1], 0.0, 1.0),
        ([0, 0, 0, 1], 0.75, 0.25),
        ([1, 2, 3], 8 / 36, 36 / 42),
        ([5], 0.0, 1.0),
        ([0, 0, 0], 0.0, 1.0),  # conventions: nobody got anything, so everyone got the same
    ],
)
def test_gini_and_jain_on_known_vectors(values, g, j):
    assert gini(values) == pytest.approx(g)
    assert jain(values) == pytest.approx(j)
    assert gini(values[::-1]) == pytest.approx(g)  # order does not matter


@given(st.lists(st.one_of(st.just(0.0), st.floats(1e-3, 1e6)), min_size=1, max_size=40), st.floats(1e-3, 1e3))
def test_gini_and_jain_bounds_and_scale_invariance(values, scale):
    n = len(values)
    g, j = gini(values), jain(values)
    assert -1e-12 <= g <= (n - 1) / n + 1e-12
    assert 1 / n - 1e-12 <= j <= 1 + 1e-12
    assert gini([v * scale for v in values]) == pytest.approx(g, abs=1e-9)
    assert jain([v * scale for v in values]) == pytest.approx(j, abs=1e-9)
    # the O(n log n) Gini equals the definition sum |xi - xj| / (2 n^2 mean)
    x = np.array(values)
    if x.sum() > 0:
        assert g == pytest.approx(np.abs(x[:, None] - x[None, :]).sum() / (2 * n * n * x.mean()), abs=1e-9)


def test_gini_and_jain_of_nothing_are_undefined():
    assert math.isnan(gini([])) and math.isnan(jain([]))
    with pytest.raises(ValueError, match=">= 0"):
        gini([1, -1])


def test_registry_matches_summary_fields():
    assert [f.name for f in dataclasses.fields(Summary)] == [*METRICS, "energy", "reliability", "deadlines", "elastic"]
    assert [f.name for f in dataclasses.fields(EnergySummary)] == list(ENERGY_METRICS)
    assert [f.name for f in dataclasses.fields(ReliabilitySummary)] == list(RELIABILITY_METRICS)
    assert [f.name for f in dataclasses.fields(DeadlineSummary)] == list(DEADLINE_METRICS)
    assert [f.name for f in dataclasses.fields(ElasticSummary)] == list(ELASTIC_METRICS)
    for key, m in ALL_METRICS.items():
        assert m.better in ("lower", "higher", None), key
        assert m.label and m.doc and m.unit in ("s", "GPU-h", "jobs", "count", "ratio", "kWh", "USD", "USD/h", "kg"), (
            key
        )


def test_compare_and_best_columns():
    # first-fit lets job 2 overtake the blocked 2-GPU job 1; strict fifo does not.
    jobs = [Job(0, 0.0, 100.0), Job(1, 1.0, 10.0, gpus=2), Job(2, 2.0, 10.0)]
    cluster = parse_cluster("1x2:generic")
    results = {name: simulate(cluster, jobs, make_scheduler(name)) for name in ("fifo", "first-fit")}
    table = compare(results)
    assert list(table.index) == list(METRICS) and list(table.columns) == ["fifo", "first-fit"]
    assert table.loc["mean_wait_s", "fifo"] == pytest.approx((0 + 99 + 108) / 3)
    assert table.loc["mean_wait_s", "first-fit"] == pytest.approx((0 + 99 + 0) / 3)
    best = best_columns(table)
    assert best["mean_wait_s"] == ("first-fit",)
    assert best["utilization"] == ("first-fit",)  # same work, shorter makespan
    assert "jobs" not in best  # no direction
    assert "preemptions" not in best  # a tie everywhere marks nothing
    same = compare({"a": summarize(results["fifo"]), "b": results["fifo"]})
    assert best_columns(same) == {}
