"""The scheduler registry: names -> factories, with an error that lists the valid names.

Names resolve in this order:

1. a registered name (``fifo``, ``easy-backfill``, ...);
2. ``PREFIX:ARG`` for a registered prefix (``rl:<model>`` loads a trained agent from ``models/``);
3. ``ORDER+PLACEMENT`` combinations, e.g. ``sjf+best-fit`` (orderings in ``ORDERS``, placement rules in
   ``PLACEMENTS``; the combination skips jobs that do not fit, except ``fifo+...`` which is strict).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from engine.errors import UnknownNameError
from engine.schedulers.base import ListScheduler
from engine.schedulers.ordering import ORDERS
from engine.schedulers.placement import PLACEMENTS
from engine.sim.state import Scheduler


@dataclass(frozen=True)
class SchedulerSpec:
    """A registered scheduler.

    Attributes:
        name: the name users type.
        factory: builds a fresh scheduler (schedulers keep per-run state).
        summary: two sentences that explain the scheduler to a student.
        preemptive: whether it may preempt running jobs.
        oracle: whether it reads true durations (never true for a fair comparison).
        resizes: whether it changes the GPUs of elastic jobs (the others run them at their requested size).
    """

    name: str
    factory: Callable[[], Scheduler]
    summary: str
    preemptive: bool = False
    oracle: bool = False
    resizes: bool = False


SCHEDULERS: dict[str, SchedulerSpec] = {}

#: ``prefix -> factory(arg)`` for parameterised names such as ``rl:<model>``.
PREFIXES: dict[str, Callable[[str], Scheduler]] = {}


def register(spec: SchedulerSpec) -> SchedulerSpec:
    if spec.name in SCHEDULERS:
        raise ValueError(f"scheduler {spec.name!r} is already registered")
    SCHEDULERS[spec.name] = spec
    return spec


def list_scheduler(name: str, order: str, placement: str, *, blocking: bool = False) -> Callable[[], Scheduler]:
    """Factory for a :class:`ListScheduler` built from registered ordering and placement names."""
    return lambda: ListScheduler(name, ORDERS[order](), PLACEMENTS[placement](), blocking=blocking)


def make_scheduler(name: str) -> Scheduler:
    """Build the scheduler called ``name``; ``UnknownNameError`` lists the valid names."""
    name = name.strip()
    spec = SCHEDULERS.get(name)
    if spec is not None:
        return spec.factory()
    prefix, sep, arg = name.partition(":")
    if sep and prefix in PREFIXES:
        return PREFIXES[prefix](arg)
    order, plus, place = name.partition("+")
    if plus and order in ORDERS and place in PLACEMENTS:
        return list_scheduler(name, order, place, blocking=(order == "fifo"))()
    raise UnknownNameError(
        f"unknown scheduler {name!r}; valid: {', '.join(sorted(SCHEDULERS))}"
        + "".join(f", {p}:<name>" for p in sorted(PREFIXES))
        + f"; or ORDER+PLACEMENT with ORDER in {{{', '.join(ORDERS)}}} and "
        f"PLACEMENT in {{{', '.join(PLACEMENTS)}}}"
    )


def scheduler_names() -> list[str]:
    return sorted(SCHEDULERS)
