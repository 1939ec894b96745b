"""Hand-worked checks of topology-aware packing (``topo-pack``)."""

from __future__ import annotations

import pytest

from engine import Job
from engine.schedulers.placement import first_fit
from engine.schedulers.topo import topo_pack

# Four 2-GPU nodes, two per rack: rack0 = nodes 0, 1 (GPUs 0-3), rack1 = nodes 2, 3 (GPUs 4-7).
RACKED = {"groups": [{"gpu_type": "generic", "nodes": 4, "gpus_per_node": 2}], "nodes_per_rack": 2}


def test_topo_pack_keeps_a_four_gpu_job_on_one_node_where_first_fit_spreads(run):
    jobs = [
        Job(0, 0.0, 10.0, gpus=4),  # fills node 0 until t=10
        Job(1, 0.0, 100.0, gpus=2),  # node 1, GPUs 4, 5
        Job(2, 20.0, 100.0),  # first-fit: GPU 0 (node 0); topo-pack: fullest node 1, GPU 6
        Job(3, 30.0, 100.0, gpus=4, job_type="training"),
    ]
    ff = run("2x4:generic", jobs, "first-fit")
    tp = run("2x4:generic", jobs, "topo-pack")
    assert ff.gpu_ids[2] == (0,) and tp.gpu_ids[2] == (6,)
    # first-fit must spread job 3 over both nodes (one rack): 1 / (1 + 1.0 * 0.25) = 0.8 of full speed.
    assert ff.gpu_ids[3] == (1, 2, 3, 6)
    assert ff.end_s[3] == pytest.approx(30 + 100 / 0.8)
    assert tp.gpu_ids[3] == (0, 1, 2, 3)
    assert tp.end_s[3] == pytest.approx(130.0)
    assert tp.comm_overhead_gpu_s[3] == 0 and ff.comm_overhead_gpu_s[3] > 0


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
