"""Every public base class can be subclassed by a user's interpreted code, whether the engine runs compiled or not
(compiled classes refuse interpreted subclasses unless they allow them: ARCHITECTURE.md, "Compiled hot modules")."""

from __future__ import annotations

import pytest

from engine import Simulation, make_scheduler, parse_cluster, simulate
from engine.schedulers import ListScheduler, StaticKeyOrder, first_fit
from engine.schedulers.backfill import EasyBackfill
from engine.schedulers.drf import DrfScheduler
from engine.schedulers.fgd import FgdPlacement
from engine.schedulers.placement import RandomPlacement
from engine.schedulers.tiresias import Tiresias
from engine.traces.generator import generate

CLUSTER = parse_cluster("4x4:V100-32")
JOBS = generate(CLUSTER, 150, load=1.2, seed=3)


def counting(base, *args):
    """An interpreted subclass of ``base`` that counts its decision points and otherwise decides as ``base`` does."""

    class Counting(base):
        def __init__(self):
            super().__init__(*args)
            self.calls = 0

        def decide(self, state):
            self.calls += 1
            return super().decide(state)

    return Counting


class ShortestKeyOrder(StaticKeyOrder):
    """A subclass that only fixes its key: shortest estimate first."""

    def __init__(self):
        super().__init__(key=lambda job: job.estimate_s)


class CountingFgd(FgdPlacement):
    def __call__(self, state, job):
        self.calls = getattr(self, "calls", 0) + 1
        return super().__call__(state, job)


class CountingRandom(RandomPlacement):
    def __call__(self, state, job):
        self.calls = getattr(self, "calls", 0) + 1
        return super().__call__(state, job)


@pytest.mark.parametrize(
    "subclass, reference",
    [
        (counting(ListScheduler, "counting", StaticKeyOrder(), first_fit), "first-fit"),
        (counting(EasyBackfill, "counting-backfill"), "easy-backfill"),
        (counting(Tiresias, "counting-tiresias"), "tiresias"),
        (counting(DrfScheduler, "counting-drf"), "drf"),
    ],
    ids=["ListScheduler", "EasyBackfill", "Tiresias", "DrfScheduler"],
)
def test_a_scheduler_subclass_schedules_like_its_base(subclass, reference):
    mine = subclass()
    result, expected = simulate(CLUSTER, JOBS, mine), simulate(CLUSTER, JOBS, make_scheduler(reference))
    assert mine.calls > 0  # the override ran
    assert result.first_start_s.tolist() == expected.first_start_s.tolist()


def test_an_ordering_subclass_orders_the_queue():
    result = simulate(CLUSTER, JOBS, ListScheduler("mine", ShortestKeyOrder(), first_fit))
    expected = simulate(CLUSTER, JOBS, make_scheduler("sjf+first-fit"))
    # sjf orders by estimate x GPUs; shortest-estimate differs from it on this workload, and runs to the end.
    assert result.first_start_s.tolist() != expected.first_start_s.tolist()
    assert (result.end_s >= 0).all()


@pytest.mark.parametrize("placement, reference", [(CountingFgd, "fgd"), (CountingRandom, "random")])
def test_a_placement_subclass_places_like_its_base(placement, reference):
    rule = placement()
    result = simulate(CLUSTER, JOBS, ListScheduler(reference, StaticKeyOrder(), rule), seed=1)
    expected = simulate(CLUSTER, JOBS, make_scheduler(reference), seed=1)
    assert rule.calls > 0
    assert result.first_start_s.tolist() == expected.first_start_s.tolist()


def test_a_simulation_subclass_sees_every_decision():
    class Logged(Simulation):
        starts = 0

        def apply(self, decisions):
            def counted():  # lazily: the scheduler sees each decision applied before it makes the next
                for decision in decisions:
                    self.starts += 1
                    yield decision

            super().apply(counted())

    sim = Logged(CLUSTER, JOBS)
    state = sim.reset()
    scheduler = make_scheduler("first-fit")
    scheduler.reset(state)
    while not sim.done:
        sim.step(scheduler.decide(state))
    result = sim.result()
    assert sim.starts == len(JOBS)  # first-fit never preempts: one start per job
    assert result.first_start_s.tolist() == simulate(CLUSTER, JOBS, make_scheduler("first-fit")).first_start_s.tolist()
