"""Idle nodes that power down (RunOptions.power_down, engine/sim/power.py): a hand-worked run, the energy it saves
on an under-loaded cluster and the wait it costs, and nothing changes while it is off."""

from __future__ import annotations

import pytest

from engine import EnergyModel, Job, RunOptions, make_scheduler, parse_cluster, simulate
from engine.analysis.energy import power_series
from engine.analysis.metrics import job_frame, summarize
from engine.sim.options import PowerDownModel
from engine.traces.generator import generate
from tests.sim.test_reference_hashes import result_hash

POWER_DOWN = RunOptions(power_down=PowerDownModel(idle_timeout_s=100.0, wake_s=50.0))


def hand_worked(options: RunOptions):
    # Two nodes of one A100-80 each (training speed 2.4: 2400 reference seconds take 1000 s; idle 60 W, busy
    # 304 W). Job 0 runs 0-1000 on node 0. Job 1 arrives at 500: node 1 has idled since 0, so it powered down at
    # 100 and wakes for 50 s. Job 2 arrives at 1050 on node 0, idle only since 1000: awake.
    jobs = [Job(i, t, 2400.0, job_type="training") for i, t in enumerate((0.0, 500.0, 1050.0))]
    return simulate(parse_cluster("2x1:A100-80"), jobs, make_scheduler("fifo"), options=options)


def test_a_job_on_a_powered_down_node_pays_the_wake_delay_by_hand():
    on, off = hand_worked(POWER_DOWN), hand_worked(RunOptions())
    assert off.end_s.tolist() == [1000.0, 1500.0, 2050.0]
    assert on.end_s.tolist() == pytest.approx([1000.0, 1550.0, 2050.0])  # job 1 ends 50 s (the wake) later
    assert on.first_start_s.tolist() == off.first_start_s.tolist() == [0.0, 500.0, 1050.0]
    assert on.wake_gpu_s.tolist() == pytest.approx([0.0, 50.0 * 2.4, 0.0])  # reference GPU-seconds, as restarts
    assert on.wakes.tolist() == [0, 1, 0]
    assert job_frame(on)["wait_s"].tolist() == pytest.approx([0.0, 50.0, 0.0])  # the wake counts as wait
    assert job_frame(off)["wait_s"].tolist() == [0.0, 0.0, 0.0]
    # Down: node 1 from 100 to 500; at the end node 1 from 1650 (idle since 1550) and node 0 from 2150, for good.
    assert on.sleep_node.tolist() == [1, 0, 1]
    assert on.sleep_start_s.tolist() == pytest.approx([100.0, 2150.0, 1650.0])
    assert on.sleep_end_s.tolist() == [500.0, float("inf"), float("inf")]


def test_powered_down_nodes_draw_the_sleep_power_by_hand():
    model = EnergyModel(pue=1.0, carbon_g_per_kwh=500.0)
    held_s = 1000.0 + 1050.0 + 1000.0  # job 1 holds its GPU while the node wakes
    full_j = 2 * 60.0 * 2050.0 + (304.0 - 60.0) * held_s  # both GPUs idle power over the makespan, plus the jobs
    for sleep_w in (0.0, 10.0):
        on = hand_worked(RunOptions(power_down=PowerDownModel(idle_timeout_s=100.0, wake_s=50.0, sleep_w=sleep_w)))
        saved_j = (60.0 - sleep_w) * (400.0 + 400.0)  # node 1 down 100-500 and 1650-2050 (the makespan's end)
        s = summarize(on, model).energy
        assert s.energy_kwh == pytest.approx((full_j - saved_j) / 3.6e6)
        assert s.idle_energy_kwh == pytest.approx((60.0 * (2 * 2050.0 - held_s) - saved_j) / 3.6e6)
        assert s.co2_kg == pytest.approx(s.energy_kwh * 0.5)
    t, power_w = power_series(hand_worked(POWER_DOWN), model)
    assert power_w[t.tolist().index(100.0)] == pytest.approx(304.0)  # node 0 busy, node 1 off
    assert power_w[-1] == 0.0  # everything down at the end


def test_power_down_saves_energy_on_an_under_loaded_cluster_and_costs_wait():
    cluster = parse_cluster("4x8:A100-80")
    jobs = generate(cluster, 150, load=0.3, seed=1)
    model = EnergyModel()
    off = simulate(cluster, jobs, make_scheduler("fifo"))
    on = simulate(cluster, jobs, make_scheduler("fifo"), options=RunOptions(power_down=PowerDownModel(600.0)))
    s_off, s_on = summarize(off, model), summarize(on, model)
    assert s_on.energy.energy_kwh < 0.9 * s_off.energy.energy_kwh
    woke = on.wake_gpu_s > 0
    assert woke.any()
    # a job that woke a node waits the wake (300 s) longer than it did on the same start, and ends that later
    frame_on, frame_off = job_frame(on), job_frame(off)
    assert s_on.mean_wait_s > s_off.mean_wait_s and s_on.mean_jct_s > s_off.mean_jct_s
    same_start = woke & (on.first_start_s == off.first_start_s) & (on.preemptions == 0)
    assert same_start.sum() >= 5
    assert (frame_on["wait_s"] - frame_off["wait_s"])[same_start].to_numpy() == pytest.approx(300.0)
    assert (frame_on["jct_s"] - frame_off["jct_s"])[same_start].to_numpy() == pytest.approx(300.0)


def test_a_timeout_never_reached_changes_nothing():
    cluster = parse_cluster("4x8:A100-80,2x4:V100-32")
    jobs = generate(cluster, 200, load=1.3, seed=2)
    off = simulate(cluster, jobs, make_scheduler("tiresias"), seed=3)
    never = RunOptions(power_down=PowerDownModel(idle_timeout_s=1e9))
    assert result_hash(simulate(cluster, jobs, make_scheduler("tiresias"), seed=3, options=never)) == result_hash(off)
    assert off.sleep_node.size == 0 and not off.wake_gpu_s.any()
