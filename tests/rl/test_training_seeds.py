"""Training and model selection never meet a test workload: the seed ranges are held apart (issue 38)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from engine.analysis.evaluate import parse_scenario
from engine.analysis.presets import PRESETS
from engine.analysis.scenario import WorkloadSpec
from engine.analysis.workload import TRAIN_SEED_MIN
from engine.rl.agent import model_names
from engine.rl.cards import HELD_OUT
from engine.rl.env import EnvConfig, make_env
from engine.rl.train import VALIDATION_SEED_BASE, config_names, load_config
from engine.sim.cluster import parse_cluster

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


@pytest.mark.parametrize("name", config_names())
def test_training_episodes_draw_workload_seeds_above_every_test_and_validation_seed(monkeypatch, name):
    """Resets of every shipped config's training env (every cluster, load, workload kind, teaching preset and
    preemption) build their workloads only from seeds at or above TRAIN_SEED_MIN."""
    cfg = load_config(name).env
    seeds: list[int] = []
    kinds: set[int] = set()
    real_spec, real_build = EnvConfig.workload_spec, WorkloadSpec.build_jobs

    def spy_spec(self, load, seed, n_jobs=None, kind=0):
        kinds.add(kind)
        return real_spec(self, load, seed, n_jobs, kind)

    def spy_build(self, cluster, seed=None, trace_bytes=None):
        seeds.append(self.seed if seed is None else seed)
        return real_build(replace(self, n_jobs=5), cluster, seed)  # 5 jobs: only the seed matters here

    monkeypatch.setattr(EnvConfig, "workload_spec", spy_spec)
    monkeypatch.setattr(WorkloadSpec, "build_jobs", spy_build)
    presets = {PRESETS[n].build_cluster().to_shorthand() for n in cfg.presets}
    seen = set()
    env = make_env(cfg)
    for i in range(120):
        env.reset(seed=i)
        seen.add(env.simulation.cluster.to_shorthand())
    assert min(seeds) >= TRAIN_SEED_MIN > VALIDATION_SEED_BASE + 1000
    assert len(seeds) == 120
    assert kinds == set(range(cfg.generated_kinds))  # every workload kind is drawn
    assert presets <= seen  # and the presets' clusters


@pytest.mark.parametrize("name", model_names())
def test_shipped_agents_train_on_the_issue_s_distribution(name):
    """Each shipped agent's config draws heterogeneous clusters of 2-16 nodes with T4, A10, V100, A100 and H100,
    loads 0.6-1.8, the presets' kinds of workload (elastic jobs with deadlines among them), the teaching presets
    themselves (on training seeds) and both free and costly preemption."""
    env = load_config(name).env
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
    assert set(env.presets) == set(PRESETS)  # and every teaching preset itself, on training seeds
    assert np.isfinite(env.reward.wait_scale_s)


@pytest.mark.parametrize("name", config_names())
def test_no_training_config_draws_the_held_out_cluster(name):
    """The held-out heterogeneous workloads' cluster is in no episode a shipped config can draw: neither among its
    clusters, its curriculum's, nor its presets'."""
    held = parse_scenario(HELD_OUT).build_cluster().to_shorthand()
    cfg = load_config(name)
    specs = [*cfg.env.clusters, *(c for stage in cfg.curriculum for c in stage.clusters or ())]
    drawn = {parse_cluster(c).to_shorthand() for c in specs}
    drawn |= {PRESETS[p].build_cluster().to_shorthand() for p in cfg.env.presets}
    assert held not in drawn and len(drawn) >= 1
