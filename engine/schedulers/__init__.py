"""Scheduler plug-ins. Importing this package registers every built-in scheduler."""

from engine.schedulers import backfill, drf, fgd, heuristics, tiresias, topo  # noqa: F401  (registers)
from engine.schedulers.registry import PREFIXES, SCHEDULERS, SchedulerSpec, make_scheduler, register, scheduler_names

__all__ = ["PREFIXES", "SCHEDULERS", "SchedulerSpec", "make_scheduler", "register", "scheduler_names"]
