"""The rl:<name> scheduler: shipped models load (hash checked) and schedule; tampered or malicious files are refused."""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from engine import make_scheduler, parse_cluster, simulate
from engine.analysis.workload import make_jobs
from engine.errors import EngineError
from engine.rl.agent import MODELS_DIR, ModelError, load_agent, model_names
from engine.rl.encoding import EncodingConfig
from engine.rl.env import EnvConfig, GpuSchedulingEnv
from engine.rl.train import sha256_file

from .conftest import SMALL

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", model_names())
def test_every_shipped_model_loads_and_schedules(name):
    card = json.loads((MODELS_DIR / f"{name}.json").read_text())
    weights = MODELS_DIR / card["weights"]
    assert weights.stat().st_size < 5 * 2**20
    assert sha256_file(weights) == card["sha256"]
    assert (MODELS_DIR / f"{name}.md").is_file()
    sched = make_scheduler(f"rl:{name}")
    cluster = parse_cluster("2x8:A100-80,4x4:V100-32")
    res = simulate(cluster, make_jobs(cluster, 40, 1.2, 3), sched)
    assert (res.status == 0).all() and np.isfinite(res.end_s).all()


@pytest.mark.parametrize("name", ["tiny-mlp", "tiny-attn"])
def test_agent_decisions_equal_the_env_driven_by_the_same_policy(tiny_models, name):
    agent = load_agent(name, tiny_models)
    cluster = parse_cluster(SMALL)
    jobs = make_jobs(cluster, 30, 1.3, 5)
    ref = simulate(cluster, jobs, agent)
    env = GpuSchedulingEnv(EnvConfig(clusters=(SMALL,), encoding=agent.encoding))
    obs, _ = env.reset(seed=0, options={"cluster": cluster, "jobs": jobs})
    done = False
    while not done:
        obs, _, done, _, info = env.step(agent.act(obs, env.action_masks()))
        assert not info["invalid_action"]
    np.testing.assert_array_equal(env.result.first_start_s, ref.first_start_s)
    assert env.result.gpu_ids == ref.gpu_ids


def test_agent_runs_on_a_larger_cluster_than_it_was_trained_on(tiny_models):
    agent = load_agent("tiny-mlp", tiny_models)
    cluster = parse_cluster("8x8:A100-80,4x4:V100-32")
    res = simulate(cluster, make_jobs(cluster, 60, 1.0, 1), agent)
    assert (res.status == 0).all()


def test_too_many_gpu_types_is_a_clear_error(tiny_models):
    agent = load_agent("tiny-mlp", tiny_models)  # trained with max_types=2
    cluster = parse_cluster("1x4:A100-80,1x4:V100-32,1x4:T4")
    with pytest.raises(EngineError, match="at most 2 GPU types"):
        simulate(cluster, make_jobs(cluster, 5, 1.0, 1), agent)


def _copy_model(src: Path, dst: Path, name: str) -> Path:
    dst.mkdir(exist_ok=True)
    for suffix in (".json", ".pt"):
        shutil.copy(src / f"{name}{suffix}", dst / f"{name}{suffix}")
    return dst


def test_altered_weights_are_refused_before_loading(tiny_models, tmp_path):
    models = _copy_model(tiny_models, tmp_path / "m", "tiny-mlp")
    with open(models / "tiny-mlp.pt", "ab") as f:
        f.write(b"\0")
    with pytest.raises(ModelError, match="does not match the card"):
        load_agent("tiny-mlp", models)


class _Payload:
    """Unpickling this object would create the marker file: the attack a model file must not get to run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


@pytest.mark.parametrize("writer", ["pickle", "torch.save"])
def test_malicious_weights_file_is_refused_without_running_its_code(tiny_models, tmp_path, writer):
    models = _copy_model(tiny_models, tmp_path / "m", "tiny-mlp")
    marker = tmp_path / "pwned"
    payload = {"mlp_extractor.policy_net.0.weight": _Payload(marker)}
    weights = models / "tiny-mlp.pt"
    if writer == "pickle":
        weights.write_bytes(pickle.dumps(payload))
    else:
        torch.save(payload, weights)
    # The attacker also rewrites the card's hash, so the file passes the integrity check and reaches torch.load.
    card = json.loads((models / "tiny-mlp.json").read_text())
    card["sha256"] = sha256_file(weights)
    (models / "tiny-mlp.json").write_text(json.dumps(card))
    with pytest.raises(ModelError, match="refused"):
        load_agent("tiny-mlp", models)
    assert not marker.exists()


@pytest.mark.parametrize("name,match", [("../secrets", "no paths"), ("nope", "no model 'nope'")])
def test_bad_names_are_clear_errors(tiny_models, name, match):
    with pytest.raises(ModelError, match=match):
        load_agent(name, tiny_models)


def test_card_pointing_outside_the_models_folder_is_refused(tiny_models, tmp_path):
    models = _copy_model(tiny_models, tmp_path / "m", "tiny-mlp")
    card = json.loads((models / "tiny-mlp.json").read_text())
    card["weights"] = "../elsewhere.pt"
    (models / "tiny-mlp.json").write_text(json.dumps(card))
    with pytest.raises(ModelError, match="plain .pt file name"):
        load_agent("tiny-mlp", models)


def test_weights_that_do_not_fit_the_card_are_refused(tiny_models, tmp_path):
    models = _copy_model(tiny_models, tmp_path / "m", "tiny-mlp")
    card = json.loads((models / "tiny-mlp.json").read_text())
    card["encoding"] = EncodingConfig(window=6, max_types=2, window_order="mixed").to_dict()
    (models / "tiny-mlp.json").write_text(json.dumps(card))
    with pytest.raises(ModelError, match="do not fit"):
        load_agent("tiny-mlp", models)


def test_importing_engine_and_heuristics_does_not_import_torch():
    code = ("import sys, engine, engine.analysis.evaluate, engine.rl.encoding; from engine import make_scheduler; "
            "make_scheduler('sjf'); assert 'torch' not in sys.modules and 'gymnasium' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
