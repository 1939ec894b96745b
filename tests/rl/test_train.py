"""Training: a short run writes plain weights and an honest card; configs are validated with clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.errors import EngineError
from engine.rl.agent import load_weights, model_spec, read_card
from engine.rl.train import TrainConfig, config_names, load_config, sha256_file


def test_smoke_training_writes_weights_and_card(tiny_models, tmp_path):
    for name in ("tiny-mlp", "tiny-attn"):
        card = json.loads((tiny_models / f"{name}.json").read_text())
        weights = tiny_models / card["weights"]
        assert card["sha256"] == sha256_file(weights)
        assert card["training"]["timesteps"] >= 256
        assert card["training"]["wall_time_s"] > 0
        assert set(card["training"]["libraries"]) >= {"torch", "stable_baselines3", "sb3_contrib", "gymnasium"}
        # The card's config rebuilds the same config (what was trained is exactly reproducible).
        cfg = TrainConfig.from_dict(card["training"]["config"])
        assert cfg.to_dict() == card["training"]["config"]
        assert card["format"] == "npz" and weights.suffix == ".npz"
        state = load_weights(weights, card["sha256"], model_spec(name, card)[2])  # exactly the network's arrays
        assert all(v.dtype == np.float32 for v in state.values())
    assert (tiny_models.parent / "runs" / "tiny-mlp" / "tb").is_dir()  # TensorBoard logs


@pytest.mark.parametrize("name", config_names())
def test_shipped_configs_load(name):
    cfg = load_config(name)
    assert cfg.name == name and cfg.total_timesteps > 0


@pytest.mark.parametrize(
    "data,match",
    [
        ({"name": "x", "bogus": 1}, "unknown keys"),
        ({"name": "x", "n_envs": 0}, "n_envs must be an integer from 1 to 256, got 0"),
        ({"name": "x", "n_envs": 10**6}, "n_envs must be an integer from 1 to 256, got 1000000"),
        ({"name": "x", "total_timesteps": 10**20}, "total_timesteps must be an integer from 1 to 1,000,000,000"),
        ({"name": "x", "eval_episodes": 10**9}, "eval_episodes must be an integer from 1 to 10,000"),
        ({"name": "x", "n_epochs": True}, "n_epochs must be an integer from 1 to 1,000, got True"),
        ({"name": "x", "n_steps": 100_000, "n_envs": 16}, "n_steps x n_envs is 1,600,000 steps of rollout"),
        ({"name": "x", "seed": 2**64}, "seed must be an integer from 0 to 2,147,483,647, got 18446744073709551616"),
        ({"name": "x", "seed": "0"}, "seed must be an integer from 0 to 2,147,483,647, got '0'"),
        ({"name": "../x"}, "name"),
        ({"name": "x", "policy": {"kind": "rnn"}}, "policy.kind"),
        ({"name": "x", "env": {"encoding": {"rules": ["nope"]}}}, "encoding.rules"),
        ({"name": "x", "env": {"from": "../../etc/passwd"}}, "env.from '../../etc/passwd' is not a shipped config"),
        ({"name": "x", "env": {"from": ["select-wait"]}}, "env.from .* is not a shipped config"),
        ({"name": "x", "env": {"from": "select-wait", "bogus": 1}}, "unknown keys"),
    ],
)
def test_bad_configs_are_one_line_errors(data, match, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    with pytest.raises(EngineError, match=match):
        load_config(str(path))


def test_env_from_takes_a_shipped_configs_env_with_its_own_keys_replacing(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"name": "x", "env": {"from": "select-wait", "selector": [], "loads": [0.7]}}))
    cfg = load_config(str(path))
    env, base = cfg.env, load_config("select-wait").env
    assert env.loads == (0.7,) and not env.selector
    assert (env.clusters, env.workloads, env.presets, env.options) == (
        base.clusters,
        base.workloads,
        base.presets,
        base.options,
    )
    assert "from" not in cfg.to_dict()["env"]  # a card holds the whole env


def test_env_from_in_a_circle_is_a_one_line_error(tmp_path, monkeypatch):
    import engine.rl.train as train

    for name, other in (("a", "b"), ("b", "a")):
        (tmp_path / f"{name}.json").write_text(json.dumps({"name": name, "env": {"from": other}}))
    monkeypatch.setattr(train, "CONFIGS_DIR", tmp_path)
    with pytest.raises(EngineError, match="env.from goes round in a circle through '[ab]'"):
        load_config("a")


def test_unknown_config_name_lists_the_shipped_configs():
    with pytest.raises(EngineError, match="configs: .*wait-mlp"):
        load_config("no-such-config")


def test_curriculum_reaches_the_wrapped_environments():
    from stable_baselines3.common.vec_env import DummyVecEnv

    from engine.rl.env import EnvConfig
    from engine.rl.train import _make_env

    venv = DummyVecEnv([_make_env(EnvConfig(clusters=("2x4:V100-32",), n_jobs=10), 0)])
    venv.env_method("set_sampling", ("4x4:V100-32",), (1.5,), 12)
    cfg = venv.get_attr("config")[0]
    assert cfg.clusters == ("4x4:V100-32",) and cfg.loads == (1.5,) and cfg.n_jobs == 12
    venv.reset()
    assert venv.get_attr("simulation")[0].cluster.n_gpus == 16


def test_cli_trains_from_a_config_file(tmp_path, capsys):
    from engine.cli import main

    from .conftest import tiny_config

    cfg = tiny_config(tmp_path, "cli-mlp", "mlp")
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(cfg.to_dict()))
    assert (
        main(
            ["train", "--config", str(path), "--models-dir", str(tmp_path / "models"), "--quiet", "--timesteps", "128"]
        )
        == 0
    )
    assert "trained cli-mlp" in capsys.readouterr().out
    card = json.loads((tmp_path / "models" / "cli-mlp.json").read_text())
    assert card["training"]["config"]["total_timesteps"] == 128


def test_cli_bad_config_is_one_line_exit_2(tmp_path, capsys):
    from engine.cli import main

    assert main(["train", "--config", "no-such-config"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such shipped config" in err


def test_init_from_continues_the_parent_and_counts_its_steps(tiny_models, tmp_path, monkeypatch):
    from dataclasses import replace

    from engine.rl import train as train_mod

    from .conftest import tiny_config

    monkeypatch.setattr(train_mod, "MODELS_DIR", tiny_models)
    parent = json.loads((tiny_models / "tiny-mlp.json").read_text())
    # A learning rate of 1e-12 leaves the weights where they started: they must be the parent's, not a fresh init.
    cfg = replace(
        tiny_config(tmp_path, "tiny-mlp-cont", "mlp"),
        init_from="tiny-mlp",
        total_timesteps=128,
        learning_rate=1e-12,
        seed=7,
    )
    card = train_mod.train(cfg, models_dir=tmp_path / "out")
    tr = card["training"]
    assert tr["this_run"]["timesteps"] == 128
    assert tr["timesteps"] == parent["training"]["timesteps"] + 128
    assert tr["wall_time_s"] >= parent["training"]["wall_time_s"]
    assert tr["init_from"]["sha256"] == parent["sha256"] and tr["config"]["init_from"] == "tiny-mlp"
    # No PPO evaluation beat the parent on validation (its weights did not move): the parent is what ships.
    assert tr["kept"] == "the policy it started from (tiny-mlp) (no PPO evaluation beat its validation return)"
    shapes = model_spec("tiny-mlp", parent)[2]
    start = load_weights(tiny_models / parent["weights"], parent["sha256"], shapes)
    final = tmp_path / "runs" / "tiny-mlp-cont" / "final_policy.npz"
    end = load_weights(final, sha256_file(final), shapes)
    assert start.keys() == end.keys()
    assert all(np.allclose(start[k], end[k], atol=1e-6) for k in start)


@pytest.mark.parametrize("name,kind", [("tiny-mlp", "mlp"), ("tiny-attn", "attention")])
def test_init_from_may_add_packing_rules_and_starts_deciding_as_the_parent(
    name, kind, tiny_models, tmp_path, monkeypatch
):
    # Widening the action space (issue 38: fgd and topo-pack as choices beside best-fit) keeps what the parent
    # learned: the child starts from the parent's weights, an added rule a little less likely than the rule it
    # copies, so until PPO moves it the child makes every decision the parent makes.
    from dataclasses import replace

    from engine import parse_cluster, simulate
    from engine.analysis.workload import make_jobs
    from engine.rl import train as train_mod
    from engine.rl.agent import load_agent
    from engine.rl.cards import render_markdown

    from .conftest import SMALL, tiny_config

    monkeypatch.setattr(train_mod, "MODELS_DIR", tiny_models)
    base = tiny_config(tmp_path, f"{name}-wide", kind)
    wide = replace(base.env.encoding, rules=("first-fit", "best-fit", "fgd", "topo-pack"))
    cfg = replace(base, env=replace(base.env, encoding=wide), init_from=name, total_timesteps=128, learning_rate=1e-12)
    card = train_mod.train(cfg, models_dir=tmp_path / "out")
    assert card["training"]["init_from"]["rules"] == ["first-fit", "best-fit"]
    assert "this run added `fgd`, `topo-pack`, each starting as a copy" in render_markdown(card)
    assert card["training"]["kept"].startswith(f"the policy it started from ({name})")
    parent, child = load_agent(name, tiny_models), load_agent(f"{name}-wide", tmp_path / "out")
    assert child.encoding.n_actions == 2 * parent.encoding.n_actions - 1
    cluster = parse_cluster(SMALL)
    jobs = make_jobs(cluster, 60, 1.5, 3)
    a, b = simulate(cluster, jobs, parent), simulate(cluster, jobs, child)
    assert a.gpu_ids == b.gpu_ids and np.array_equal(a.first_start_s, b.first_start_s)
    # "evict" adds inputs, so it is no rule a child may add.
    evicting = replace(cfg, env=replace(cfg.env, encoding=replace(wide, rules=("first-fit", "best-fit", "evict"))))
    with pytest.raises(EngineError, match="encoding .* must be equal"):
        train_mod.train(replace(evicting, name=f"{name}-evict"), models_dir=tmp_path / "out")


@pytest.mark.parametrize(
    "parent,kind,match",
    [
        ("tiny-attn", "mlp", "policy .* must be equal"),
        ("no-such-model", "mlp", "no model 'no-such-model'"),
    ],
)
def test_init_from_refuses_a_mismatched_or_missing_parent(parent, kind, match, tiny_models, tmp_path, monkeypatch):
    from dataclasses import replace

    from engine.rl import train as train_mod

    from .conftest import tiny_config

    monkeypatch.setattr(train_mod, "MODELS_DIR", tiny_models)
    cfg = replace(tiny_config(tmp_path, "child", kind), init_from=parent)
    with pytest.raises(EngineError, match=match):
        train_mod.train(cfg, models_dir=tmp_path / "out")


def test_an_eviction_cap_can_be_deployed_over_a_training_encoding_without_one(tmp_path):
    from dataclasses import replace

    from .conftest import tiny_config

    cfg = tiny_config(tmp_path, "tiny-cap", "mlp")
    capped = replace(cfg, deploy_encoding={"max_evictions": 40})
    assert capped.env.encoding == cfg.env.encoding and cfg.env.encoding.max_evictions is None
    assert capped.deployed_encoding() == replace(cfg.env.encoding, max_evictions=40)
    assert TrainConfig.from_dict(capped.to_dict()) == capped
    with pytest.raises(EngineError, match="max_evictions must be an integer >= 1"):
        replace(cfg, deploy_encoding={"max_evictions": 0})
    with pytest.raises(EngineError, match="keys from"):
        replace(cfg, deploy_encoding={"window": 4})  # a layout change is never deployed


def test_deploy_encoding_shields_the_exported_agent_only(tmp_path):
    # Trained with the plain encoding, shipped with whole_node: the card runs with it, its config still says how
    # it was trained, and the agent never starts a job that one node could hold spread over nodes.
    from dataclasses import replace

    from engine import parse_cluster, simulate
    from engine.analysis.workload import make_jobs
    from engine.rl.agent import load_agent
    from engine.rl.cards import render_markdown
    from engine.rl.train import train

    from .conftest import SMALL, tiny_config

    cfg = replace(
        tiny_config(tmp_path, "tiny-shield", "mlp"), total_timesteps=128, deploy_encoding={"whole_node": True}
    )
    card = train(cfg, models_dir=tmp_path / "out")
    assert card["encoding"]["whole_node"] is True
    assert "whole_node" not in card["training"]["config"]["env"]["encoding"]
    assert TrainConfig.from_dict(card["training"]["config"]) == cfg
    assert '{"whole_node": true} applies at inference only' in render_markdown(card | {"sha256": "x"})
    agent = load_agent("tiny-shield", tmp_path / "out")
    assert agent.encoding.whole_node
    cluster = parse_cluster(SMALL)
    jobs = make_jobs(cluster, 80, 1.5, 7)  # the same weights without the shield spread 3 of its 10 such jobs
    res = simulate(cluster, jobs, agent)
    node = cluster.layout.gpu_node
    held = [ids for job, ids in zip(jobs, res.gpu_ids) if 1 < job.gpus <= 4]
    assert len(held) >= 5
    assert all(len(set(node[list(ids)].tolist())) == 1 for ids in held)
    # The shielded agent's training continues (its card holds the deployed encoding, its config the trained one).
    child = train(replace(cfg, init_from="tiny-shield", total_timesteps=64), models_dir=tmp_path / "out")
    assert child["training"]["init_from"]["sha256"] == card["sha256"] and child["encoding"]["whole_node"] is True


@pytest.mark.parametrize(
    "deploy,match",
    [
        ({"window": 8}, "deploy_encoding"),
        ({"whole_node": 1}, "whole_node"),
        ({"evict_scope": "node"}, 'evict_scope needs the "evict" rule'),
        ({"elastic_start": "yes"}, "elastic_start must be true or false"),
    ],
)
def test_deploy_encoding_takes_only_layout_preserving_options(deploy, match):
    with pytest.raises(EngineError, match=match):
        TrainConfig.from_dict({"name": "x", "deploy_encoding": deploy})


def test_a_selector_deploys_no_elastic_sizing():
    # A selector starts no job itself: elastic sizing around its starts would do nothing, so it is refused.
    with pytest.raises(EngineError, match="a selector starts none"):
        TrainConfig.from_dict(
            {"name": "x", "env": {"selector": ["fifo", "sjf"]}, "deploy_encoding": {"elastic_start": True}}
        )


@pytest.mark.parametrize("name", config_names())
def test_each_shipped_card_holds_its_config(name):
    # Config travels with its artifact: retraining the config is what made the shipped weights.
    from engine.rl.agent import MODELS_DIR, read_card

    if not (MODELS_DIR / f"{name}.json").is_file():
        pytest.skip(f"config {name} has no shipped model")
    card = read_card(name)
    config, shipped = load_config(name), TrainConfig.from_dict(card["training"]["config"])
    assert _with_progress_of(shipped, config) == config
    assert card["encoding"] == config.deployed_encoding().to_dict()


def _with_progress_of(cfg: TrainConfig, like: TrainConfig) -> TrainConfig:
    """``cfg`` with ``like``'s progress bar setting (how a run displays, not what it trains)."""
    from dataclasses import replace

    return replace(cfg, progress_bar=like.progress_bar)


