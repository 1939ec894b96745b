"""Hand-worked checks of topology-aware packing (``topo-pack``); see also test_heuristics.py."""

from __future__ import annotations

import pytest

from engine import Job
from engine.schedulers.placement import first_fit
from engine.schedulers.topo import topo_pack

# Four 2-GPU nodes, two per rack: rack0 = nodes 0, 1 (GPUs 0-3), rack1 = nodes 2, 3 (GPUs 4-7).
RACKED = {"groups": [{"gpu_type": "generic", "nodes": 4, "gpus_per_node": 2}], "nodes_per_rack": 2}


@pytest.fixture
def half_busy_rack0(staged):
    """Nodes 0 and 1 each run one 1-GPU job, so rack0 has 2 idle GPUs and rack1 has 4."""
    jobs = [Job(0, 0.0, 50.0), Job(1, 0.0, 50.0), Job(2, 0.0, 50.0, gpus=3), Job(3, 0.0, 50.0, gpus=5)]
    return staged(RACKED, jobs, {0: (0,), 1: (2,)})


def test_fewest_nodes_inside_one_rack(half_busy_rack0):
    state = half_busy_rack0
    assert first_fit(state, state.jobs[2]) == (1, 3, 4)  # three nodes over two racks
    assert topo_pack(state, state.jobs[2]) == (4, 5, 6)  # two nodes of rack1


def test_fewest_racks_when_no_rack_suffices(half_busy_rack0):
    state = half_busy_rack0
    # Five GPUs need both racks: all of rack1 first, then one idle GPU of rack0.
    assert topo_pack(state, state.jobs[3]) == (4, 5, 6, 7, 1)


def test_single_gpu_jobs_go_to_the_fullest_node(staged):
    jobs = [Job(0, 0.0, 50.0), Job(1, 0.0, 50.0)]
    state = staged(RACKED, jobs, {0: (5,)})
    assert topo_pack(state, state.jobs[1]) == (4,)


def test_too_few_idle_gpus_returns_none(staged):
    jobs = [Job(0, 0.0, 50.0, gpus=7), Job(1, 0.0, 50.0, gpus=2)]
    state = staged(RACKED, jobs, {0: (0, 1, 2, 3, 4, 5, 6)})
    assert topo_pack(state, state.jobs[1]) is None


def test_sjf_topo_pack_combination_resolves(run):
    r = run("2x4:generic", [Job(0, 0.0, 10.0, gpus=2), Job(1, 0.0, 5.0, gpus=8)], "sjf+topo-pack")
    assert list(r.first_start_s) == [0.0, 10.0]
