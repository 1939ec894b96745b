"""The environment contract: checkers, exact masks, one engine (env == simulate(fifo)), reward identity."""

from __future__ import annotations

from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest

from engine import Start, make_scheduler, parse_cluster, simulate
from engine.analysis.presets import PRESETS
from engine.analysis.workload import TRAIN_SEED_MIN, make_jobs
from engine.errors import EngineError
from engine.rl.agent import RLScheduler
from engine.rl.encoding import EVICT, HISTORY_HEAD, RULES, EncodingConfig, RulePlacements, decode, encode, snapshot
from engine.rl.env import ENV_ID, EnvConfig, GpuSchedulingEnv
from engine.rl.reward import RewardWeights, objective, objective_terms
from engine.schedulers.fgd import FgdPlacement
from engine.schedulers.placement import first_fit
from engine.sim.job import Job
from engine.sim.options import FailureModel, PreemptionModel, RunOptions
from engine.sim.simulator import COMPLETED, FAILED

from .conftest import SMALL

MIXED = "2x4:A100-80,3x4:V100-32,2x2:T4"
#: Shared inference GPUs beside whole-GPU training jobs of 1-4 GPUs (the kind of workload fgd is for).
FRACTIONAL = {
    "mix": {"inference": 0.6, "training": 0.4},
    "types": {
        "inference": {"fraction": {"0.25": 0.5, "0.5": 0.5}, "vram_gib": {"0": 1.0}, "median_s": 1800, "sigma": 1.0},
        "training": {"gpus": {"1": 0.5, "2": 0.3, "4": 0.2}, "vram_gib": {"16": 1.0}, "median_s": 3600, "sigma": 0.7},
    },
}


def _env(**kw) -> GpuSchedulingEnv:
    return GpuSchedulingEnv(EnvConfig(**{"clusters": (MIXED,), "loads": (1.2,), "n_jobs": 40, **kw}))


def test_registered_and_passes_gymnasium_checker():
    from gymnasium.utils.env_checker import check_env

    env = gym.make(ENV_ID, config={"clusters": ["2x4:V100-32"], "n_jobs": 20})
    check_env(env.unwrapped, skip_render_check=True)


def test_passes_sb3_checker():
    from stable_baselines3.common.env_checker import check_env

    check_env(_env(n_jobs=20), warn=True)


def _random_rewards(env: GpuSchedulingEnv, seed: int) -> list[float]:
    """The rewards of one episode of ``env`` from ``reset(seed=seed)``, each action drawn uniformly among the valid
    ones by a generator of the same seed."""
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    rewards, done = [], False
    while not done:
        _, r, done, _, _ = env.step(rng.choice(np.flatnonzero(env.action_masks())))
        rewards.append(r)
    return rewards


def test_seeded_episodes_repeat_bit_for_bit():
    def run(seed):
        env = _env()
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        trace, done = [obs["jobs"].tobytes()], False
        while not done:
            obs, r, done, _, _ = env.step(rng.choice(np.flatnonzero(env.action_masks())))
            trace.append((obs["groups"].tobytes(), r))
        return trace, env.result.first_start_s.tobytes()

    assert run(3) == run(3)
    assert run(3) != run(4)


