"""The learned selector (engine/rl/selector.py): its env mode, its policies taking turns, and the agent it ships as."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from engine import make_scheduler, parse_cluster, simulate
from engine.analysis.workload import make_jobs
from engine.errors import EngineError
from engine.rl import cards
from engine.rl.agent import ModelError, load_agent
from engine.rl.encoding import EncodingConfig
from engine.rl.env import EnvConfig, SelectorEnv
from engine.rl.policies import PolicySpec
from engine.rl.selector import SELECT_BASE_FEATURES, SelectorScheduler
from engine.rl.train import TrainConfig, train
from engine.sim.options import PreemptionModel, RunOptions
from engine.sim.simulator import COMPLETED, UNSCHEDULABLE

from .conftest import tiny_config

MIXED = "2x8:A100-80,2x4:V100-32,1x4:T4"
COSTLY = PreemptionModel(checkpoint_interval_s=1800.0, restart_overhead_s=60.0)
MENU = ("sjf", "easy-backfill", "fgd", "topo-pack", "drf", "tiresias", "short-spare-evict-est", "best-fit")


def _config(**kw) -> EnvConfig:
    base = dict(
        clusters=(MIXED,),
        loads=(1.5,),
        n_jobs=60,
        selector=MENU,
        encoding=EncodingConfig(window=4, max_types=4),
        options=(RunOptions(preemption=COSTLY),),
        workload={"users": 4, "user_skew": 2.0},
    )
    return EnvConfig(**(base | kw))


def test_selector_env_passes_the_gymnasium_and_sb3_checkers():
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check

    check_env(SelectorEnv(_config()), skip_render_check=True)
    sb3_check(SelectorEnv(_config(n_jobs=20)), warn=True)


@pytest.mark.parametrize("name", MENU)
def test_always_choosing_one_policy_is_that_policy(name):
    """A selector that always takes policy k makes policy k's decisions, bit for bit (costly preemption)."""
    c = parse_cluster(MIXED)
    jobs = make_jobs(c, 120, 1.6, 3)
    ref = simulate(c, jobs, make_scheduler(name), options=RunOptions(preemption=COSTLY))
    env = SelectorEnv(_config())
    env.reset(seed=0, options={"cluster": c, "jobs": jobs})
    done, k = False, MENU.index(name)
    while not done:
        _, _, done, _, info = env.step(k)
        assert not info["invalid_action"]
    res = env.result
    np.testing.assert_array_equal(res.end_s, ref.end_s)
    assert res.gpu_ids == ref.gpu_ids


