"""Behaviour cloning: the student learns the teacher's choices, and the card records how it was warm-started."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from engine.analysis.workload import TRAIN_SEED_MIN
from engine.errors import EngineError
from engine.rl import cards
from engine.rl.clone import BEST_ALONE, BEST_TEACHER, LOOKAHEAD, CloneConfig, best_alone, clone, collect
from engine.rl.encoding import EncodingConfig
from engine.rl.env import EnvConfig, GpuSchedulingEnv, SelectorEnv, observation_space, selector_spaces
from engine.rl.lookahead import LookaheadSelector
from engine.rl.policies import PolicySpec, build_policy
from engine.rl.reward import objective
from engine.rl.teacher import within
from engine.rl.train import TrainConfig, train
from engine.schedulers.registry import make_scheduler
from engine.sim.simulator import simulate

from .conftest import SMALL, tiny_config

#: A selector's episodes where different policies win: fractional inference on some, a skewed user on others.
SELECTOR = EnvConfig(
    clusters=("1x8:A100-80,2x4:V100-32", "4x4:V100-32"),
    loads=(1.8,),
    n_jobs=60,
    workloads=(
        {"mix": {"inference": 0.8, "batch": 0.2}, "types": {"inference": {"fraction": {"0.25": 0.5, "0.5": 0.5}}}},
        {"users": 4, "user_skew": 3.0},
    ),
    selector=("short-whole", "fgd", "sjf", "topo-pack"),
    encoding=EncodingConfig(window=4, max_types=2),
)


def _agreement(policy, env_cfg: EnvConfig, cfg: CloneConfig, seeds: range) -> float:
    """Share of the teacher's decisions the policy's most likely allowed action matches, on teacher episodes."""
    import torch

    env = SelectorEnv(env_cfg) if env_cfg.selector else GpuSchedulingEnv(env_cfg)
    data = collect(env, cfg, 0.99, seeds)
    with torch.no_grad():
        obs = {k: torch.as_tensor(v) for k, v in data["obs"].items()}
        greedy = policy.get_distribution(obs, action_masks=torch.as_tensor(data["mask"])).mode().numpy()
    return float((greedy == data["action"]).mean())


def test_cloning_makes_the_policy_choose_like_the_teacher(tmp_path):
    import torch

    torch.manual_seed(0)
    env_cfg = tiny_config(tmp_path, "x", "mlp").env
    policy = build_policy(PolicySpec(net_arch=(32,)), *observation_space(env_cfg.encoding))
    cfg = CloneConfig(teacher="short-fast", rule="best-fit", episodes=6, rounds=2, epochs=6, batch_size=64)
    held_out = range(9_000, 9_004)  # not the seeds cloning trains on
    before = _agreement(policy, env_cfg, cfg, held_out)
    record = clone(policy, env_cfg, cfg, gamma=0.99, seed=0)
    after = _agreement(policy, env_cfg, cfg, held_out)
    assert after >= 0.9 and after > before + 0.2
    assert [r["samples"] for r in record["rounds"]] == sorted(r["samples"] for r in record["rounds"])  # DAgger adds
    assert record["config"] == cfg.to_dict()


def test_training_with_cloning_records_it_in_the_card(tmp_path):
    cfg = replace(
        tiny_config(tmp_path, "tiny-clone", "mlp"),
        total_timesteps=128,
        clone=CloneConfig(episodes=2, rounds=1, epochs=2, batch_size=64),
    )
    card = train(cfg, models_dir=tmp_path / "models")
    c = card["training"]["clone"]
    assert c["config"]["teacher"] == "sjf-fast" and c["samples"] > 0 and np.isfinite(c["eval_mean_return"])
    assert card["training"]["config"]["clone"] == cfg.clone.to_dict()
    assert TrainConfig.from_dict(card["training"]["config"]) == cfg  # the config travels with the artifact
    assert card["training"]["kept"] in (
        "best evaluation",
        "the cloned policy (no PPO evaluation beat its validation return)",
    )
    assert (tmp_path / "runs" / "tiny-clone" / "cloned_policy.npz").is_file()
    text = cards.render_markdown(json.loads((tmp_path / "models" / "tiny-clone.json").read_text()))
    assert "behaviour cloning of the teacher `sjf-fast`" in text


@pytest.mark.parametrize("seed", [1, 7])
def test_best_alone_is_the_policy_whose_episode_return_is_highest(seed):
    """The label is found by plain runs of each policy; the selector env, driven with one policy throughout,
    must agree that no other policy alone returns more on that episode."""
    env = SelectorEnv(SELECTOR)
    returns = []
    for k in range(len(SELECTOR.selector)):
        env.reset(seed=seed)
        done, total = False, 0.0
        while not done:
            _, r, done, _, _ = env.step(k)
            total += r
        returns.append(total)
    env.reset(seed=seed)
    best = best_alone(env)
    assert returns[best] == pytest.approx(max(returns), abs=1e-9)
    assert len({round(r, 9) for r in returns}) > 1  # the episode tells the policies apart


def test_best_alone_over_several_workloads_of_the_kind_takes_the_lowest_mean_objective():
    """``label_seeds`` > 1 labels by the mean objective over the episode and more workloads of its kind, drawn
    from the episode's seed (the same episode, the same label); with one seed it is the episode's own best."""
    env = SelectorEnv(SELECTOR)
    changed = 0
    for seed in range(100, 106):
        env.reset(seed=seed)
        sim = env.simulation
        more = np.random.default_rng(seed).integers(TRAIN_SEED_MIN, 2**31 - 1, size=2)
        workloads = [sim.jobs, *(env.same_kind_jobs(int(s)) for s in more)]
        assert all(len(w) == len(sim.jobs) for w in workloads) and workloads[1] != workloads[0]
        costs = np.array(
            [
                [
                    objective(
                        simulate(sim.cluster, w, make_scheduler(n), seed=seed, options=sim.options), SELECTOR.reward
                    )
                    for w in workloads
                ]
                for n in SELECTOR.selector
            ]
        )
        assert best_alone(env, label_seeds=3) == int(np.argmin(costs.mean(axis=1)))
        assert best_alone(env) == int(np.argmin(costs[:, 0]))
        changed += best_alone(env, label_seeds=3) != best_alone(env)
    assert changed > 0  # the other workloads of a kind do change some labels
    with pytest.raises(EngineError, match="label_seeds > 1 needs clone.teacher 'best-alone'"):
        CloneConfig(teacher="sjf-fast", label_seeds=2)
    with pytest.raises(EngineError, match="clone.label_seeds must be an integer from 1 to 16, got 0"):
        CloneConfig(teacher=BEST_ALONE, label_seeds=0)
    with pytest.raises(EngineError, match="clone.label_seeds must be an integer from 1 to 16, got 1000000000"):
        CloneConfig(teacher=BEST_ALONE, label_seeds=10**9)


def test_a_selector_clones_the_best_policy_of_each_episode(tmp_path):
    import torch

    torch.manual_seed(0)
    policy = build_policy(PolicySpec(net_arch=(32,)), *selector_spaces(SELECTOR.encoding, len(SELECTOR.selector)))
    cfg = CloneConfig(teacher=BEST_ALONE, episodes=12, rounds=2, epochs=8, batch_size=64)
    labels = collect(SelectorEnv(SELECTOR), cfg, 0.99, range(100, 112))["action"]
    assert len(set(labels.tolist())) > 1  # different episodes have different best policies
    held_out = range(9_000, 9_006)
    before = _agreement(policy, SELECTOR, cfg, held_out)
    record = clone(policy, SELECTOR, cfg, gamma=0.99, seed=0)
    after = _agreement(policy, SELECTOR, cfg, held_out)
    assert after > before + 0.2 and record["rounds"][-1]["accuracy"] >= 0.7


@pytest.mark.parametrize("period_s", [0.0, 600.0])
def test_the_lookahead_labels_are_the_lookahead_selectors_choices(period_s):
    """Driven by its labels, a selector episode is the lookahead selector's own run, bit for bit: the labels are
    that expert's choices in the states the episode reaches, and they switch within a run."""
    env = SelectorEnv(SELECTOR)
    cfg = CloneConfig(teacher=LOOKAHEAD, label_period_s=period_s)
    switched = 0
    for seed in range(100, 106):
        labels = collect(env, cfg, 0.99, range(seed, seed + 1))["action"]
        sim = env.simulation
        ours = sim.result()
        expert = LookaheadSelector(SELECTOR.selector, SELECTOR.reward, period_s)
        theirs = simulate(sim.cluster, sim.jobs, expert, seed=seed, options=sim.options)
        np.testing.assert_array_equal(ours.seg_start_s, theirs.seg_start_s)
        np.testing.assert_array_equal(ours.seg_gpu_ids, theirs.seg_gpu_ids)
        np.testing.assert_array_equal(ours.end_s, theirs.end_s)
        switched += len(set(labels.tolist())) > 1
    assert switched > 0


