"""Hand-worked scenarios for ``reliable-first`` (the ``most-reliable`` placement): a long multi-GPU gang goes to
the node that has failed the least so far, best-fit among equals; every other job is placed best-fit."""

from __future__ import annotations

import pytest

from engine import Job
from engine.schedulers.placement import best_fit
from engine.schedulers.reliable import most_reliable
from engine.sim.options import FailureModel, RunOptions

CLUSTER = "3x4:A100-80"  # node n holds GPUs 4n..4n+3


def _jobs() -> list[Job]:
    return [
        Job(0, 0.0, 10_000.0, estimate_s=10_000.0),  # holds GPU 0 (node 0)
        Job(1, 0.0, 7200.0, gpus=2, estimate_s=7200.0),  # a long gang
        Job(2, 0.0, 600.0, gpus=2, estimate_s=600.0),  # a short gang
        Job(3, 0.0, 7200.0, estimate_s=7200.0),  # a long single GPU
        Job(4, 0.0, 7200.0, gpus=4, estimate_s=7200.0),
    ]  # a long gang of a whole node


@pytest.fixture
def state(staged):
    # Node 0 has one GPU busy (the tightest fit, best-fit's choice) and failed twice; node 1 never failed;
    # node 2 failed once.
    s = staged(CLUSTER, _jobs(), {0: (0,)})
    s.occupancy.node_failures[:] = [2, 0, 1]
    return s


def test_a_long_gang_goes_to_the_node_that_failed_least(state):
    job = _jobs()[1]
    assert best_fit(state, job) == (1, 2)  # node 0: 3 idle GPUs, the tightest
    assert most_reliable(state, job) == (4, 5)  # node 1: never failed


def test_short_gangs_and_single_gpus_are_placed_best_fit(state):
    for job in (_jobs()[2], _jobs()[3]):
        assert most_reliable(state, job) == best_fit(state, job)
        assert most_reliable(state, job)[0] == 1  # on node 0, whatever its failures


def test_a_gang_only_a_failed_node_can_take_goes_there(state):
    state.occupancy.node_failures[:] = [2, 1, 0]
    assert most_reliable(state, _jobs()[4]) == (8, 9, 10, 11)  # node 2, never failed
    state.occupancy.node_failures[:] = [0, 3, 1]  # node 0 (least failed) is not free: node 2 next
    assert most_reliable(state, _jobs()[4]) == (8, 9, 10, 11)


def test_without_failures_it_runs_as_best_fit(run):
    jobs = [Job(i, 30.0 * i, 5000.0 + 100 * i, gpus=1 + i % 4, estimate_s=5000.0) for i in range(12)]
    reliable, fit = run(CLUSTER, jobs, "reliable-first"), run(CLUSTER, jobs, "best-fit")
    assert reliable.gpu_ids == fit.gpu_ids and reliable.end_s.tolist() == fit.end_s.tolist()


def test_under_failures_every_scheduler_meets_the_same_failures(run):
    jobs = [Job(i, 600.0 * i, 20_000.0, gpus=2, estimate_s=20_000.0) for i in range(20)]
    options = RunOptions(failures=FailureModel(mtbf_h=20.0, repair_h=1.0, lemon_share=0.34, lemon_factor=10.0))
    reliable = run(CLUSTER, jobs, "reliable-first", options=options)
    fit = run(CLUSTER, jobs, "best-fit", options=options)
    assert reliable.outage_node.size > 0
    assert reliable.outage_node.tolist() == fit.outage_node.tolist()
    assert reliable.outage_start_s.tolist() == fit.outage_start_s.tolist()
