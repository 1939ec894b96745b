"""The lookahead expert: it reads estimates only, it improves on its teachers where its belief is true, and
cloning can learn from it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from engine import parse_cluster, simulate
from engine.analysis.workload import make_jobs
from engine.errors import EngineError
from engine.rl.clone import CloneConfig, collect
from engine.rl.encoding import EncodingConfig, snapshot
from engine.rl.env import EnvConfig, GpuSchedulingEnv
from engine.rl.lookahead import Lookahead, LookaheadConfig, LookaheadScheduler, LookaheadSelector
from engine.rl.reward import RewardWeights, objective
from engine.rl.teacher import TeacherScheduler
from engine.sim.job import Job
from engine.sim.options import PreemptionModel, RunOptions
from engine.sim.simulator import Simulation
from engine.sim.state import Start

CLUSTER = "2x8:V100-32"
ENC = EncodingConfig(window=8, max_types=2, rules=("best-fit", "evict"), window_order="mixed")
COSTLY = PreemptionModel(checkpoint_interval_s=1800.0, restart_overhead_s=60.0)
CANDIDATES = ("short-spare-evict-est", "short-spare-evict", "short-spare", "short-fast", "fifo-fast")


def _state_at_zero(jobs: list[Job], running: dict[int, tuple[int, ...]], preemption: PreemptionModel = COSTLY):
    """A simulation at time 0 with ``running`` started (job -> GPUs) and the rest queued."""
    sim = Simulation(parse_cluster(CLUSTER), jobs, options=RunOptions(preemption=preemption))
    state = sim.reset()
    sim.apply([Start(j, g) for j, g in running.items()])
    return state


def test_the_expert_reads_estimates_never_true_durations():
    # The same workload twice, with different true durations and the same estimates: every believed run, and so
    # every choice and its cost, must be the same.
    rng = np.random.default_rng(3)
    gpus = [8, 4, 1, 2, 4, 8, 1, 1, 2, 4, 8, 1, 2, 1]
    jobs_a = [Job(i, 0.0, e, gpus=g, estimate_s=e) for i, (e, g) in enumerate(zip(rng.uniform(600, 20_000, 14), gpus))]
    jobs_b = [replace(j, duration_s=j.estimate_s * f) for j, f in zip(jobs_a, rng.uniform(0.2, 3.0, 14))]
    running = {0: tuple(range(8)), 1: (8, 9, 10, 11)}
    cfg = LookaheadConfig(candidates=CANDIDATES)
    choices, costs = [], []
    for jobs in (jobs_a, jobs_b):
        state = _state_at_zero(jobs, running)
        snap = snapshot(state, ENC)
        expert = Lookahead(cfg, ENC, RewardWeights())
        choices.append(expert.action(state, snap))
        costs.append([expert._cost(state, snap, a, "short-spare") for a in np.flatnonzero(snap.mask)])
        assert expert.rollouts > 0
    assert choices[0] == choices[1]
    assert costs[0] == costs[1]


def test_the_believed_runs_follow_the_runs_preemption_model():
    # The same moment under free and costly preemption: an eviction is believed to cost the victims what the
    # run's own model says (here 1000 s of work since the last checkpoint plus the 60 s restart), so the victim
    # ends later and evicting looks dearer under costly preemption (the objective counts JCT); waiting preempts
    # nothing and looks the same.
    jobs = [Job(0, 0.0, 9000.0, gpus=8), Job(1, 0.0, 9000.0, gpus=8), Job(2, 1000.0, 600.0, gpus=8)]
    costs = {}
    for name, model in (("free", PreemptionModel()), ("costly", COSTLY)):
        sim = Simulation(parse_cluster(CLUSTER), jobs, options=RunOptions(preemption=model))
        state = sim.reset()
        sim.step([Start(0, tuple(range(8))), Start(1, tuple(range(8, 16)))])  # to job 2's arrival at 1000 s
        assert state.now_s == 1000.0
        snap = snapshot(state, ENC)
        expert = Lookahead(LookaheadConfig(candidates=CANDIDATES), ENC, RewardWeights(wait=1.0, jct=1.0))
        costs[name] = {int(a): expert._cost(state, snap, int(a), "short-spare") for a in np.flatnonzero(snap.mask)}
    evicts = [a for a in costs["free"] if a != ENC.wait_action]
    assert evicts  # job 2 can only start by evicting
    for a in evicts:
        assert costs["costly"][a] > costs["free"][a]
    assert costs["costly"][ENC.wait_action] == costs["free"][ENC.wait_action]


@pytest.mark.parametrize("seed", range(4))
def test_where_its_belief_is_true_the_expert_is_no_worse_than_any_candidate(seed):
    # Exact estimates, every job known at time 0, free preemption: the believed run is the real future, and
    # rollout with the candidates' own continuations can only improve on the best of them (Bertsekas).
    cluster = parse_cluster(CLUSTER)
    gen = make_jobs(cluster, 30, 1.5, seed)
    jobs = [replace(j, submit_s=0.0, estimate_s=j.duration_s) for j in gen]
    rw = RewardWeights()
    expert = LookaheadScheduler(LookaheadConfig(candidates=CANDIDATES), ENC, rw)
    best = min(objective(simulate(cluster, jobs, TeacherScheduler(n, ENC)), rw) for n in CANDIDATES)
    assert objective(simulate(cluster, jobs, expert), rw) <= best + 1e-9


def test_the_expert_cuts_wait_against_its_teachers_under_costly_preemption():
    cluster = parse_cluster("4x8:V100-32")
    rw = RewardWeights()
    diffs = []
    for seed in range(3):
        jobs = make_jobs(cluster, 120, 1.5, seed)
        expert = LookaheadScheduler(LookaheadConfig(candidates=CANDIDATES), ENC, rw)
        mine = objective(simulate(cluster, jobs, expert, options=RunOptions(preemption=COSTLY)), rw)
        best = min(
            objective(simulate(cluster, jobs, TeacherScheduler(n, ENC), options=RunOptions(preemption=COSTLY)), rw)
            for n in CANDIDATES
        )
        diffs.append(mine - best)
    assert np.mean(diffs) < 0


def test_cloning_labels_with_the_expert():
    env_cfg = EnvConfig(
        clusters=("4x8:V100-32",), loads=(1.8,), n_jobs=80, encoding=ENC, options=(RunOptions(preemption=COSTLY),)
    )
    expert = LookaheadConfig(candidates=CANDIDATES)
    cfg = CloneConfig(teacher=CANDIDATES[0], expert=expert, episodes=1, rounds=1)
    data = collect(GpuSchedulingEnv(env_cfg), cfg, 0.99, range(2))
    plain = collect(GpuSchedulingEnv(env_cfg), replace(cfg, expert=None), 0.99, range(2))
    assert data["mask"][np.arange(len(data["action"])), data["action"]].all()  # every label is allowed
    n = min(len(data["action"]), len(plain["action"]))  # the expert drives its episodes elsewhere
    assert (data["action"][:n] != plain["action"][:n]).any()
    assert CloneConfig.from_dict(cfg.to_dict()) == cfg  # the expert travels with the card's config


@pytest.mark.parametrize(
    "data,match",
    [
        ({"teacher": "short-fast", "expert": {"candidates": ["short-spare"]}}, "must start with clone.teacher"),
        ({"teacher": "short-fast", "expert": {"candidates": ["short-fast", "oracle"]}}, "expert candidate"),
        ({"teacher": "short-fast", "expert": {"candidates": ["short-fast"], "max_jobs": 0}}, "max_jobs"),
        ({"teacher": "short-fast", "expert": {"candidates": ["short-fast"], "depth": 3}}, "unknown keys"),
        ({"teacher": "short-fast", "expert": "yes"}, "must be an object"),
    ],
)
def test_bad_expert_configs_are_one_line_errors(data, match):
    with pytest.raises(EngineError, match=match):
        CloneConfig.from_dict(data)


def test_unknown_rollout_scheduler_lists_the_valid_names():
    with pytest.raises(EngineError, match="short-spare"):
        Lookahead(LookaheadConfig(rollout="nope"), ENC, RewardWeights())


def test_a_model_cloned_from_the_expert_says_so_and_its_expert_runs_as_a_scheduler(tmp_path, monkeypatch, tiny_models):
    import json

    from engine.rl import cards
    from engine.rl.agent import USER_MODELS_ENV, ModelError
    from engine.rl.train import TrainConfig, train
    from engine.schedulers.registry import make_scheduler

    from .conftest import tiny_config

    base = tiny_config(tmp_path, "tiny-expert", "mlp")
    enc = EncodingConfig(window=4, max_types=2, rules=("best-fit", "evict"), window_order="mixed")
    expert = LookaheadConfig(candidates=("short-spare-evict-est", "short-fast"))
    cfg = replace(
        base,
        total_timesteps=128,
        env=replace(base.env, encoding=enc, options=(RunOptions(preemption=COSTLY),)),
        clone=CloneConfig(
            teacher="short-spare-evict-est", expert=expert, episodes=2, rounds=1, epochs=1, batch_size=64
        ),
    )
    card = train(cfg, models_dir=tmp_path / "models")
    assert TrainConfig.from_dict(card["training"]["config"]) == cfg
    text = cards.render_markdown(json.loads((tmp_path / "models" / "tiny-expert.json").read_text()))
    assert "behaviour cloning of the lookahead expert" in text and "`short-fast`" in text

    monkeypatch.setenv(USER_MODELS_ENV, str(tmp_path / "models"))
    sched = make_scheduler("expert:tiny-expert")
    cluster = parse_cluster("2x4:A100-80,2x4:V100-32")
    res = simulate(cluster, make_jobs(cluster, 25, 1.2, 0), sched, options=RunOptions(preemption=COSTLY))
    assert sched.name == "expert:tiny-expert" and (res.status == 0).all() and sched.expert.rollouts > 0
    monkeypatch.setenv(USER_MODELS_ENV, str(tiny_models))
    with pytest.raises(ModelError, match="not cloned from a lookahead expert"):
        make_scheduler("expert:tiny-mlp")


POOL = ("short-spare-evict-est", "short-spare", "short-fast", "fifo-fast")


def test_a_lookahead_selector_with_one_policy_is_that_policy():
    cluster = parse_cluster("4x8:V100-32")
    jobs = make_jobs(cluster, 80, 1.5, 0)
    options = RunOptions(preemption=COSTLY)
    alone = simulate(cluster, jobs, TeacherScheduler("short-spare-evict-est"), options=options)
    picker = LookaheadSelector(("short-spare-evict-est",), RewardWeights(), period_s=600.0)
    chosen = simulate(cluster, jobs, picker, options=options)
    assert picker.rollouts > 0
    np.testing.assert_array_equal(chosen.end_s, alone.end_s)
    assert chosen.gpu_ids == alone.gpu_ids


def test_the_lookahead_selector_reads_estimates_never_true_durations():
    # The same present twice, with different true durations and the same estimates: every believed run costs the same.
    rng = np.random.default_rng(5)
    gpus = [8, 4, 1, 2, 4, 8, 1, 1, 2, 4, 8, 1, 2, 1]
    jobs_a = [Job(i, 0.0, e, gpus=g, estimate_s=e) for i, (e, g) in enumerate(zip(rng.uniform(600, 20_000, 14), gpus))]
    jobs_b = [replace(j, duration_s=j.estimate_s * f) for j, f in zip(jobs_a, rng.uniform(0.2, 3.0, 14))]
    costs = []
    for jobs in (jobs_a, jobs_b):
        state = _state_at_zero(jobs, {0: tuple(range(8)), 1: (8, 9, 10, 11)})
        picker = LookaheadSelector(POOL, RewardWeights())
        costs.append([picker.cost(state, k) for k in range(len(POOL))])
    assert costs[0] == costs[1]
    assert len(set(costs[0])) > 1  # the policies finish this present differently


def test_the_lookahead_selector_chooses_at_most_once_a_period():
    cluster = parse_cluster("4x8:V100-32")
    jobs = make_jobs(cluster, 150, 1.5, 1)
    times = []

    class Counted(LookaheadSelector):
        def _finish(self, state, present, k):
            if k == 0:
                times.append(state.now_s)
            return super()._finish(state, present, k)

    picker = Counted(POOL, RewardWeights(), period_s=3600.0)
    result = simulate(cluster, jobs, picker, options=RunOptions(preemption=COSTLY))
    assert len(times) >= 3 and picker.rollouts == len(POOL) * len(times)
    assert all(b - a >= 3600.0 for a, b in zip(times, times[1:]))
    assert np.nanmax(result.end_s) > times[-1]


@pytest.mark.parametrize("seed", range(3))
def test_where_its_belief_is_true_the_lookahead_selector_is_no_worse_than_its_policies(seed):
    # Exact estimates, every job known at time 0, free preemption: each believed run is what that policy would do
    # from here, so switching only to a strictly better continuation can only improve on the best policy alone.
    cluster = parse_cluster(CLUSTER)
    jobs = [replace(j, submit_s=0.0, estimate_s=j.duration_s) for j in make_jobs(cluster, 30, 1.5, seed)]
    rw = RewardWeights()
    best = min(objective(simulate(cluster, jobs, TeacherScheduler(n)), rw) for n in POOL)
    picker = LookaheadSelector(POOL, rw, period_s=0.0)
    assert objective(simulate(cluster, jobs, picker), rw) <= best + 1e-9


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"period_s": -1.0}, "period_s must be"),
        ({"period_s": float("nan")}, "period_s must be"),
        ({"period_s": True}, "period_s must be"),
        ({"max_jobs": 0}, "max_jobs"),
        ({"max_jobs": True}, "max_jobs"),
    ],
)
def test_bad_lookahead_selector_settings_are_one_line_errors(kw, match):
    with pytest.raises(EngineError, match=match):
        LookaheadSelector(POOL, RewardWeights(), **kw)