def _copy_model(src, dst, name: str) -> dict:
    import shutil

    dst.mkdir(parents=True, exist_ok=True)
    card = json.loads((src / f"{name}.json").read_text())
    for file in (f"{name}.json", card["weights"]):
        shutil.copy(src / file, dst / file)
    return card


def _pair(models, name: str) -> tuple[str, dict]:
    """The model's card SHA-256 and its weights, loaded and checked as an agent loads them."""
    from engine.rl.agent import load_model_weights

    card = read_card(name, models)
    return card["sha256"], load_model_weights(name, card, models, model_spec(name, card)[2])


def test_a_resume_killed_before_its_card_is_written_keeps_the_previous_model(tiny_models, tmp_path, monkeypatch):
    # Issue 32: the export wrote the new weights over the old ones, then the card; a kill in between left the
    # old card naming weights of another SHA-256, and the model could never load again.
    from dataclasses import replace

    from engine.rl import train as train_mod

    from .conftest import tiny_config

    models = tmp_path / "models"
    old = _copy_model(tiny_models, models, "tiny-mlp")
    cfg = replace(
        tiny_config(tmp_path, "tiny-mlp", "mlp"), init_from="tiny-mlp", total_timesteps=128, eval_freq=10_000, seed=7
    )
    real_dumps = json.dumps

    def killed_at_the_card(obj, *args, **kwargs):
        if isinstance(obj, dict) and {"weights", "sha256", "training"} <= obj.keys():
            raise KeyboardInterrupt("killed")
        return real_dumps(obj, *args, **kwargs)

    monkeypatch.setattr(json, "dumps", killed_at_the_card)
    with pytest.raises(KeyboardInterrupt):
        train_mod.train(cfg, models_dir=models)
    monkeypatch.setattr(json, "dumps", real_dumps)
    assert _pair(models, "tiny-mlp")[0] == old["sha256"]  # the old card, and the weights it names
    card = train_mod.train(cfg, models_dir=models)  # not killed: the new pair, and no other weights are left
    # (no PPO evaluation ran, so the parent's weights are the kept ones: the new card counts the new steps)
    assert _pair(models, "tiny-mlp")[0] == card["sha256"]
    assert read_card("tiny-mlp", models)["training"]["timesteps"] == old["training"]["timesteps"] + 128
    assert sorted(p.name for p in models.iterdir()) == sorted(["tiny-mlp.json", card["weights"]])


