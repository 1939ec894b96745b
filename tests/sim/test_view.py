"""The scheduler's view: a view narrowed to one GPU type lets placement rules find only GPUs of that type."""

from __future__ import annotations

import numpy as np
import pytest

from engine import Job, Simulation, Start, parse_cluster
from engine.schedulers.placement import PLACEMENTS, first_fit


@pytest.fixture
def state():
    # T4 nodes first, so that a rule seeing every type would pick a T4 for these jobs.
    cluster = parse_cluster("2x4:T4,2x4:A100-80,1x2:V100-32")
    jobs = [
        Job(0, 0.0, 100.0),
        Job(1, 0.0, 100.0, gpus=2),
        Job(2, 0.0, 100.0, gpu_fraction=0.5, vram_gib=8),
        Job(3, 0.0, 100.0, gpus=4),
    ]
    sim = Simulation(cluster, jobs)
    view = sim.reset()
    sim.apply([Start(3, (0, 1, 2, 3))])  # one T4 node full: the other counters must carry over too
    return view


@pytest.mark.parametrize("rule", sorted(PLACEMENTS))
@pytest.mark.parametrize("job_id", [0, 1, 2])
def test_placement_through_a_type_view_finds_only_that_type(state, rule, job_id):
    job = state.jobs[job_id]
    gpu_type = state.layout.gpu_type
    for t, name in enumerate(state.layout.type_names):
        view = state.of_type(t)
        gpus = PLACEMENTS[rule]()(view, job)
        assert gpus is not None, (rule, name)
        assert all(gpu_type[g] == t for g in gpus), (rule, name, gpus)
        assert state.validate(Start(job_id, gpus)) is None


def test_a_type_view_narrows_eligibility_and_keeps_the_rest(state):
    job = state.jobs[0]
    view = state.of_type(1)  # A100-80
    lay = state.layout
    assert view.eligible_types(job).tolist() == [False, True, False]
    assert np.array_equal(view.eligible_gpus(job), lay.gpu_type == 1)
    assert np.array_equal(view.eligible_nodes(job), lay.node_type == 1)
    assert np.array_equal(view.can_host(job), state.can_host(job) & (lay.gpu_type == 1))
    sid = state.job_shape[0]
    assert view.shape_node_bits[sid] == 0b1100 and state.shape_node_bits[sid] == 0b11111
    assert (view.now_s, view.free_gpus, view.free_capacity, view.stops) == (
        state.now_s,
        state.free_gpus,
        state.free_capacity,
        state.stops,
    )
    assert view.free_gpus == state.n_gpus - 4
    # The view it came from is untouched.
    assert state.eligible_types(job).tolist() == [True, True, True]


def test_occupancy_arrays_read_at_any_decision_point_match_the_running_jobs():
    """The numpy arrays are brought up to date when read: whenever they are read, at any decision point of a run
    with whole and fractional jobs coming and going, they equal a recount from ``state.running``."""
    cluster = parse_cluster("2x4:T4,1x2:A100-80")
    rng = np.random.default_rng(3)
    jobs = [
        Job(
            i,
            float(i // 2),
            float(rng.integers(1, 6)),
            gpus=int(rng.choice([1, 2, 3])) if i % 3 else 1,
            gpu_fraction=0.5 if i % 3 == 0 else 1.0,
            vram_gib=4.0 if i % 3 == 0 else 0.0,
        )
        for i in range(40)
    ]
    sim = Simulation(cluster, jobs)
    state = sim.reset()
    lay = state.layout
    reads = 0
    while not sim.done:
        if rng.random() < 0.5:  # read only at some decision points: the arrays catch up on what they missed
            reads += 1
            tenants = np.zeros(lay.n_gpus, dtype=np.int64)
            share = np.zeros(lay.n_gpus)
            for r in state.running.values():
                for g in r.gpu_ids:
                    tenants[g] += 1
                    share[g] += r.job.gpu_fraction
            assert state.gpu_tenants.tolist() == tenants.tolist()
            assert np.allclose(state.gpu_free, 1.0 - share)
            assert state.node_free.tolist() == [
                int(sum(tenants[lay.node_first_gpu[n] + i] == 0 for i in range(lay.node_gpus[n])))
                for n in range(lay.n_nodes)
            ]
            assert (state.gpu_free_vram_gib <= lay.type_vram_gib[lay.gpu_type]).all()
        decisions = []
        for j in list(state.queue):
            gpus = first_fit(state, state.jobs[j])
            if gpus is not None:
                decisions.append(Start(j, gpus))
                break
        sim.step(decisions)
    assert reads > 10


def test_arrival_order_is_by_submit_time_then_job_id():
    submits = [5.0, 0.0, 5.0, 2.0, 0.0, 9.0, 2.0]
    jobs = [Job(i, s, 10.0) for i, s in enumerate(submits)]
    state = Simulation(parse_cluster("1x8:generic"), jobs).reset()
    assert list(state.arrival_order) == [1, 4, 3, 6, 0, 2, 5]


def test_is_waiting_agrees_with_the_queue_at_every_decision_point():
    cluster = parse_cluster("1x4:generic")
    jobs = [Job(i, float(i), 5.0, gpus=1 + i % 3) for i in range(12)]
    sim = Simulation(cluster, jobs)
    state = sim.reset()
    seen = set()
    while not sim.done:
        assert [state.is_waiting(j) for j in range(len(jobs))] == [j in state.queue for j in range(len(jobs))]
        seen.update(state.queue)
        free = [g for g in range(4) if state.gpu_tenants[g] == 0]
        j = next(iter(state.queue), None)
        fits = j is not None and len(free) >= jobs[j].gpus
        sim.step([Start(j, tuple(free[: jobs[j].gpus]))] if fits else [])
    assert len(seen) > 3 and not any(state.is_waiting(j) for j in range(len(jobs)))
