"""What a scheduler may say at a decision point; re-exported by :mod:`engine.sim.state`, which explains them.

The decisions have a module of their own so that they are compiled with the engine's hot modules
(``engine/_native.py``) while :mod:`engine.sim.state` is not: a scheduler makes one per job it starts, and the engine
reads it straight back. Their fields take any value (``Any``): the engine validates every decision before it
acts on it and names what is wrong (``Simulation.check``), so a numpy integer or a list of GPU ids gets the
engine's answer rather than a type error from the record itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

_PUT: Final = object.__setattr__  # sets a field of a frozen record (bound once: compiled, a C variable)
# Whether this module runs compiled (as engine._native.compiled_modules tells). Compiled, a field set in __init__
# is stored straight into the object (the frozen check still stops everyone else); interpreted, the frozen
# dataclass refuses that, and fields are set through object.__setattr__.
_COMPILED: Final = not __file__.endswith(".py")


@dataclass(frozen=True, init=False, slots=True)
class Start:
    """Start waiting job ``job_id`` (an int) on ``gpu_ids`` (a tuple of ints, ``len == job.gpus``, all of one GPU
    type)."""

    job_id: Any
    gpu_ids: Any

    def __init__(self, job_id: Any, gpu_ids: Any) -> None:
        # Frozen: the fields are set once, here. A scheduler makes a Start per job it starts (see _COMPILED).
        if _COMPILED:
            self.job_id = job_id  # type: ignore[misc]
            self.gpu_ids = gpu_ids  # type: ignore[misc]
        else:
            _PUT(self, "job_id", job_id)
            _PUT(self, "gpu_ids", gpu_ids)

    def __reduce__(self) -> tuple:  # pickled by value (a compiled class has no instance dict to restore)
        return (Start, (self.job_id, self.gpu_ids))


@dataclass(frozen=True, init=False, slots=True)
class Preempt:
    """Stop running job ``job_id``; it returns to the queue and loses work per the preemption model."""

    job_id: Any

    def __init__(self, job_id: Any) -> None:
        _PUT(self, "job_id", job_id)

    def __reduce__(self) -> tuple:
        return (Preempt, (self.job_id,))


@dataclass(frozen=True, init=False, slots=True)
class Wake:
    """Ask for a decision point at ``at_s`` (seconds), even if nothing else happens by then."""

    at_s: Any

    def __init__(self, at_s: Any) -> None:
        _PUT(self, "at_s", at_s)

    def __reduce__(self) -> tuple:
        return (Wake, (self.at_s,))