@pytest.mark.parametrize("kill", ["weights rename", "card rename", "old weights removal"])
def test_an_export_killed_at_any_step_leaves_the_old_pair_or_the_new_one(kill, tiny_models, tmp_path, monkeypatch):
    import os
    from pathlib import Path

    from engine.rl import agent

    models = tmp_path / "models"
    old = _copy_model(tiny_models, models, "tiny-mlp")
    arrays = {k: v * 2 for k, v in _pair(models, "tiny-mlp")[1].items()}
    agent.write_weights(arrays, tmp_path / "new.npz")
    new_bytes = (tmp_path / "new.npz").read_bytes()
    real_replace, real_unlink = os.replace, Path.unlink
    renames = []

    def replace_or_die(src, dst):
        renames.append(dst)
        if (kill, len(renames)) in (("weights rename", 1), ("card rename", 2)):
            raise KeyboardInterrupt("killed")
        real_replace(src, dst)

    def unlink_or_die(path, missing_ok=False):
        if kill == "old weights removal" and path.suffix == ".npz":
            raise KeyboardInterrupt("killed")
        real_unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(os, "replace", replace_or_die)
    monkeypatch.setattr(Path, "unlink", unlink_or_die)
    with pytest.raises(KeyboardInterrupt):
        agent.export_model(models, "tiny-mlp", new_bytes, old)
    monkeypatch.undo()
    sha, weights = _pair(models, "tiny-mlp")
    if kill == "old weights removal":  # the card was written: the new pair
        assert sha != old["sha256"] and all(np.array_equal(weights[k], arrays[k]) for k in arrays)
    else:
        assert sha == old["sha256"]
    again = agent.export_model(models, "tiny-mlp", new_bytes, old)  # a later export tidies up
    assert sorted(p.name for p in models.iterdir()) == sorted(["tiny-mlp.json", again["weights"]])


def test_deadline_config_trains_on_deadline_workloads_with_the_deadline_inputs_and_term():
    from engine.analysis.deadlines import has_deadlines
    from engine.rl.env import GpuSchedulingEnv
    from engine.rl.reward import objective

    cfg = load_config("deadline-mlp")
    enc, weights = cfg.env.encoding, cfg.env.reward
    assert enc.deadlines and weights.deadline > 0
    assert all(w["deadlines"] == "elasticflow" for w in cfg.env.workloads)
    env = GpuSchedulingEnv(cfg.env)
    obs, _ = env.reset(seed=3, options={"n_jobs": 30})
    rng = np.random.default_rng(3)
    total, done, flagged = 0.0, False, 0.0
    while not done:
        flagged += obs["jobs"][:, -5].sum()  # the has-deadline input
        obs, r, done, _, _ = env.step(rng.choice(np.flatnonzero(env.action_masks())))
        total += r
    assert has_deadlines(env.result) and flagged > 0
    assert total == pytest.approx(-objective(env.result, weights), rel=1e-9, abs=1e-12)
