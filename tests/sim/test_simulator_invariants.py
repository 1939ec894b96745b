"""Invariants the simulator's fast paths must keep: a start passes ``apply`` exactly when the full check
(``state.validate``) finds nothing wrong, whatever types the scheduler hands in; ``state.entered`` reports
every job that (re-)entered the queue, including those the scheduler itself preempted."""

from __future__ import annotations

import numpy as np
import pytest

from engine import InvalidDecision, Job, Preempt, Simulation, Start, parse_cluster


def _jobs():
    return [
        Job(0, 0.0, 100.0, gpus=2),
        Job(1, 0.0, 100.0, gpu_fraction=0.5, vram_gib=10.0),
        Job(2, 0.0, 100.0, gpus=1, allowed_types=frozenset({"T4"})),
        Job(3, 0.0, 100.0, vram_gib=40.0),
        Job(4, 0.0, 100.0, gpu_fraction=0.75),
        Job(5, 50.0, 100.0),
    ]


def _gpu_ids(rng, n_gpus: int):
    """Random GPU id tuples, including wrong types, repeats and ids out of range."""
    k = int(rng.integers(0, 4))
    ids = [int(g) for g in rng.integers(-1, n_gpus + 1, size=k)]
    kind = rng.integers(5)
    if kind == 0:
        return tuple(np.int64(g) for g in ids)
    if kind == 1:
        return list(ids)
    if kind == 2 and ids:
        return tuple(ids[:1] * len(ids))
    if kind == 3 and ids:
        return (float(ids[0]),) + tuple(ids[1:])
    return tuple(ids)


@pytest.mark.parametrize("seed", range(4))
def test_apply_accepts_a_start_exactly_when_validate_does(seed):
    rng = np.random.default_rng(seed)
    cluster = parse_cluster("1x2:T4,1x2:A100-80")
    sim = Simulation(cluster, _jobs())
    state = sim.reset()
    accepted = refused = 0
    for _ in range(400):
        if not state.queue:
            break
        j = int(rng.integers(-1, 7))
        d = Start(
            np.int64(j) if rng.random() < 0.2 else (bool(j) if j in (0, 1) and rng.random() < 0.1 else j),
            _gpu_ids(rng, cluster.n_gpus),
        )
        reason = state.validate(d)
        if reason is None:
            sim.apply([d])
            accepted += 1
            assert int(d.job_id) in state.running
        else:
            with pytest.raises(InvalidDecision) as err:
                sim.apply([d])
            assert reason in str(err.value)
            refused += 1
    assert accepted >= 2 and refused > 100


def test_jobs_preempted_by_a_decision_are_reported_as_entered_next_time():
    sim = Simulation(parse_cluster("1x2:generic"), [Job(0, 0.0, 100.0), Job(1, 0.0, 100.0), Job(2, 10.0, 50.0)])
    state = sim.reset()
    assert state.entered == [0, 1]
    sim.apply([Start(0, (0,)), Start(1, (1,))])
    assert state.entered == []
    sim.advance()  # job 2 arrives at t=10
    assert state.entered == [2]
    sim.apply([Preempt(1), Start(2, (1,))])
    assert state.entered == [1] and list(state.queue) == [1]
    sim.apply([])  # told once: the next call starts afresh
    assert state.entered == []
