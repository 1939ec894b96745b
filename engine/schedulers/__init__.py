"""Scheduler plug-ins. Importing this package registers every built-in scheduler.

The parts a scheduler of your own is built from (see ``examples/widest_first.py`` and :mod:`engine.plugins`):
:class:`ListScheduler` (an ordering + a placement rule), :class:`StaticKeyOrder` (jobs by a number computed from
the job), the placement rules (:func:`first_fit`, :func:`best_fit`, :func:`least_loaded`, or any registered in
:data:`PLACEMENTS`), and :func:`register` with a :class:`SchedulerSpec`. A scheduler need not use any of them: any
object with ``name``, ``reset(state)`` and ``decide(state)`` (the :class:`~engine.sim.state.Scheduler` protocol)
will do.
"""

from engine.schedulers import (  # noqa: F401  (registers)
    backfill,
    carbon,
    cost,
    deadline,
    drf,
    elastic,
    fgd,
    heuristics,
    reliable,
    tiresias,
    topo,
)
from engine.schedulers.base import ListScheduler
from engine.schedulers.ordering import ORDERS, Order, StaticKeyOrder
from engine.schedulers.placement import PLACEMENTS, Placement, best_fit, first_fit, least_loaded
from engine.schedulers.registry import PREFIXES, SCHEDULERS, SchedulerSpec, make_scheduler, register, scheduler_names

__all__ = [
    "ListScheduler",
    "ORDERS",
    "Order",
    "PLACEMENTS",
    "PREFIXES",
    "Placement",
    "SCHEDULERS",
    "SchedulerSpec",
    "StaticKeyOrder",
    "best_fit",
    "first_fit",
    "least_loaded",
    "make_scheduler",
    "register",
    "scheduler_names",
]
