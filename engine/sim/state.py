"""What a scheduler sees and what it may say.

A scheduler is any object with ``reset(state)`` and ``decide(state)`` (:class:`Scheduler`). At each decision
point the simulator calls ``decide`` with a :class:`ClusterState`, a live, read-only view of the engine's
own state, and applies the decisions it yields **one by one, in order**: a scheduler written as a
generator sees the effect of each decision (free GPUs, queue) before it produces the next one.

Decisions:

* :class:`Start` ``(job_id, gpu_ids)``: run a waiting job on exactly these GPUs;
* :class:`Preempt` ``(job_id)``: stop a running job and put it back in the queue;
* :class:`Wake` ``(at_s)``: call me again at this time even if no job arrives or ends by then.

The view's arrays and containers belong to the engine: read them, never write them (numpy arrays are
handed out read-only). Schedulers see each job's ``estimate_s``; reading ``duration_s`` is reserved for
schedulers whose name says ``oracle``.
"""

from __future__ import annotations

from typing import Final, Iterable, Protocol, Union, runtime_checkable

# Re-exported: modules of their own so that they are compiled (engine/_native.py).
from engine.sim.decisions import Preempt as Preempt
from engine.sim.decisions import Start as Start
from engine.sim.decisions import Wake as Wake
from engine.sim.running import RunningJob as RunningJob
from engine.sim.view import ClusterState as ClusterState

#: Tolerance for sums of GPU fractions (0.1 + 0.2 must fit in 0.3).
FRACTION_EPS: Final = 1e-9


Decision = Union[Start, Preempt, Wake]


@runtime_checkable
class Scheduler(Protocol):
    """The one plug-in protocol for heuristics and learned schedulers alike."""

    name: str

    def reset(self, state: "ClusterState") -> None:
        """Called once before a run, with the initial state (clear any per-run memory here)."""

    def decide(self, state: "ClusterState") -> Iterable[Decision]:
        """Return (or yield) the decisions to apply now; an empty iterable means "nothing now"."""