def test_the_lookahead_label_period_is_checked_and_for_a_selector_only():
    for bad in (-1.0, float("nan"), float("inf"), True):
        with pytest.raises(EngineError, match="clone.label_period_s must be a finite number >= 0"):
            CloneConfig(teacher=LOOKAHEAD, label_period_s=bad)
    with pytest.raises(EngineError, match="clone.label_period_s applies to clone.teacher 'lookahead' only"):
        CloneConfig(teacher=BEST_ALONE, label_period_s=60.0)
    with pytest.raises(EngineError, match="only a selector"):
        TrainConfig(name="x", env=EnvConfig(clusters=(SMALL,), n_jobs=5), clone=CloneConfig(teacher=LOOKAHEAD))
    with pytest.raises(EngineError, match="labels the states of a selector environment"):
        collect(
            GpuSchedulingEnv(EnvConfig(clusters=(SMALL,), n_jobs=5)), CloneConfig(teacher=LOOKAHEAD), 0.99, range(1)
        )
    period_s = CloneConfig.from_dict({"teacher": LOOKAHEAD, "label_period_s": 300}).label_period_s
    assert period_s == 300.0 and isinstance(period_s, float)


@pytest.mark.parametrize(
    "teacher,more,says",
    [
        (
            BEST_ALONE,
            {"label_seeds": 2},
            "behaviour cloning of the best of its policies alone on each episode and 1 more workloads of its kind",
        ),
        (
            LOOKAHEAD,
            {"label_period_s": 900.0},
            "behaviour cloning of its lookahead expert (`LookaheadSelector`, `engine/rl/lookahead.py`: every 900 s",
        ),
    ],
)
def test_a_selector_trained_with_cloning_says_so_in_its_card(tmp_path, teacher, more, says):
    cfg = replace(
        tiny_config(tmp_path, "tiny-select-clone", "mlp"),
        env=SELECTOR,
        total_timesteps=128,
        clone=CloneConfig(teacher=teacher, episodes=2, rounds=1, epochs=2, batch_size=64, **more),
    )
    card = train(cfg, models_dir=tmp_path / "models")
    recorded = card["training"]["clone"]["config"]
    assert recorded["teacher"] == teacher and all(recorded[k] == v for k, v in more.items())
    text = cards.render_markdown(json.loads((tmp_path / "models" / "tiny-select-clone.json").read_text()))
    assert says in text
    assert "placing with" not in text  # a selector's policies place as they do themselves
    best = card["training"]["selector_prior"]["best"]
    assert f"the best alone: `{best}` (no action bias raised)" in text and "was raised by" not in text