@pytest.mark.parametrize("seed", range(4))
def test_switching_policies_at_random_keeps_every_constraint_and_ends(seed):
    """Policies reset when they take over mid-run: every decision stays valid (the engine checks each) and every
    job completes, preemptions and wake-ups included."""
    env = SelectorEnv(_config(loads=(1.8,), n_jobs=120))
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    done, steps, ret = False, 0, 0.0
    while not done:
        _, r, done, _, _ = env.step(int(rng.integers(len(MENU))))
        steps, ret = steps + 1, ret + r
    assert (env.result.status == COMPLETED).all()
    assert steps >= 120  # at least a decision point per arrival that waited or started
    from engine.rl.reward import objective

    assert ret == pytest.approx(-objective(env.result, env.config.reward), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_an_evicting_policy_after_a_resizing_one_frees_the_gpus_its_victims_hold(seed):
    """optimus runs elastic jobs on more or fewer GPUs than they asked for; an evicting teacher that takes over must
    count what its victims hold, or it offers evictions that do not make room (the engine's error)."""
    cfg = _config(
        clusters=("3x8:T4,2x4:A100-80",),
        loads=(1.5,),
        n_jobs=150,
        selector=("optimus", "short-spare-evict-est", "short-whole-evict"),
        workload={"users": 6, "deadlines": "elasticflow", "elastic": 1.0},
    )
    env = SelectorEnv(cfg)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    done, steps = False, 0
    while not done:
        _, _, done, _, _ = env.step(int(rng.integers(3)))
        steps += 1
    # every job ends, but those no GPU type of the cluster can ever hold (the engine's verdict, for any policy)
    assert set(np.unique(env.result.status).tolist()) <= {COMPLETED, UNSCHEDULABLE} and steps >= 140


def test_drf_reset_mid_run_counts_the_running_jobs():
    """A drf that takes over mid-run knows the users' shares of what already runs (it would treat the heavy user
    as holding nothing otherwise)."""
    from engine.sim.simulator import Simulation

    c = parse_cluster("1x8:V100-32")
    jobs = make_jobs(c, 30, 2.0, 1, {"users": 2, "user_skew": 0.0})
    sim = Simulation(c, jobs)
    state = sim.reset()
    first = make_scheduler("first-fit")
    first.reset(state)
    sim.apply(first.decide(state))
    assert state.running
    drf = make_scheduler("drf")
    drf.reset(state)
    for user, gpus in state.user_gpus.items():
        if gpus > 0:
            assert drf.dominant_share(user) == pytest.approx(gpus / 8.0)


def test_selector_configs_refuse_unknown_oracle_or_repeated_policies():
    with pytest.raises(EngineError, match="env.selector: unknown scheduler 'nope'"):
        _config(selector=("sjf", "nope"))
    with pytest.raises(EngineError, match="oracle"):
        _config(selector=("sjf", "sjf-oracle"))
    with pytest.raises(EngineError, match="distinct"):
        _config(selector=("sjf", "sjf"))
    with pytest.raises(EngineError, match="env.workloads\\[1\\]"):
        _config(workloads=({}, {"users": -3}))


@pytest.fixture(scope="module")
def tiny_selector(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sel")
    cfg = replace(
        tiny_config(tmp, "tiny-select", "mlp"),
        env=_config(n_jobs=25, workloads=({}, {"users": 2})),
        policy=PolicySpec(net_arch=(16,)),
        total_timesteps=128,
        eval_freq=64,
        checkpoint_freq=64,
        selector_prior=2.0,
    )
    card = train(cfg, models_dir=tmp / "models")
    return tmp / "models", card, cfg


def test_trained_selector_loads_as_plain_weights_and_runs_through_simulate(tiny_selector):
    models, card, _ = tiny_selector
    assert card["selector"] == list(MENU) and card["weights"].endswith(".npz")
    prior = card["training"]["selector_prior"]
    assert set(prior["validation_mean_return"]) == set(MENU) and prior["best"] in MENU
    assert card["training"]["validation_curve"] and card["training"]["cores"] >= 1
    agent = load_agent("tiny-select", models)
    assert isinstance(agent, SelectorScheduler) and agent.name == "rl:tiny-select"
    c = parse_cluster(MIXED)
    jobs = make_jobs(c, 80, 1.5, 11)
    res = simulate(c, jobs, agent, options=RunOptions(preemption=COSTLY))
    assert (res.status == COMPLETED).all()
    again = simulate(c, jobs, load_agent("tiny-select", models), options=RunOptions(preemption=COSTLY))
    np.testing.assert_array_equal(res.end_s, again.end_s)  # deterministic


def test_a_selector_card_naming_other_policies_is_refused(tiny_selector, tmp_path):
    import shutil

    models, card, _ = tiny_selector
    shutil.copytree(models, tmp_path / "m")
    path = tmp_path / "m" / "tiny-select.json"
    for menu, match in ((["sjf", "nope"], "unknown scheduler"), (["sjf", "fgd"], "expected float32")):
        path.write_text(json.dumps(card | {"selector": menu}))
        with pytest.raises(ModelError, match=match):
            load_agent("tiny-select", tmp_path / "m")


def _decisions(agent: SelectorScheduler, runs: int = 1) -> list[int]:
    """The policy that decided each decision point with a waiting job of ``runs`` runs of ``agent`` (a selector
    whose scripted ``policy`` moves on to its next pick, ``policy.i``, at each such point; rewound per run)."""
    c, out = parse_cluster(MIXED), []
    jobs = make_jobs(c, 40, 1.5, 11)
    choose = SelectorScheduler.choose

    def spy(self, state):
        k = choose(self, state)
        if state.queue:
            out.append(k)
            self.policy.i += 1
        return k

    agent.choose = spy.__get__(agent)
    for _ in range(runs):
        agent.policy.i = 0
        simulate(c, jobs, agent, options=RunOptions(preemption=COSTLY))
    return out


def test_a_run_vote_takes_the_policy_picked_most_often_so_far(tiny_selector):
    # The network's picks 0, 1, 1, 2, 2, 2 decide 0, 0 (a tie: the first picked), 1, 1, 1 (a tie), 2; a new run
    # counts afresh. With "step" each pick decides.
    models, card, _ = tiny_selector
    picks = [0, 1, 1, 2, 2, 2]
    agent = load_agent("tiny-select", models)
    agent.policy = type("Scripted", (), {"act": lambda self, obs, mask: picks[self.i % 6]})()

    def decided(vote: str, runs: int = 1) -> list[int]:
        agent.vote = vote
        return _decisions(agent, runs)

    assert decided("step")[:6] == picks
    assert decided("run")[:6] == [0, 0, 1, 1, 1, 2]
    first = decided("run")
    assert agent.decided == {k: first.count(k) for k in set(first)}  # what each policy decided, this run
    assert decided("run", runs=2) == first + first  # reset: the second run counts from nothing
    assert agent.decided == {k: first.count(k) for k in set(first)}


def test_a_margin_switches_policy_only_when_the_networks_pick_scores_that_much_above_the_deciding_one(tiny_selector):
    # Scripted logits over the three policies: the pick moves 0 -> 1 by 0.5, then 1 -> 2 by 3.0. With margin 1 the
    # first move is not enough (0 keeps deciding); the second, against 0's logit, is (2 decides). Without a margin
    # every pick decides.
    models, card, _ = tiny_selector
    script = [[1.0, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 3.0], [0.0, 0.0, 3.0]]

    class Scripted:
        i = 0

        def logits(self, obs):  # the policies past the third score far lower
            row = script[min(self.i, len(script) - 1)]
            return np.array(row + [-9.0] * (len(MENU) - len(row)))

        def act(self, obs, mask):
            return int(self.logits(obs).argmax())

    def decided(margin: float) -> list[int]:
        agent = load_agent("tiny-select", models)
        agent.policy, agent.margin = Scripted(), margin
        return _decisions(agent)[:5]

    assert decided(0.0) == [0, 1, 1, 2, 2]
    assert decided(1.0) == [0, 0, 0, 2, 2]
    assert decided(5.0) == [0, 0, 0, 0, 0]


def _refuses(tiny_selector, tmp_path, extra: dict, match: str) -> None:
    """The tiny selector's card with ``extra`` fields, copied beside its weights, is refused with ``match``."""
    import shutil

    models, card, _ = tiny_selector
    shutil.copytree(models, tmp_path / "m", dirs_exist_ok=True)
    (tmp_path / "m" / "tiny-select.json").write_text(json.dumps(card | extra))
    with pytest.raises(ModelError, match=match):
        load_agent("tiny-select", tmp_path / "m")


@pytest.mark.parametrize(
    "extra, match",
    [
        ({"selector_margin": -1}, "from 0 to 20"),
        ({"selector_margin": "2"}, "from 0 to 20"),
        ({"selector_margin": True}, "from 0 to 20"),
        ({"selector_margin": 1.0, "selector_vote": "run"}, "applies with the selector_vote 'step' only"),
    ],
)
def test_a_bad_selector_margin_is_refused(tiny_selector, tmp_path, extra, match):
    _refuses(tiny_selector, tmp_path, extra, match)
    cfg = tiny_selector[2]
    assert "selector_margin" not in cfg.to_dict()  # 0, the default, is not written
    assert TrainConfig.from_dict(replace(cfg, selector_margin=2.0).to_dict()).selector_margin == 2.0
    with pytest.raises(EngineError, match="selector_margin apply to a selector"):
        replace(cfg, env=replace(cfg.env, selector=()), selector_margin=1.0)


def test_a_selector_vote_that_is_not_step_or_run_is_refused(tiny_selector, tmp_path):
    _refuses(
        tiny_selector, tmp_path, {"selector_vote": "often"}, "selector_vote: 'often' is not one of \\['step', 'run'\\]"
    )
    _, card, cfg = tiny_selector
    assert card["selector_vote"] == "step" and "selector_vote" not in card["training"]["config"]
    voting = replace(cfg, selector_vote="run")
    assert voting.to_dict()["selector_vote"] == "run" and TrainConfig.from_dict(voting.to_dict()) == voting
    with pytest.raises(EngineError, match="selector_vote"):
        replace(cfg, selector_vote="often")
    with pytest.raises(EngineError, match="selector_vote and selector_margin apply to a selector"):
        replace(cfg, env=replace(cfg.env, selector=()), selector_vote="run")


def test_selector_training_refuses_attention_or_cloning():
    from engine.rl.clone import CloneConfig

    base = TrainConfig(name="s", env=_config())
    with pytest.raises(EngineError, match="selector"):
        replace(base, policy=PolicySpec(kind="attention"))
    with pytest.raises(EngineError, match="selector"):
        replace(base, clone=CloneConfig(teacher="short-spare"))
    with pytest.raises(EngineError, match="vec_env"):
        replace(base, vec_env="threads")
    with pytest.raises(EngineError, match="resume_from"):
        replace(base, resume_from="../../etc/passwd")


def test_a_selector_continues_from_its_shipped_weights_without_a_second_prior(tiny_selector, tmp_path):
    # Continuing a selector (init_from) starts from what it learned: its prior is not raised again, and with a
    # learning rate too small to move it the child decides exactly as the parent and counts the parent's steps.
    from engine.rl.cards import _selector_lines

    models, _, cfg = tiny_selector
    parent = json.loads((models / "tiny-select.json").read_text())
    child_cfg = replace(cfg, name="tiny-select-cont", init_from="tiny-select", learning_rate=1e-12, seed=5)
    card = train(child_cfg, models_dir=models)
    tr = card["training"]
    assert tr["init_from"]["sha256"] == parent["sha256"] and "selector_prior" not in tr
    assert tr["timesteps"] == parent["training"]["timesteps"] + tr["this_run"]["timesteps"]
    assert tr["kept"].startswith("the policy it started from (tiny-select)")
    # The card shows the prior the parent started from (a resumed parent has none of its own).
    shown = any(line.startswith("- prior: each policy alone") for line in _selector_lines(card))
    assert shown == ("selector_prior" in parent["training"])
    c = parse_cluster(MIXED)
    jobs = make_jobs(c, 60, 1.5, 4)
    a = simulate(c, jobs, load_agent("tiny-select", models))
    b = simulate(c, jobs, load_agent("tiny-select-cont", models))
    np.testing.assert_array_equal(a.end_s, b.end_s)


def test_a_stopped_run_resumes_from_its_checkpoint_and_counts_its_steps(tiny_selector):
    models, _, cfg = tiny_selector
    card = train(replace(cfg, resume_from="checkpoint_128.npz", total_timesteps=256), models_dir=models)
    assert card["training"]["timesteps"] == 256
    assert card["training"]["validation_curve"][0][0] > 128
    assert "selector_prior" not in card["training"]  # the resumed weights are kept as they were


def test_the_card_says_when_no_ppo_evaluation_beat_the_prior():
    from engine.rl.train import _kept

    priors = {"validation_mean_return": {"sjf": -0.7, "fgd": -0.6}, "best": "fgd", "bias": 2.0}
    assert (
        _kept(True, None, -0.6, priors) == "the prior policy, always fgd (no PPO evaluation beat its validation return)"
    )
    assert _kept(True, None, -0.5, priors) == "best evaluation"
    assert _kept(False, None, -0.6, priors) == "final"


def test_without_the_last_policy_the_select_part_shows_none_in_training_and_in_the_trained_agent(tmp_path):
    """``env.selector_last`` false leaves the one-hot of the policy that decided last at zeros, in the env (nothing
    else of the observation changes) and in the agent trained with it (its card says ``selector_last``)."""
    seen = {}
    for last in (True, False):
        env = SelectorEnv(_config(selector_last=last))
        env.reset(seed=4)
        seen[last] = [env.step(k % 2)[0] for k in range(6)]
    for a, b in zip(seen[True], seen[False]):
        assert a["select"][SELECT_BASE_FEATURES:].sum() == 1 and b["select"][SELECT_BASE_FEATURES:].sum() == 0
        np.testing.assert_array_equal(a["select"][:SELECT_BASE_FEATURES], b["select"][:SELECT_BASE_FEATURES])
        assert all(np.array_equal(a[k], b[k]) for k in a if k != "select")

    cfg = replace(
        tiny_config(tmp_path, "tiny-nolast", "mlp"),
        env=_config(n_jobs=25, selector_last=False),
        policy=PolicySpec(net_arch=(16,)),
        total_timesteps=128,
    )
    card = train(cfg, models_dir=tmp_path / "models")
    assert card["selector_last"] is False and TrainConfig.from_dict(card["training"]["config"]) == cfg
    text = cards.render_markdown(json.loads((tmp_path / "models" / "tiny-nolast.json").read_text()))
    assert 'not shown which policy decided last (`"selector_last": false`' in text
    agent = load_agent("tiny-nolast", tmp_path / "models")
    act, onehots = agent.policy.act, []

    def spy(obs, mask):
        onehots.append(obs["select"][SELECT_BASE_FEATURES:].sum())
        return act(obs, mask)

    agent.policy = type("Spy", (), {"act": staticmethod(spy)})()
    c = parse_cluster(MIXED)
    simulate(c, make_jobs(c, 40, 1.5, 11), agent)
    assert onehots and set(onehots) == {0.0}


def test_a_bad_selector_last_is_refused(tiny_selector, tmp_path):
    _refuses(tiny_selector, tmp_path, {"selector_last": "no"}, "selector_last: expected true or false, got 'no'")
    _, card, cfg = tiny_selector
    assert "selector_last" not in card and "selector_last" not in cfg.env.to_dict()  # true, the default
    off = replace(cfg.env, selector_last=False)
    assert off.to_dict()["selector_last"] is False and EnvConfig.from_dict(off.to_dict()) == off
    with pytest.raises(EngineError, match="env.selector_last: true or false, and false with a selector only"):
        replace(cfg.env, selector=(), selector_last=False)
    with pytest.raises(EngineError, match="env.selector_last"):
        EnvConfig.from_dict({**cfg.env.to_dict(), "selector_last": 0})
