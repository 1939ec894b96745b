"""A tiny model trained once per test session (a few hundred steps), shared by the agent tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.rl.encoding import EncodingConfig
from engine.rl.env import EnvConfig
from engine.rl.policies import PolicySpec
from engine.rl.train import TrainConfig, train

SMALL = "2x4:A100-80,2x4:V100-32"


def tiny_config(tmp: Path, name: str, kind: str) -> TrainConfig:
    return TrainConfig(
        name=name,
        env=EnvConfig(
            clusters=(SMALL,),
            loads=(1.2,),
            n_jobs=25,
            encoding=EncodingConfig(window=4, max_types=2, window_order="mixed"),
        ),
        policy=PolicySpec(kind=kind, net_arch=(16,), d_model=8, n_heads=2),
        total_timesteps=256,
        n_envs=2,
        n_steps=64,
        batch_size=64,
        n_epochs=1,
        eval_freq=128,
        eval_episodes=1,
        checkpoint_freq=128,
        progress_bar=False,
        runs_dir=str(tmp / "runs"),
    )


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> Path:
    """A models folder holding ``tiny-mlp`` and ``tiny-attn``, trained for 256 steps each."""
    tmp = tmp_path_factory.mktemp("rl")
    models = tmp / "models"
    for name, kind in (("tiny-mlp", "mlp"), ("tiny-attn", "attention")):
        train(tiny_config(tmp, name, kind), models_dir=models)
    return models
