"""Helpers for scheduler tests: run a named scheduler, and stage a cluster state by hand."""

from __future__ import annotations

from typing import Sequence

import pytest

from engine import Job, Simulation, Start, make_scheduler, parse_cluster, simulate


def _run(cluster: str, jobs: Sequence[Job], scheduler, **kw):
    """Simulate ``scheduler`` (a name or an instance) on ``jobs`` over the ``cluster`` shorthand or dict."""
    sched = make_scheduler(scheduler) if isinstance(scheduler, str) else scheduler
    return simulate(parse_cluster(cluster), jobs, sched, **kw)


def _staged(cluster: str, jobs: Sequence[Job], starts: dict[int, tuple[int, ...]]):
    """The live state at the first decision point after starting ``starts`` (job -> GPUs) by hand."""
    sim = Simulation(parse_cluster(cluster), jobs)
    state = sim.reset()
    sim.apply([Start(j, g) for j, g in starts.items()])
    return state


@pytest.fixture
def run():
    return _run


@pytest.fixture
def staged():
    return _staged
