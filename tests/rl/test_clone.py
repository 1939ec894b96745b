"""Behaviour cloning: the student learns the teacher's choices, and the card records how it was warm-started."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from engine.errors import EngineError
from engine.rl import cards
from engine.rl.clone import CloneConfig, clone, collect
from engine.rl.env import EnvConfig, GpuSchedulingEnv, observation_space
from engine.rl.policies import PolicySpec, build_policy
from engine.rl.train import TrainConfig, train

from .conftest import SMALL, tiny_config


def _agreement(policy, env_cfg: EnvConfig, cfg: CloneConfig, seeds: range) -> float:
    """Share of the teacher's decisions the policy's most likely allowed action matches, on teacher episodes."""
    import torch

    data = collect(GpuSchedulingEnv(env_cfg), cfg, 0.99, seeds)
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


@pytest.mark.parametrize(
    "data,match",
    [
        ({"teacher": "oracle"}, "clone.teacher"),
        ({"episodes": 0}, "clone.episodes"),
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
