"""Scheduler plug-ins. Importing this package registers every built-in scheduler."""

from . import backfill, drf, fgd, heuristics, tiresias, topo  # noqa: F401  (registers)
from .registry import PREFIXES, SCHEDULERS, SchedulerSpec, make_scheduler, register, scheduler_names
from ..rl import rl_scheduler

PREFIXES["rl"] = rl_scheduler  # rl:<model>; torch is imported only when a model is loaded

__all__ = ["PREFIXES", "SCHEDULERS", "SchedulerSpec", "make_scheduler", "register", "scheduler_names"]
