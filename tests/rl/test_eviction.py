"""The eviction policy on its own (its effect through actions and observations is tested in test_env.py)."""

from __future__ import annotations

import pytest

from engine.rl.encoding import EncodingConfig
from engine.rl.env import EnvConfig, GpuSchedulingEnv
from engine.rl.eviction import evictable, eviction_cost_gpu_s, find_victims
from engine.sim.job import Job
from engine.sim.options import PreemptionModel, RunOptions

FREE = PreemptionModel()
COSTLY = PreemptionModel(checkpoint_interval_s=1800.0, restart_overhead_s=60.0)


def _state_at_10(preemption: PreemptionModel = FREE):
    """One 8-GPU node at t=10: jobs 0, 1, 2 (2 GPUs each, estimated to end at 1,000, 5,000 and 5,000 s) and a
    half-GPU job 3 run since t=0, job 4 (1 GPU) started at t=10 and took the last idle GPU, job 5 (4 GPUs, 100 s)
    waits (an eviction is offered to it, so the episode stops at t=10)."""
    jobs = (
        Job(0, 0.0, 1000.0, gpus=2, estimate_s=1000.0),
        Job(1, 0.0, 5000.0, gpus=2, estimate_s=5000.0),
        Job(2, 0.0, 5000.0, gpus=2, estimate_s=5000.0),
        Job(3, 0.0, 5000.0, gpus=1, gpu_fraction=0.5, estimate_s=5000.0),
        Job(4, 10.0, 50.0, gpus=1, estimate_s=50.0),
        Job(5, 10.0, 100.0, gpus=4, estimate_s=100.0),
    )
    enc = EncodingConfig(window=4, max_types=1, rules=("first-fit", "evict"))
    env = GpuSchedulingEnv(
        EnvConfig(clusters=("1x8:V100-32",), encoding=enc, options=(RunOptions(preemption=preemption),))
    )
    env.reset(seed=0, options={"cluster": "1x8:V100-32", "jobs": jobs})
    for _ in range(5):  # jobs 0-3 at t=0, job 4 at t=10
        env.step(enc.action(0, 0, 0))
    state = env.simulation.state
    assert state.now_s == 10.0 and sorted(state.running) == [0, 1, 2, 3, 4] and list(state.queue) == [5]
    return state


def test_victims_are_whole_gpu_jobs_started_before_now_latest_estimated_end_first():
    state = _state_at_10()
    # Job 3 is fractional and job 4 started now: never victims. Jobs 1 and 2 end together: higher id first.
    assert {t: [r.job.job_id for r in rs] for t, rs in evictable(state, None).items()} == {0: [2, 1, 0]}


def test_an_eviction_frees_just_enough_gpus_and_never_a_job_that_ends_sooner():
    state = _state_at_10()
    # Job 5 needs 4 GPUs, none is idle: the two latest ends free 4; job 0 is not needed.
    victims, work = find_victims(state, [5], [[False]], 1, lambda job_type: [1.0], "type", None)
    assert victims == {(0, 0): (2, 1)} and work == {(0, 0): 2 * 2 * 4990.0}
    # A job estimated to outlast every running one may evict none of them.
    assert find_victims(state, [5], [[False]], 1, lambda job_type: [1 / 100.0], "type", None) == ({}, {})


@pytest.mark.parametrize("preemption, lost_s", [(FREE, 0.0), (COSTLY, 10.0 + 60.0)])
def test_an_evictions_cost_is_the_victims_lost_work_and_restarts_in_gpu_seconds(preemption, lost_s):
    state = _state_at_10(preemption)
    assert eviction_cost_gpu_s(state, {(0, 0): (2, 1)}) == {(0, 0): pytest.approx(2 * 2 * lost_s)}