def test_only_a_selector_clones_best_alone():
    plain = EnvConfig(clusters=(SMALL,), n_jobs=5)
    with pytest.raises(EngineError, match="only a selector"):
        TrainConfig(name="x", env=plain, clone=CloneConfig(teacher=BEST_ALONE))
    with pytest.raises(EngineError, match="a selector"):
        TrainConfig(name="x", env=SELECTOR, clone=CloneConfig(teacher="short-spare"))
    with pytest.raises(EngineError, match="episode of a selector environment"):
        collect(GpuSchedulingEnv(plain), CloneConfig(teacher=BEST_ALONE), 0.99, range(1))


@pytest.mark.parametrize(
    "data,match",
    [
        ({"teacher": "oracle"}, "clone.teacher"),
        ({"episodes": 0}, "clone.episodes"),
        (
            {"episodes": 10**12, "rounds": 10**9},
            "clone.episodes must be an integer from 1 to 10,000, got 1000000000000",
        ),
        ({"rounds": True}, "clone.rounds must be an integer from 1 to 100, got True"),
        ({"learning_rate": 0}, "clone.learning_rate"),
        ({"bogus": 1}, "unknown keys"),
    ],
)
def test_bad_clone_configs_are_one_line_errors(data, match):
    with pytest.raises(EngineError, match=match):
        TrainConfig.from_dict({"name": "x", "clone": data})


def test_teacher_rule_must_be_one_of_the_encodings():
    env = GpuSchedulingEnv(EnvConfig(clusters=(SMALL,), n_jobs=5))
    with pytest.raises(EngineError, match="not one of the encoding's rules"):
        collect(env, CloneConfig(rule="least-loaded"), 0.99, range(1))


#: A plain agent's episodes where different teachers win (SELECTOR's clusters and workloads), in an encoding that
#: holds each teacher's choices (its window and rule, GPU-type slots for every type, evict by type).
PLAIN = replace(
    SELECTOR,
    selector=(),
    encoding=EncodingConfig(window=16, max_types=2, rules=("best-fit", "evict"), window_order="mixed"),
)
BEST = CloneConfig(teacher=BEST_TEACHER, teachers=("short-whole", "short-spare-evict", "fifo-fast", "sjf-fast"))