@pytest.mark.parametrize("whole_node", [False, True])
@pytest.mark.parametrize("window_order", ["arrival", "mixed"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_masked_play_keeps_every_constraint_and_ends(seed, window_order, whole_node):
    rules = tuple(r for r in RULES if r != EVICT)  # every packing rule
    enc = EncodingConfig(window=6, max_types=3, rules=rules, window_order=window_order, whole_node=whole_node)
    env = _env(encoding=enc)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    state, steps, done = env.simulation.state, 0, False
    while not done:
        mask = env.action_masks()
        assert mask.any()
        assert mask[-1] == bool(state.running)  # wait: allowed exactly while something runs
        # Exactness: every allowed action decodes to a start the engine accepts.
        for a in np.flatnonzero(mask[:-1]):
            (d,) = decode(state, int(a), env.config.encoding)
            assert isinstance(d, Start) and state.validate(d) is None
        _, _, done, truncated, info = env.step(rng.choice(np.flatnonzero(mask)))
        assert not truncated and not info["invalid_action"]
        steps += 1
        assert steps < 10 * env.config.n_jobs
    res = env.result
    assert (res.status == 0).all() and np.isfinite(res.end_s).all()


def test_fgd_rule_places_as_an_fgd_placement_kept_for_the_whole_run():
    # Without the run's RulePlacements the rule builds a fresh FgdPlacement per start; its profile of the submitted
    # shapes follows from the state, so fresh, kept by RulePlacements or kept (and reset) by hand, each start is
    # the same.
    enc = EncodingConfig(window=4, max_types=1, rules=("fgd", "topo-pack"))
    env = GpuSchedulingEnv(
        EnvConfig(clusters=("6x4:A10",), loads=(1.5,), n_jobs=60, encoding=enc, workloads=(FRACTIONAL,))
    )
    env.reset(seed=0)
    kept = FgdPlacement()
    kept.reset(env.simulation.state)
    run_rules = RulePlacements()  # what the env and the rl: scheduler keep per run
    rng, done, compared = np.random.default_rng(0), False, set()
    while not done:
        state, mask = env.simulation.state, env.action_masks()
        for slot, j in enumerate(env.snapshot.window):
            if mask[enc.action(slot, 0, 0)]:
                (d,) = decode(state, enc.action(slot, 0, 0), enc, env.snapshot)
                (e,) = decode(state, enc.action(slot, 0, 0), enc, env.snapshot, run_rules)
                assert d.gpu_ids == e.gpu_ids == kept(state.of_type(0), state.jobs[j])
                compared.add(state.jobs[j].gpu_fraction < 1.0)
        _, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
    assert compared == {True, False}  # fractional and whole-GPU starts were both compared


def test_masked_out_action_becomes_wait_and_is_reported():
    env = _env()
    env.reset(seed=0)
    while env.action_masks()[-1] == 0 or env.action_masks()[:-1].all():
        env.step(int(np.flatnonzero(env.action_masks())[0]))
    bad = int(np.flatnonzero(~env.action_masks())[0])
    with pytest.raises(EngineError, match="not feasible"):
        decode(env.simulation.state, bad, env.config.encoding)
    _, _, _, _, info = env.step(bad)
    assert info["invalid_action"] and "started" not in info


def _fifo_action(env: GpuSchedulingEnv) -> int:
    """The action that reproduces FIFO: start the oldest job where first-fit puts it, else wait."""
    state, enc = env.simulation.state, env.config.encoding
    head = next(iter(state.queue))
    gpus = first_fit(state, state.jobs[head])
    if gpus is None:
        return enc.wait_action
    return enc.action(0, int(state.layout.gpu_type[gpus[0]]), enc.rules.index("first-fit"))


@pytest.mark.parametrize(
    "cluster,load,seed", [(MIXED, 1.3, 0), ("4x8:V100-32", 0.9, 5), ("2x8:A100-80,4x2:T4", 2.0, 7)]
)
def test_env_driven_by_fifo_choices_equals_simulate_fifo(cluster, load, seed):
    c = parse_cluster(cluster)
    jobs = make_jobs(c, 80, load, seed)
    ref = simulate(c, jobs, make_scheduler("fifo"))
    env = GpuSchedulingEnv(EnvConfig(clusters=(cluster,)))
    env.reset(seed=seed, options={"cluster": c, "jobs": jobs})
    done = False
    while not done:
        _, _, done, _, info = env.step(_fifo_action(env))
        assert not info["invalid_action"]
    res = env.result
    np.testing.assert_array_equal(res.first_start_s, ref.first_start_s)
    np.testing.assert_array_equal(res.end_s, ref.end_s)
    assert res.gpu_ids == ref.gpu_ids


@pytest.mark.parametrize(
    "weights",
    [
        RewardWeights(),
        RewardWeights(wait=0.5, bounded_slowdown=0.1, utilization_band=2.0, fairness=1.0, comm=3.0),
        RewardWeights(wait=0.0, fairness=1.0, band_low=0.7, band_high=0.9, bsld_tau_s=60.0, bounded_slowdown=1.0),
        RewardWeights(wait=1.0, jct=0.5, comm=1.0),
        RewardWeights(wait=0.0, jct=1.0, wait_scale_s=60.0),
        RewardWeights(wait=1.0, deadline=2.0),
        RewardWeights(wait=0.0, jct=1.0, fairness=0.5, deadline=1.0),
    ],
)
def test_episode_return_equals_the_objective(weights):
    # With a deadline weight, on a workload with ElasticFlow deadlines (a third best effort).
    env = _env(reward=weights, workload=DEADLINE_WORKLOAD if weights.deadline else {})
    total = sum(_random_rewards(env, 11))
    assert total == pytest.approx(-objective(env.result, weights), rel=1e-9, abs=1e-12)


DEADLINE_WORKLOAD = {"deadlines": "elasticflow", "best_effort": 0.3}


def test_deadline_term_is_the_missed_share_and_is_paid_as_deadlines_pass():
    from engine.analysis.deadlines import summarize_deadlines

    weights = RewardWeights(wait=0.0, deadline=1.0)
    env = _env(reward=weights, workload=DEADLINE_WORKLOAD)
    rewards = _random_rewards(env, 5)
    summary = summarize_deadlines(env.result)
    assert 0 < summary.deadline_missed < summary.deadline_jobs < len(env.result.jobs)
    assert objective_terms(env.result)["deadline"] == pytest.approx(1.0 - summary.deadline_ratio)
    assert sum(rewards) == pytest.approx(summary.deadline_ratio - 1.0, rel=1e-9)
    # Misses are booked when they happen, in steps of 1 / (jobs with a deadline), not all at the end.
    early = -np.array(rewards[:-1]) * summary.deadline_jobs
    assert early.sum() >= 1 and np.allclose(early, np.round(early)) and (early >= 0).all()


def test_reward_weights_leave_deadline_out_of_their_dict_when_off():
    assert "deadline" not in RewardWeights().to_dict()
    assert RewardWeights.from_dict(RewardWeights(deadline=2.0).to_dict()) == RewardWeights(deadline=2.0)
    with pytest.raises(EngineError, match="reward.deadline must be a number >= 0"):
        RewardWeights(deadline=-1.0)


def test_objective_terms_by_hand():
    # Two 1-GPU jobs of 100 s on one GPU, both at t=0: waits 0 and 100, one user each.
    c = parse_cluster("1x1:V100-32")
    jobs = (Job(0, 0.0, 100.0, user="a"), Job(1, 0.0, 100.0, user="b"))
    res = simulate(c, jobs, make_scheduler("fifo"))
    t = objective_terms(res)
    assert t["wait"] == 50.0
    assert t["jct"] == 150.0
    assert t["bounded_slowdown"] == pytest.approx((1.0 + 2.0) / 2)
    assert t["fairness"] == pytest.approx(0.5)  # Gini of (0, 100)
    # Utilisation is 100 % for the whole makespan: 0.2 above the 80 % band top.
    assert t["utilization_band"] == pytest.approx(0.2)
    assert t["comm"] == 0.0


def test_a_failed_job_counts_in_the_objective_like_a_completed_one():
    # As above, but the first job's run ends failed (a trace's failed state): its 0 s wait still counts, so the
    # mean wait stays 50 (left out, it would be 100: a scheduler would gain from a job failing).
    c = parse_cluster("1x1:V100-32")
    jobs = (Job(0, 0.0, 100.0, user="a", failed=True), Job(1, 0.0, 100.0, user="b"))
    res = simulate(c, jobs, make_scheduler("fifo"))
    assert list(res.status) == [FAILED, COMPLETED]
    t = objective_terms(res)
    assert (t["wait"], t["jct"]) == (50.0, 150.0)
    assert t["fairness"] == pytest.approx(0.5)


def test_env_refuses_cluster_with_too_many_types():
    with pytest.raises(EngineError, match="max_types"):
        GpuSchedulingEnv(EnvConfig(clusters=(MIXED,), encoding=EncodingConfig(max_types=2)))


def test_snapshot_window_orders():
    c = parse_cluster("1x8:V100-32")
    jobs = tuple(Job(i, 0.0, 1000.0 * (10 - i), gpus=8 if i == 0 else 1) for i in range(10))
    env = GpuSchedulingEnv(
        EnvConfig(clusters=("1x8:V100-32",), encoding=EncodingConfig(window=4, window_order="mixed"))
    )
    env.reset(seed=0, options={"cluster": c, "jobs": jobs})
    # Job 0 took the whole node at t=0; at its end the window holds the 2 oldest, then the 2 shortest that fit.
    env.step(env.config.encoding.action(0, 0, 0))
    snap = snapshot(env.simulation.state, env.config.encoding)
    assert snap.window == [1, 2, 9, 8]


def test_job_features_per_gpu_type_slot():
    # A100-80 (speed 2.4) on 8-GPU nodes and V100-32 (speed 1) on 4-GPU nodes; max_types 3 leaves slot 2 empty.
    cluster = "1x8:A100-80,2x4:V100-32"
    enc = EncodingConfig(window=3, max_types=3)
    jobs = (
        Job(0, 0.0, 600.0, gpus=8, job_type="training", estimate_s=600.0),
        Job(1, 0.0, 600.0, gpus=1, job_type="inference", estimate_s=600.0),
        Job(2, 0.0, 600.0, gpus=1, vram_gib=40.0, job_type="training", estimate_s=600.0),
    )
    env = GpuSchedulingEnv(EnvConfig(clusters=(cluster,), encoding=enc))
    obs, _ = env.reset(seed=0, options={"cluster": cluster, "jobs": jobs})
    assert obs["jobs"].shape == (3, enc.job_features) == (3, 12 + 4 * 3)
    per_type = obs["jobs"][:, 12:].reshape(3, 3, 4)  # job slot, type slot, (speed, run time, fits now, one node)
    log_run = lambda est_s, speed: np.log1p(est_s / speed / 60.0) / 10.0  # noqa: E731
    np.testing.assert_allclose(
        per_type[0, :2], [[2.4 / 4, log_run(600, 2.4), 1, 1], [0.25, log_run(600, 1.0), 1, 0]], rtol=1e-6
    )
    # Inference gains 2.4 ** 0.6 on an A100; a 40 GiB job cannot use the 32 GiB V100s at all.
    np.testing.assert_allclose(per_type[1, 0, 0], 2.4**0.6 / 4, rtol=1e-6)
    np.testing.assert_array_equal(per_type[2, 1, 2:], [0, 0])
    assert not per_type[:, 2].any()  # absent type slot
    # Job 1 takes one A100: job 0 no longer fits there, and on the V100s it fits only spread over both nodes.
    obs, *_ = env.step(enc.action(1, 0, 0))
    per_type = obs["jobs"][:, 12:].reshape(3, 3, 4)
    assert env.snapshot.window[0] == 0
    np.testing.assert_array_equal(per_type[0, :2, 2:], [[0, 0], [1, 0]])
    # The groups' absolute block and node size tell 7 idle A100s on an 8-GPU node from 4 idle V100s on a 4-GPU one.
    np.testing.assert_allclose(obs["groups"][:2, 8:], [[7 / 8, 1.0], [4 / 8, 4 / 8]])


EVICT_ENC = EncodingConfig(window=6, max_types=3, rules=("first-fit", "best-fit", "evict"))


COSTLY = PreemptionModel(checkpoint_interval_s=1800.0, restart_overhead_s=60.0)


@pytest.mark.parametrize("preemption", [PreemptionModel(), COSTLY], ids=["free", "costly"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_random_play_with_evictions_keeps_every_constraint_and_returns_the_objective(seed, preemption):
    weights = RewardWeights(wait=1.0, jct=0.5, comm=1.0)
    env = _env(
        encoding=EVICT_ENC,
        reward=weights,
        loads=(2.0,),
        clusters=("1x4:A100-80,2x2:V100-32,1x2:T4",),
        options=(RunOptions(preemption=preemption),),
    )
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    state, enc, total, done, evictions = env.simulation.state, EVICT_ENC, 0.0, False, 0
    evict = enc.rules.index("evict")
    while not done:
        mask = env.action_masks()
        snap = env.snapshot
        for a in np.flatnonzero(mask[:-1]):
            slot, t, rule = enc.unpack(int(a))
            job = state.jobs[snap.window[slot]]
            if rule != evict:
                continue
            # What an evict action promises: victims that run on that type, started before now, would run longer
            # than the job, and free enough GPUs for it.
            victims = snap.victims[slot, t]
            assert not snap.fits[slot][t] and victims
            runs = [state.running[v] for v in victims]
            assert all(r.gpu_type == t and r.start_s < state.now_s and not r.job.fractional for r in runs)
            idle = int(state.node_free[state.layout.node_type == t].sum())
            assert idle + sum(r.job.gpus for r in runs) >= job.gpus
        offered = [a for a in np.flatnonzero(mask[:-1]) if enc.unpack(int(a))[2] == evict]
        a = int(rng.choice(offered if offered and rng.random() < 0.5 else np.flatnonzero(mask)))
        evictions += a != enc.wait_action and enc.unpack(a)[2] == evict
        _, r, done, truncated, info = env.step(a)  # the engine validates every preemption and start
        assert not truncated and not info["invalid_action"]
        total += r
    res = env.result
    assert evictions > 0 and res.preemptions.sum() >= evictions
    assert (res.status == 0).all() and np.isfinite(res.end_s).all()
    assert total == pytest.approx(-objective(res, weights), rel=1e-9, abs=1e-12)
    # Under costly preemption the run really lost work and paid restarts (else this would only repeat the free
    # case): the summed reward is still minus the objective of the run's own result.
    assert (res.lost_gpu_s.sum() > 0) == (preemption == COSTLY)


def test_env_config_options_round_trip_and_reject_bad_ones():
    cfg = EnvConfig(options=(RunOptions(preemption=COSTLY), RunOptions()))
    d = cfg.to_dict()
    assert d["options"] == [RunOptions(preemption=COSTLY).to_dict(), RunOptions().to_dict()]
    assert EnvConfig.from_dict(d) == cfg
    rest = {k: v for k, v in d.items() if k != "options"}
    assert EnvConfig.from_dict(rest).options == (RunOptions(),)  # a config from before any run option key
    assert EnvConfig.from_dict({**rest, "options": [{"preemption": COSTLY.to_dict()}, {}]}) == cfg  # defaults
    for bad, match in [
        ({"options": [{"preemption": {"restart_s": 60}}]}, "restart_s"),
        (
            {"options": [{"preemption": {"checkpoint_interval_s": -1}}]},
            r"options\[0\]\.preemption\.checkpoint_interval_s",
        ),
        ({"options": [{}, {"power": 1}]}, r"options\[1\]: unknown keys"),
        ({"options": []}, "non-empty list"),
        ({"options": {"preemption": {}}}, "non-empty list"),
        ({"options": [{}], "preemptions": [{}]}, "^env: give options or the older preemptions, not both$"),
        ({"options": [{}], "failures": "stress"}, "older failures, not both"),
        ({"preemptions": [{"restart_s": 60}]}, "restart_s"),
        ({"preemptions": [{"checkpoint_interval_s": -1}]}, r"preemptions\[0\].*checkpoint_interval_s"),
        ({"preemptions": []}, "non-empty list"),
        ({"preemption": {"restart_s": 60}}, "restart_s"),
        ({"preemptions": d["options"][0]["preemption"], "preemption": {}}, "not both"),
    ]:
        with pytest.raises(EngineError, match=match):
            EnvConfig.from_dict({**rest, **bad})


def test_episodes_draw_every_run_options_and_a_reset_option_gives_them():
    from engine.sim.options import AdmissionModel

    costly, feasible = RunOptions(preemption=COSTLY), RunOptions(admission=AdmissionModel("feasible"))
    env = _env(encoding=EVICT_ENC, options=(costly, RunOptions(), feasible))
    seen = set()
    for s in range(16):
        env.reset(seed=s)
        seen.add(env.simulation.options)
    assert seen == {costly, RunOptions(), feasible}  # whole options: any run option, not only preemption
    env.reset(seed=0, options={"run_options": costly})
    assert env.simulation.options == costly
    with pytest.raises(EngineError, match="run_options must be RunOptions"):
        env.reset(seed=0, options={"run_options": COSTLY})
    # With one choice the draw is skipped, so a config's episodes are those it had before the list existed.
    one = _env(encoding=EVICT_ENC)
    one.reset(seed=5)
    assert one.simulation.options == RunOptions()


@pytest.mark.parametrize("preemption", [PreemptionModel(), COSTLY], ids=["free", "costly"])
def test_evict_cost_feature_is_what_the_victims_would_lose(preemption):
    cost_enc = EncodingConfig(window=6, max_types=3, rules=("first-fit", "best-fit", "evict"), evict_cost=True)
    assert cost_enc.type_features == EVICT_ENC.type_features + 1
    assert EncodingConfig.from_dict(cost_enc.to_dict()) == cost_enc and "evict_cost" not in EVICT_ENC.to_dict()
    env = _env(
        encoding=cost_enc,
        loads=(2.0,),
        clusters=("1x4:A100-80,2x2:V100-32,1x2:T4",),
        options=(RunOptions(preemption=preemption),),
    )
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    state, done, seen = env.simulation.state, False, []
    k, k_old = cost_enc.type_features, EVICT_ENC.type_features
    while not done:
        snap = env.snapshot
        obs = encode(state, cost_enc, snap)
        old = encode(state, EVICT_ENC, snapshot(state, EVICT_ENC))
        per_type = obs["jobs"][:, 12:].reshape(cost_enc.window, 3, k)
        # The old features are unchanged; the new one is the victims' lost work plus restarts, in GPU-seconds.
        np.testing.assert_array_equal(per_type[..., :k_old], old["jobs"][:, 12:].reshape(cost_enc.window, 3, k_old))
        for (slot, t), victims in snap.victims.items():
            cost = sum(state.preemption_cost_s(v) * state.jobs[v].gpus for v in victims)
            assert per_type[slot, t, -1] == pytest.approx(np.log1p(cost / 60.0) / 12.0, rel=1e-6)
            seen.append(cost)
        assert (per_type[..., -1] > 0).sum() <= len(snap.victims)
        _, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
    assert seen and (max(seen) > 0) == (preemption == COSTLY)


def test_evict_cost_needs_the_evict_rule():
    with pytest.raises(EngineError, match="evict_cost needs"):
        EncodingConfig(rules=("first-fit",), evict_cost=True)
    with pytest.raises(EngineError, match="evict_cost must be true or false"):
        EncodingConfig.from_dict({"rules": ["evict"], "evict_cost": 1})


def test_evict_action_by_hand():
    # One 4-GPU node. Jobs 0 and 1 (2 GPUs each) run from t=0; job 2 (4 GPUs, 100 s) arrives at t=10 and fits
    # only by evicting both; job 3 (4 GPUs, 2,000 s) may evict only job 1 (990 s left on job 0 < 2,000 s).
    jobs = (
        Job(0, 0.0, 1000.0, gpus=2, estimate_s=1000.0),
        Job(1, 0.0, 5000.0, gpus=2, estimate_s=5000.0),
        Job(2, 10.0, 100.0, gpus=4, estimate_s=100.0),
        Job(3, 10.0, 2000.0, gpus=4, estimate_s=2000.0),
    )
    enc = EncodingConfig(window=4, max_types=1, rules=("first-fit", "evict"))
    env = GpuSchedulingEnv(EnvConfig(clusters=("1x4:V100-32",), encoding=enc))
    env.reset(seed=0, options={"cluster": "1x4:V100-32", "jobs": jobs})
    # At t=0 jobs 0 and 1 wait; starting one offers no eviction of the other (it started now).
    env.step(enc.action(0, 0, 0))
    assert not env.action_masks()[enc.action(0, 0, 1)]
    obs, *_ = env.step(enc.action(0, 0, 0))
    assert env.simulation.now_s == 10.0 and env.snapshot.window == [2, 3]
    assert env.snapshot.victims == {(0, 0): (1, 0)}
    assert env.action_masks()[enc.action(0, 0, 1)] and not env.action_masks()[enc.action(1, 0, 1)]
    # Per (job, type): speed, run time, fits, one node, then can evict and the victims' remaining GPU-seconds.
    left_gpu_s = 2 * 4990.0 + 2 * 990.0
    np.testing.assert_allclose(
        obs["jobs"][0, 12:], [0.25, np.log1p(100 / 60) / 10, 0, 0, 1, np.log1p(left_gpu_s / 60) / 12], rtol=1e-6
    )
    assert not obs["jobs"][1, 12 + 4 :].any()
    _, _, _, _, info = env.step(enc.action(0, 0, 1))
    assert info["started"] == 2
    # Nothing else can start (job 2 started now; it ends before 0, 1 or 3 would): time runs to its end.
    state = env.simulation.state
    assert env.simulation.now_s == 110.0 and not state.running and list(state.queue) == [3, 1, 0]
    assert state.preemptions(0) == state.preemptions(1) == 1 and state.preemptions(2) == 0


@pytest.mark.parametrize("scope, victims, nodes", [("type", (0, 2), 2), ("node", (0, 1), 1)])
def test_evict_scope_node_makes_room_on_one_node(scope, victims, nodes):
    # Two 4-GPU nodes, full at t=0: jobs 0 and 1 on node 0, jobs 2 and 3 on node 1 (first-fit). Job 4 (4 GPUs,
    # estimated 100 s, so still running at the next decision) arrives at t=10. Anywhere on the type, the latest estimated ends (jobs 0 and 2) make room on two
    # nodes, so it starts spread; on one node, node 0's victims have less work left (2 x 8,990 + 2 x 990 GPU-s
    # against 2 x 7,990 + 2 x 6,990) and it starts whole there.
    jobs = (
        Job(0, 0.0, 9000.0, gpus=2, estimate_s=9000.0),
        Job(1, 0.0, 1000.0, gpus=2, estimate_s=1000.0),
        Job(2, 0.0, 8000.0, gpus=2, estimate_s=8000.0),
        Job(3, 0.0, 7000.0, gpus=2, estimate_s=7000.0),
        Job(4, 10.0, 50000.0, gpus=4, estimate_s=100.0),
    )
    enc = EncodingConfig(window=4, max_types=1, rules=("first-fit", "evict"), evict_scope=scope)
    env = GpuSchedulingEnv(EnvConfig(clusters=("2x4:V100-32",), encoding=enc))
    env.reset(seed=0, options={"cluster": "2x4:V100-32", "jobs": jobs})
    for _ in range(4):
        env.step(enc.action(0, 0, 0))
    assert env.simulation.now_s == 10.0 and env.snapshot.window == [4]
    assert env.snapshot.victims == {(0, 0): victims}
    env.step(enc.action(0, 0, 1))
    assert env.simulation.state.running[4].n_nodes == nodes
    assert EncodingConfig.from_dict(enc.to_dict()) == enc


def test_evict_scope_node_counts_a_spread_victims_gpus_on_that_node_only():
    # Two 4-GPU nodes: job 0 on node 0, job 1 beside it until t=20, job 2 on node 1; at t=20 job 3 (4 GPUs)
    # starts spread, 2 GPUs on each node. Job 4 (4 GPUs) arrives at t=30: evicting job 3 frees only 2 GPUs on
    # either node, so a node needs job 3 and its other job too, and node 1's (job 2) has less work left than
    # node 0's (job 0). Counting all of job 3's GPUs would have taken job 3 alone.
    jobs = (
        Job(0, 0.0, 9000.0, gpus=2, estimate_s=9000.0),
        Job(1, 0.0, 20.0, gpus=2, estimate_s=20.0),
        Job(2, 0.0, 7000.0, gpus=2, estimate_s=7000.0),
        Job(3, 5.0, 9500.0, gpus=4, estimate_s=9500.0),
        Job(4, 30.0, 100.0, gpus=4, estimate_s=100.0),
    )
    enc = EncodingConfig(window=4, max_types=1, rules=("first-fit", "evict"), evict_scope="node")
    env = GpuSchedulingEnv(EnvConfig(clusters=("2x4:V100-32",), encoding=enc))
    env.reset(seed=0, options={"cluster": "2x4:V100-32", "jobs": jobs})
    for _ in range(4):  # jobs 0, 1, 2 at t=0, job 3 at t=20 (first-fit spreads it)
        env.step(enc.action(0, 0, 0))
    state = env.simulation.state
    assert env.simulation.now_s == 30.0 and state.running[3].n_nodes == 2
    assert env.snapshot.victims == {(0, 0): (3, 2)}


@pytest.mark.parametrize("whole_node", [False, True])
def test_whole_node_never_spreads_a_job_one_node_could_hold(whole_node):
    # Two 4-GPU nodes (first-fit): jobs 0 and 1 on node 0, jobs 2 and 3 on node 1, 2 GPUs each; 1 and 3 end at
    # t=5. At t=10 job 4 (4 GPUs) arrives with 4 idle GPUs, 2 on each node, and job 5 (8 GPUs) waits for the
    # whole cluster. Without whole_node job 4 may start spread; with it, it fits nowhere and makes room on
    # node 1 instead, whose victim (job 2) has less work left than node 0's (job 0).
    jobs = (
        Job(0, 0.0, 9000.0, gpus=2, estimate_s=9000.0),
        Job(1, 0.0, 5.0, gpus=2, estimate_s=5.0),
        Job(2, 0.0, 5000.0, gpus=2, estimate_s=5000.0),
        Job(3, 0.0, 5.0, gpus=2, estimate_s=5.0),
        Job(4, 10.0, 100.0, gpus=4, estimate_s=100.0),
        Job(5, 10.0, 100.0, gpus=8, estimate_s=100.0),
    )
    enc = EncodingConfig(window=4, max_types=1, rules=("first-fit", "evict"), evict_scope="node", whole_node=whole_node)
    env = GpuSchedulingEnv(EnvConfig(clusters=("2x4:V100-32",), encoding=enc))
    env.reset(seed=0, options={"cluster": "2x4:V100-32", "jobs": jobs})
    for _ in range(4):
        env.step(enc.action(0, 0, 0))
    assert env.simulation.now_s == 10.0 and env.snapshot.window == [4, 5]
    mask = env.action_masks()
    assert bool(mask[enc.action(0, 0, 0)]) is not whole_node and bool(mask[enc.action(0, 0, 1)]) is whole_node
    assert env.snapshot.victims.get((0, 0)) == ((2,) if whole_node else None)
    obs = encode(env.simulation.state, enc, env.snapshot)
    assert obs["jobs"][0, 12 + 2] == (0.0 if whole_node else 1.0)  # can start now on the type
    sim = env.simulation
    sim.apply(decode(sim.state, enc.action(0, 0, 1 if whole_node else 0), enc, env.snapshot))
    assert sim.state.running[4].n_nodes == (1 if whole_node else 2)
    assert (2 not in sim.state.running) is whole_node
    assert EncodingConfig.from_dict(enc.to_dict()) == enc


def test_whole_node_spreads_a_job_bigger_than_every_node():
    jobs = (Job(0, 0.0, 100.0, gpus=6, estimate_s=100.0),)
    enc = EncodingConfig(window=2, max_types=1, rules=("best-fit",), whole_node=True)
    env = GpuSchedulingEnv(EnvConfig(clusters=("2x4:V100-32",), encoding=enc))
    env.reset(seed=0, options={"cluster": "2x4:V100-32", "jobs": jobs})
    sim = env.simulation
    sim.apply(decode(sim.state, enc.action(0, 0, 0), enc, env.snapshot))
    assert sim.state.running[0].n_nodes == 2


def test_evict_scope_needs_the_evict_rule_and_a_known_scope():
    with pytest.raises(EngineError, match="evict_scope needs"):
        EncodingConfig(rules=("first-fit",), evict_scope="node")
    with pytest.raises(EngineError, match="evict_scope 'rack'"):
        EncodingConfig(rules=("evict",), evict_scope="rack")
    assert "evict_scope" not in EncodingConfig(rules=("evict",)).to_dict()


def test_whole_node_is_a_boolean_left_out_of_older_cards():
    assert "whole_node" not in EncodingConfig().to_dict()
    with pytest.raises(EngineError, match="whole_node must be true or false"):
        EncodingConfig.from_dict({"whole_node": "yes"})


def test_max_evictions_protects_jobs_preempted_that_often():
    # Job 0 (4 GPUs, long) is evicted by job 1 at t=10; when job 2 arrives at t=20 and job 1 has ended, job 0 runs
    # again: with max_evictions=1 it can no longer be a victim, without a limit it can.
    jobs = (
        Job(0, 0.0, 5000.0, gpus=4, estimate_s=5000.0),
        Job(1, 10.0, 5.0, gpus=4, estimate_s=5.0),
        Job(2, 20.0, 100.0, gpus=4, estimate_s=100.0),
    )
    offered = {}
    for limit in (None, 1):
        enc = EncodingConfig(window=2, max_types=1, rules=("first-fit", "evict"), max_evictions=limit)
        env = GpuSchedulingEnv(EnvConfig(clusters=("1x4:V100-32",), encoding=enc))
        env.reset(seed=0, options={"cluster": "1x4:V100-32", "jobs": jobs})
        env.step(enc.action(0, 0, 0))  # job 0 at t=0
        env.step(enc.action(0, 0, 1))  # job 1 evicts it at t=10; it ends at 15 and job 0 restarts
        env.step(enc.action(0, 0, 0))
        assert env.simulation.state.preemptions(0) == 1
        offered[limit] = (env.simulation.now_s, env.snapshot.victims)
    # With the limit, nothing is possible at t=20: the next choice is when job 0 ends.
    assert offered == {None: (20.0, {(0, 0): (0,)}), 1: (5005.0, {})}
    with pytest.raises(EngineError, match="max_evictions"):
        EncodingConfig(max_evictions=0)


# Issue 34: episodes under a failure model, and the optional node-health inputs.
FAILING = FailureModel(mtbf_h=10.0, repair_h=1.0, job_failure_rate=0.3, job_retries=1)
CHECKPOINTS = PreemptionModel(checkpoint_interval_s=600.0, restart_overhead_s=60.0)


def test_env_under_failures_driven_by_an_agent_equals_simulate_of_that_agent():
    # The env adds no dynamics under failures either: a shipped agent's choices in the env give the run simulate()
    # gives it under the same failures.
    from engine.rl.agent import load_agent

    agent = load_agent("wait-mlp")
    c = parse_cluster(MIXED)
    jobs = make_jobs(c, 80, 1.3, 0)
    options = RunOptions(preemption=CHECKPOINTS, failures=FAILING)
    ref = simulate(c, jobs, agent, seed=4, options=options)
    assert ref.outage_node.size > 0 and ref.interruptions.sum() > 0 and (ref.status == FAILED).any()
    env = GpuSchedulingEnv(EnvConfig(clusters=(MIXED,), encoding=agent.encoding, options=(options,)))
    obs, _ = env.reset(seed=4, options={"cluster": c, "jobs": jobs})
    done = False
    while not done:
        obs, _, done, _, info = env.step(agent.act(obs, env.action_masks()))
        assert not info["invalid_action"]
    np.testing.assert_array_equal(env.result.end_s, ref.end_s)
    np.testing.assert_array_equal(env.result.interruptions, ref.interruptions)


@pytest.mark.parametrize(
    "weights",
    [RewardWeights(), RewardWeights(wait=0.5, jct=1.0, fairness=1.0), RewardWeights(wait=1.0, deadline=1.0)],
)
def test_episode_return_equals_the_objective_under_failures(weights):
    # A job a node failure (or a retried crash) sends back to the queue waits again: the dense wait must charge
    # that stay from when its run stopped, not from its submission. A job that ends failed misses its deadline.
    workload = DEADLINE_WORKLOAD if weights.deadline else {}
    env = _env(reward=weights, options=(RunOptions(preemption=CHECKPOINTS, failures=FAILING),), workload=workload)
    total = sum(_random_rewards(env, 11))
    assert env.result.interruptions.sum() > 0
    assert total == pytest.approx(-objective(env.result, weights), rel=1e-9, abs=1e-12)


def test_node_health_inputs_are_off_by_default_and_say_which_nodes_are_down():
    assert EncodingConfig().group_features == 10 and "node_health" not in EncodingConfig().to_dict()
    enc = EncodingConfig(node_health=True)
    assert EncodingConfig.from_dict(enc.to_dict()) == enc and enc.group_features == 13
    env = _env(encoding=enc, options=(RunOptions(preemption=CHECKPOINTS, failures=FAILING),))
    assert env.observation_space["groups"].shape == (enc.max_types, 13)
    obs, _ = env.reset(seed=2)
    assert not obs["groups"][:, 10].any() and not obs["groups"][:, 12].any()  # nothing has failed yet
    rng = np.random.default_rng(2)
    seen_down = seen_repaired = False
    done = False
    while not done:
        occ, state = env.simulation.state.occupancy, env.simulation.state
        types = state.layout.node_type
        for t in range(len(state.layout.type_names)):
            nodes = np.flatnonzero(types == t)
            down = np.array(occ.node_down)[nodes]
            up_h = (state.now_s - np.array(occ.node_up_since_s)[nodes][~down]) / 3600.0
            fails = np.array(occ.node_failures)[nodes].sum()
            expected = (
                down.mean(),
                np.log1p(up_h.mean()) / 10.0 if up_h.size else 0.0,
                min(np.log1p(fails / nodes.size) / 4.0, 1.0),
            )
            np.testing.assert_allclose(obs["groups"][t, 10:], expected, rtol=1e-6, atol=1e-7)
            seen_down |= bool(down.any())
            seen_repaired |= bool((np.array(occ.node_up_since_s)[nodes] > 0).any())
        assert env.observation_space.contains(obs)
        obs, _, done, _, _ = env.step(rng.choice(np.flatnonzero(env.action_masks())))
    assert seen_down and seen_repaired


def test_preemption_history_inputs_are_off_by_default_and_count_each_jobs_preemptions():
    assert EncodingConfig().global_features == 8 and "preemption_history" not in EncodingConfig().to_dict()
    enc = EncodingConfig(rules=("best-fit", EVICT), preemption_history=True)
    assert EncodingConfig.from_dict(enc.to_dict()) == enc and enc.global_features == 12
    env = _env(encoding=enc, loads=(1.8,), n_jobs=80, options=(RunOptions(preemption=CHECKPOINTS),))
    assert env.observation_space["global"].shape == (12,)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(3)
    seen = np.zeros(4, dtype=bool)
    done = False
    while not done:
        state = env.simulation.state
        head = [state.preemptions(j) for j in list(state.queue)[:HISTORY_HEAD]]
        running = [state.preemptions(j) for j in state.running]
        expected = (
            np.mean([k > 0 for k in head]) if head else 0.0,
            min(np.log1p(np.mean(head)) / 3.0, 1.0) if head else 0.0,
            min(np.log1p(max(head)) / 5.0, 1.0) if head else 0.0,
            np.mean([k > 0 for k in running]) if running else 0.0,
        )
        np.testing.assert_allclose(obs["global"][8:], expected, rtol=1e-6, atol=1e-7)
        seen |= obs["global"][8:] > 0
        assert env.observation_space.contains(obs)
        allowed = np.flatnonzero(env.action_masks())
        evicts = [a for a in allowed if a != enc.wait_action and enc.unpack(a)[2] == 1]
        obs, _, done, _, _ = env.step(int(rng.choice(evicts or allowed)))
    assert seen.all()  # every feature moved: jobs were preempted, waited and ran again


#: An env config as written before ``options``: three preemption models and failures.
OLDER_CONFIG = {
    "clusters": [MIXED, "4x8:V100-32"],
    "loads": [1.2, 1.8],
    "n_jobs": 30,
    "encoding": {"window": 6, "max_types": 3, "rules": ["first-fit", "best-fit", "evict"], "evict_cost": True},
    "preemptions": [COSTLY.to_dict(), PreemptionModel().to_dict(), CHECKPOINTS.to_dict()],
    "failures": FAILING.to_dict(),
}


def _first_steps_digest(env: GpuSchedulingEnv) -> str:
    """A digest of 12 episodes' drawn options and first observations and rewards (the last-but-one allowed
    action each step)."""
    import hashlib

    h = hashlib.sha256()
    for s in range(12):
        obs, _ = env.reset(seed=s)
        h.update(repr(env.simulation.options.preemption).encode() + repr(env.simulation.options.failures).encode())
        for _ in range(12):
            h.update(obs["jobs"].tobytes() + obs["groups"].tobytes() + obs["global"].tobytes())
            if env.simulation.done:
                break
            allowed = np.flatnonzero(env.action_masks())
            obs, r, *_ = env.step(int(allowed[-2 if allowed.size > 1 else -1]))
            h.update(repr(r).encode())
    return h.hexdigest()[:16]


def test_older_configs_read_as_the_options_they_meant_with_the_episodes_they_had():
    new = {k: v for k, v in OLDER_CONFIG.items() if k not in ("preemptions", "failures")}
    new["options"] = [{"preemption": p, "failures": OLDER_CONFIG["failures"]} for p in OLDER_CONFIG["preemptions"]]
    cfg = EnvConfig.from_dict(OLDER_CONFIG)
    assert cfg == EnvConfig.from_dict(new) and EnvConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.options == tuple(
        RunOptions(preemption=p, failures=FAILING) for p in (COSTLY, PreemptionModel(), CHECKPOINTS)
    )
    # The same seeds draw the same options and give the same first steps as before options existed (the digest
    # was taken with the code that read preemptions and failures).
    assert _first_steps_digest(GpuSchedulingEnv(OLDER_CONFIG)) == _first_steps_digest(GpuSchedulingEnv(new))
    assert _first_steps_digest(GpuSchedulingEnv(new)) == "a454f502dbc1065b"
    # One model in the older single key, a failure preset by name, and a checkpoint cost that needs an interval.
    assert EnvConfig.from_dict({"preemption": COSTLY.to_dict()}).options == (RunOptions(preemption=COSTLY),)
    assert EnvConfig.from_dict({"failures": "stress"}).options[0].failures.mtbf_h == 200.0
    with pytest.raises(EngineError, match="env.failures.mtbf_h must be a number of hours > 0"):
        EnvConfig.from_dict({"failures": {"mtbf_h": -1}})
    with pytest.raises(EngineError, match="^env: .*checkpoint_cost_s needs options.preemption.checkpoint_interval_s"):
        EnvConfig.from_dict({"failures": {"checkpoint_cost_s": 5.0}})


def test_deadline_inputs_are_off_by_default_and_by_hand_give_slack_lateness_and_elasticity():
    from engine.rl.encoding import JOB_BASE_FEATURES
    from engine.sim.simulator import Simulation

    assert "deadlines" not in EncodingConfig().to_dict()
    enc = EncodingConfig(window=4, max_types=2, deadlines=True)
    assert EncodingConfig.from_dict(enc.to_dict()) == enc
    assert enc.job_features == EncodingConfig(window=4, max_types=2).job_features + 5
    cluster = parse_cluster("1x4:V100-32,1x4:A100-80")
    a100 = cluster.speed("batch", "A100-80")
    jobs = (
        # Elastic from 1 to 8 GPUs, asks 2; fastest on the A100s: slack 3000 - 1100 / a100 seconds.
        Job(0, 0.0, 1100.0, gpus=2, estimate_s=1100.0, deadline_s=3000.0, min_gpus=1, max_gpus=8, scaling="linear"),
        # V100s only (speed 1): 600 s of work, due at 100 s, so 500 s late even if it starts now.
        Job(1, 0.0, 600.0, estimate_s=600.0, deadline_s=100.0, allowed_types=("V100-32",)),
        Job(2, 0.0, 50.0, estimate_s=50.0),  # best effort, rigid: all zeros
    )
    state = Simulation(cluster, jobs).reset()
    obs = encode(state, enc)
    got = obs["jobs"][:, -5:]
    expected = [
        (1.0, np.log1p((3000.0 - 1100.0 / a100) / 60.0) / 10.0, 0.0, 1 / 6, 2 / 6),
        (1.0, 0.0, np.log1p(500.0 / 60.0) / 10.0, 0.0, 0.0),
        (0.0, 0.0, 0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0, 0.0, 0.0),  # empty slot
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    # The features before them are those of the encoding without deadlines.
    plain = encode(state, EncodingConfig(window=4, max_types=2))
    np.testing.assert_array_equal(obs["jobs"][:, :-5], plain["jobs"])
    assert JOB_BASE_FEATURES + enc.type_features * 2 + 5 == obs["jobs"].shape[1]


def test_presets_add_their_own_episodes_on_training_seeds():
    """A config with ``presets`` draws, besides its generated kinds, each preset's cluster and its workload built
    with the episode's training seed (never a preset's own seed or a test seed), under the drawn run options;
    a given cluster, load or job count asks for a generated workload."""
    names = ("fractional-fragmentation", "topology-packing")
    costly = RunOptions(preemption=PreemptionModel(checkpoint_interval_s=1800.0, restart_overhead_s=60.0))
    env = GpuSchedulingEnv(
        EnvConfig(
            clusters=("2x4:V100-32",),
            loads=(0.9,),
            n_jobs=20,
            presets=names,
            options=(RunOptions(), costly),
            encoding=EncodingConfig(max_types=1),
        )
    )
    preset_clusters = {PRESETS[n].build_cluster().to_shorthand(): n for n in names}
    seen = set()
    for i in range(30):
        seed = TRAIN_SEED_MIN + i
        env.reset(seed=i, options={"workload_seed": seed})
        sim = env.simulation
        name = preset_clusters.get(sim.cluster.to_shorthand())
        seen.add(name or "generated")
        assert env.same_kind_jobs(seed) == sim.jobs  # the episode's kind, regenerated with its own seed
        if name is None:
            assert len(sim.jobs) == 20
            other = env.same_kind_jobs(seed + 1)
            assert len(other) == 20 and other != sim.jobs
            continue
        workload = PRESETS[name].scenario.workload
        assert sim.jobs == workload.build_jobs(sim.cluster, seed)
        assert env.same_kind_jobs(seed + 1) == workload.build_jobs(sim.cluster, seed + 1)
        assert sim.jobs != workload.build_jobs(sim.cluster)  # not the preset's own workload
        assert sim.options in (RunOptions(), costly)
    assert set(seen) == {"generated", *names}
    for i in range(20):
        env.reset(seed=i, options={"load": 0.9})
        assert env.simulation.cluster.to_shorthand() == "2x4:V100-32" and len(env.simulation.jobs) == 20
    env.reset(seed=0, options={"jobs": env.simulation.jobs})
    with pytest.raises(EngineError, match="same_kind_jobs needs an episode reset with a generated workload"):
        env.same_kind_jobs(TRAIN_SEED_MIN)


def test_a_list_of_job_counts_draws_each_and_one_count_keeps_the_episodes():
    """``n_jobs`` as a list: each episode draws one count; a one-item list gives the very episodes of the plain
    count (no draw is made), and the config round-trips as it was written."""
    env = _env(n_jobs=(20, 50))
    counts = set()
    for i in range(20):
        env.reset(seed=i)
        counts.add(len(env.simulation.jobs))
    assert counts == {20, 50}
    one, plain = _env(n_jobs=[30]), _env(n_jobs=30)
    for i in range(5):
        one.reset(seed=i)
        plain.reset(seed=i)
        assert one.simulation.jobs == plain.simulation.jobs and len(plain.simulation.jobs) == 30
    cfg = EnvConfig(n_jobs=(20, 50))
    assert cfg.to_dict()["n_jobs"] == [20, 50] and EnvConfig.from_dict(cfg.to_dict()) == cfg
    assert EnvConfig().to_dict()["n_jobs"] == 100  # a single count is written as before
    for bad in ((), (20, 0), ("20",), tuple(range(1, 18)), 0):
        with pytest.raises(EngineError, match="env n_jobs must be an integer >= 1 or a list of 1 to 16"):
            EnvConfig(n_jobs=bad)


def test_presets_config_round_trips_and_rejects_what_is_not_a_preset():
    cfg = EnvConfig(presets=("heavy-user",))
    assert EnvConfig.from_dict(cfg.to_dict()) == cfg
    assert "presets" not in EnvConfig().to_dict()  # configs without presets are written as before
    for bad, message in (
        (("../../etc/passwd",), "unknown preset '../../etc/passwd'; valid: "),
        (("heavy-user", "heavy-user"), "each preset at most once"),
        ((3,), "unknown preset '3'"),
    ):
        with pytest.raises(EngineError, match=message.replace(".", "\\.")):
            EnvConfig(presets=bad)
    with pytest.raises(EngineError, match="env.presets must be a list"):
        EnvConfig.from_dict({"presets": "heavy-user"})
    with pytest.raises(EngineError, match="GPU types; encoding.max_types is 1"):
        GpuSchedulingEnv(EnvConfig(presets=("least-loaded-collapse",), encoding=EncodingConfig(max_types=1)))


@pytest.mark.parametrize(
    "weights", [RewardWeights(), RewardWeights(wait=1.0, jct=0.5, comm=1.0), RewardWeights(wait=0.0, jct=1.0)]
)
def test_a_reference_pays_back_its_own_dense_cost(weights):
    # The return is the reference run's wait and JCT cost minus the objective.
    from engine.rl.env import ReferenceCost
    from engine.schedulers.registry import make_scheduler
    from engine.sim.simulator import simulate

    plain, paired = _env(reward=weights), _env(reward=weights, reference="short-whole")
    plain_rewards, paired_rewards = _random_rewards(plain, 3), _random_rewards(paired, 3)
    assert len(plain_rewards) == len(paired_rewards)  # the reference changes no decision of the episode
    ref = simulate(plain.result.cluster, plain.result.jobs, make_scheduler("short-whole"), seed=3)
    ref_terms = objective_terms(ref, weights)
    ref_dense = (weights.wait * ref_terms["wait"] + weights.jct * ref_terms["jct"]) / weights.wait_scale_s
    assert ReferenceCost(ref, weights).total / weights.wait_scale_s / len(ref.jobs) == pytest.approx(ref_dense)
    assert sum(paired_rewards) == pytest.approx(ref_dense - objective(paired.result, weights), rel=1e-9)


def test_playing_the_reference_earns_nothing_at_any_step():
    # A selector that always picks the reference is the reference (bit for bit): the waits it accrues in each
    # step are the reference's own, so no step's reward moves, however the arrivals swing the plain rewards.
    from engine.rl.env import SelectorEnv

    rewards = {}
    for reference in ("", "fifo"):
        cfg = EnvConfig(clusters=(MIXED,), loads=(3.0,), n_jobs=100, selector=("fifo", "sjf"), reference=reference)
        env = SelectorEnv(cfg)
        env.reset(seed=4)
        rewards[reference], done = [], False
        while not done:
            _, r, done, _, _ = env.step(0)
            rewards[reference].append(r)
    assert sum(rewards[""]) < -1.0 and min(rewards[""]) < -0.01
    assert np.abs(rewards["fifo"]).max() < 1e-12


def test_a_reference_must_be_a_registered_scheduler_and_travels_in_the_config():
    with pytest.raises(EngineError, match="env.reference"):
        EnvConfig(reference="no-such-policy")
    with pytest.raises(EngineError, match="env.reference: 'sjf-oracle' reads true durations"):
        EnvConfig(reference="sjf-oracle")
    cfg = EnvConfig(reference="short-whole")
    assert cfg.to_dict()["reference"] == "short-whole" and EnvConfig.from_dict(cfg.to_dict()) == cfg
    assert "reference" not in EnvConfig().to_dict()


class _FirstFeasible:
    """Starts the job of the first feasible action (queue order), waits only when nothing can start."""

    def act(self, obs, mask):
        return int(np.flatnonzero(mask[:-1])[0]) if mask[:-1].any() else len(mask) - 1


def _linear_elastic(j: int, submit_s: float, duration_s: float) -> Job:
    return Job(j, submit_s, duration_s, gpus=4, min_gpus=1, max_gpus=4, scaling="linear")


def test_elastic_start_starts_on_min_gpus_then_hands_spare_gpus_out_as_optimus():
    node = parse_cluster("1x4:generic")
    jobs = [_linear_elastic(0, 0.0, 100.0), _linear_elastic(1, 0.0, 100.0)]
    enc = EncodingConfig(window=2, max_types=1, rules=("best-fit",))
    plain = simulate(node, jobs, RLScheduler("first", {}, _FirstFeasible(), enc))
    # As asked (4 GPUs): job 1 waits for job 0.
    assert plain.end_s.tolist() == [100.0, 200.0] and plain.first_start_s.tolist() == [0.0, 100.0]
    sized = simulate(node, jobs, RLScheduler("first", {}, _FirstFeasible(), replace(enc, elastic_start=True)))
    # Both start at once on 1 GPU (rate 1/4 of their 4-GPU speed); the 2 spare GPUs go one each (equal gains), a
    # resize that stalls each 30 s: 100 + 30 x 1/2 = 115 s of reference work at rate 1/2 = 230 s.
    assert sized.first_start_s.tolist() == [0.0, 0.0] and sized.rescales.tolist() == [1, 1]
    assert sized.end_s.tolist() == [pytest.approx(230.0)] * 2
    assert sorted(len(sized.segment_gpus(i)) for i in range(len(sized.seg_job))) == [1, 1, 2, 2]


def test_elastic_start_shrinks_a_grown_job_for_a_waiting_one_and_env_and_agent_agree():
    node = parse_cluster("1x4:generic")
    jobs = [_linear_elastic(0, 0.0, 1000.0), Job(1, 100.0, 100.0, gpus=2)]
    enc = EncodingConfig(window=2, max_types=1, rules=("best-fit",), elastic_start=True)
    agent = RLScheduler("first", {}, _FirstFeasible(), enc)
    res = simulate(node, jobs, agent)
    # Job 0 starts on 1 GPU and grows to 4 at once (1000 + 30 s of stall x rate 1 of work left). At 100 s it gives
    # back the 2 GPUs rigid job 1 needs (930 + 30 x 1/2 left, at rate 1/2); when job 1 ends at 200 s it grows to 4
    # again (895 + 30 x 1 left, at rate 1): it ends at 1125 s.
    assert res.first_start_s.tolist() == [0.0, 100.0] and res.rescales.tolist() == [3, 0]
    assert res.end_s.tolist() == [pytest.approx(1125.0), 200.0]
    env = GpuSchedulingEnv(EnvConfig(clusters=("1x4:generic",), encoding=enc))
    obs, _ = env.reset(seed=0, options={"cluster": node, "jobs": jobs})
    done = False
    while not done:
        obs, _, done, _, _ = env.step(agent.act(obs, env.action_masks()))
    np.testing.assert_array_equal(env.result.end_s, res.end_s)
    np.testing.assert_array_equal(env.result.rescales, res.rescales)


def test_elastic_start_changes_nothing_without_elastic_jobs_and_no_selector_takes_it():
    cluster = parse_cluster(SMALL)
    jobs = make_jobs(cluster, 40, 1.3, 2)
    enc = EncodingConfig(window=4, max_types=2, rules=("best-fit", "fgd"))
    runs = [
        simulate(cluster, jobs, RLScheduler("first", {}, _FirstFeasible(), replace(enc, elastic_start=on)))
        for on in (False, True)
    ]
    np.testing.assert_array_equal(runs[0].end_s, runs[1].end_s)
    assert runs[0].gpu_ids == runs[1].gpu_ids
    assert EncodingConfig.from_dict(replace(enc, elastic_start=True).to_dict()).elastic_start
    assert "elastic_start" not in enc.to_dict()
    with pytest.raises(EngineError, match="a selector starts none"):
        EnvConfig(selector=("fifo", "sjf"), encoding=replace(enc, elastic_start=True))
