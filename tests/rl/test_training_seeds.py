"""Training and model selection never meet a test workload: the seed ranges are held apart (issue 38)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.analysis.workload import TRAIN_SEED_MIN
from engine.rl.env import EnvConfig, GpuSchedulingEnv, SelectorEnv
from engine.rl.train import VALIDATION_SEED_BASE, config_names, load_config

#: Seeds the tests use: cards' test seeds and ``evaluate --seeds`` (0..N-1, N at most 10,000; cards use 30),
#: and the teaching presets' seeds 0-29 (the held-out workloads are evaluated on seeds from 0 too).
TEST_SEEDS = range(0, 10_000)
PRESET_SEEDS = range(0, 30)


@pytest.mark.parametrize("name", config_names())
def test_validation_seeds_are_neither_test_nor_training_seeds(name):
    cfg = load_config(name)
    validation = range(VALIDATION_SEED_BASE, VALIDATION_SEED_BASE + cfg.eval_episodes + 1)
    for held in (TEST_SEEDS, PRESET_SEEDS):
        assert not set(validation) & set(held)
    assert validation.stop <= TRAIN_SEED_MIN


def test_training_episodes_draw_workload_seeds_above_every_test_and_validation_seed(monkeypatch):
    """Resets of the select-wait training envs (every cluster, load, workload kind and preemption) build their
    workloads only from seeds at or above TRAIN_SEED_MIN."""
    cfg, other = load_config("select-wait").env, load_config("wait-mlp").env
    seeds: list[int] = []
    kinds: set[int] = set()
    real = EnvConfig.workload_spec

    def spy(self, load, seed, n_jobs=None, kind=0):
        seeds.append(seed)
        kinds.add(kind)
        return real(self, load, seed, 5, kind)  # 5 jobs: only the seed matters here

    monkeypatch.setattr(EnvConfig, "workload_spec", spy)
    for env in (SelectorEnv(cfg), GpuSchedulingEnv(other)):
        for i in range(60):
            env.reset(seed=i)
    assert min(seeds) >= TRAIN_SEED_MIN > VALIDATION_SEED_BASE + 1000
    assert kinds == set(range(len(cfg.workloads)))  # every workload kind is drawn


def test_select_wait_trains_on_the_issue_s_distribution():
    """Heterogeneous clusters of 2-16 nodes with T4, A10, V100, A100 and H100, loads 0.6-1.8, the presets' kinds
    of workload (elastic jobs with deadlines among them) and both free and costly preemption."""
    from engine.sim.cluster import parse_cluster

    env = load_config("select-wait").env
    clusters = [parse_cluster(c) for c in env.clusters]
    nodes = [len(c.layout.node_gpus) for c in clusters]
    assert min(nodes) == 2 and max(nodes) == 16
    types = {t.split("-")[0] for c in clusters for t in c.layout.type_names}
    assert {"T4", "A10", "V100", "A100", "H100"} <= types
    assert min(env.loads) == 0.6 and max(env.loads) == 1.8
    assert any(o.preemption.checkpoint_interval_s is None and o.preemption.restart_overhead_s == 0 for o in env.options)
    assert any(o.preemption.checkpoint_interval_s is not None for o in env.options)
    kinds = env.workloads
    assert any(any("fraction" in t for t in w.get("types", {}).values()) for w in kinds)  # fractional inference
    assert any(w.get("user_skew", 0) >= 2 for w in kinds)  # a heavy user
    assert any(max(map(int, t.get("gpus", {"1": 1}))) >= 16 for w in kinds for t in w.get("types", {}).values())
    assert any(w.get("elastic") and w.get("deadlines") for w in kinds)  # elastic jobs with deadlines
    assert np.isfinite(env.reward.wait_scale_s)