@pytest.mark.parametrize("placements", [(), ("best-fit", "fgd")])
def test_best_teacher_labels_an_episode_with_the_actions_of_its_best_teacher_alone(placements):
    # Driven by its labels, each episode is the run of the (teacher, rule) pair that alone, within the agent's
    # encoding, has the lowest objective on it (its objective to the last digit), and the winners differ between
    # episodes.
    env_cfg = replace(PLAIN, encoding=replace(PLAIN.encoding, rules=("best-fit", "fgd", "evict")))
    cfg, env, winners = replace(BEST, placements=placements), GpuSchedulingEnv(env_cfg), set()
    assert cfg.candidates() == [(n, r) for n in BEST.teachers for r in placements or ("best-fit",)]
    for seed in range(4):
        env.reset(seed=seed)
        sim = env.simulation
        alone = [
            objective(
                simulate(sim.cluster, sim.jobs, within(n, env_cfg.encoding, r), seed=sim.seed, options=sim.options),
                env_cfg.reward,
            )
            for n, r in cfg.candidates()
        ]
        winners.add(int(np.argmin(alone)))
        label_of, done = cfg.labeller(env), False
        while not done:
            _, _, done, _, _ = env.step(label_of())
        assert objective(env.simulation.result(), env_cfg.reward) == min(alone)
    assert len(winners) > 1


@pytest.mark.parametrize(
    "clone,env,match",
    [
        ({"teacher": BEST_TEACHER}, PLAIN, "clone.teachers lists the teachers of clone.teacher 'best-teacher'"),
        ({"teacher": "sjf-fast", "teachers": ["short-fast", "sjf-fast"]}, PLAIN, "and only of it"),
        ({"teacher": BEST_TEACHER, "teachers": ["short-fast", "oracle"]}, PLAIN, "got \\['oracle'\\]"),
        ({"teacher": BEST_TEACHER, "teachers": ["short-fast", "short-fast"]}, PLAIN, "2 or more distinct"),
        ({"teacher": BEST_TEACHER, "teachers": ["short-fast"]}, PLAIN, "2 or more distinct"),
        ({"teacher": BEST_TEACHER, "teachers": "short-fast"}, PLAIN, "clone.teachers must be a list of names"),
        ({"teacher": BEST_TEACHER, "teachers": ["short-fast", "sjf-fast"]}, SELECTOR, "only a selector"),
        (
            {"teacher": BEST_TEACHER, "teachers": ["short-fast", "short-spare-evict-est-cap"]},
            PLAIN,
            "short-spare-evict-est-cap chooses with another encoding",
        ),
        (
            {"teacher": BEST_TEACHER, "teachers": ["short-fast", "sjf-fast"]},
            replace(PLAIN, encoding=EncodingConfig(rules=("first-fit",))),
            "not among the encoding's rules",
        ),
        (
            {"teacher": BEST_TEACHER, "teachers": ["short-fast", "sjf-fast"], "placements": ["best-fit", "fgd"]},
            PLAIN,
            "places with fgd, not among the encoding's rules",
        ),
        ({"teacher": "sjf-fast", "placements": ["best-fit"]}, PLAIN, "for clone.teacher 'best-teacher' only"),
        ({"teacher": BEST_TEACHER, "teachers": ["short-fast", "sjf-fast"], "placements": ["evict"]}, PLAIN, "rules of"),
        (
            {"teacher": BEST_TEACHER, "teachers": ["short-fast", "sjf-fast"], "placements": ["x"] * 10**5},
            PLAIN,
            "rules of",
        ),
        (
            {"teacher": BEST_TEACHER, "teachers": ["short-fast", "sjf-fast"], "placements": ["fgd", "fgd"]},
            PLAIN,
            "clone.placements: distinct rules",
        ),
    ],
)
def test_bad_best_teacher_configs_are_one_line_errors(clone, env, match):
    with pytest.raises(EngineError, match=match):
        TrainConfig(name="x", env=env, clone=CloneConfig.from_dict(clone))


def test_an_agent_cloned_from_its_best_teachers_says_so_in_its_card(tmp_path):
    cfg = replace(
        tiny_config(tmp_path, "tiny-best-teacher", "mlp"),
        env=PLAIN,
        total_timesteps=128,
        clone=replace(BEST, episodes=2, rounds=1, epochs=2, batch_size=64, label_seeds=2),
    )
    card = train(cfg, models_dir=tmp_path / "models")
    assert card["training"]["clone"]["config"]["teachers"] == list(BEST.teachers)
    text = cards.render_markdown(json.loads((tmp_path / "models" / "tiny-best-teacher.json").read_text()))
    assert (
        "behaviour cloning of the best of the teachers `short-whole`, `short-spare-evict`, `fifo-fast`, `sjf-fast`, "
        "each placing with `best-fit`, alone within its encoding on each episode and 1 more workloads of its kind"
        in text
    )
