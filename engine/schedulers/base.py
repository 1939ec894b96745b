"""The composable list scheduler: an ordering picks jobs, a placement rule picks their GPUs."""

from __future__ import annotations

from typing import Iterator

from ..state import ClusterState, Decision, Start
from .ordering import Order, StaticKeyOrder
from .placement import FAILURES_PERSIST, Placement


class ListScheduler:
    """Walk the queue in ``order`` and start every job that ``placement`` can place now.

    With ``blocking=True`` the walk stops at the first job that does not fit (strict FIFO semantics,
    head-of-line blocking); otherwise such jobs are skipped and later ones may start.
    """

    def __init__(self, name: str, order: Order, placement: Placement, *, blocking: bool = False) -> None:
        self.name = name
        self.order = order
        self.placement = placement
        self.blocking = blocking
        # Orderings that can leave out shapes that failed make long non-blocking walks cheap.
        self._skips = isinstance(order, StaticKeyOrder) and not blocking
        # Shapes that did not fit stay unfit until a job stops, if the placement rule says so.
        self._remember = placement in FAILURES_PERSIST and not blocking
        self._failed: set[int] = set()
        self._failed_at_stops = -1

    def reset(self, state: ClusterState) -> None:
        self._failed, self._failed_at_stops = set(), -1
        self.order.reset(state)
        reset = getattr(self.placement, "reset", None)
        if reset is not None:
            reset(state)

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        shapes = state.queue_shape_counts
        # Shapes that did not fit: resources only shrink during one decision, and between two decisions
        # unless a job stopped.
        failed: set[int] = set()
        if self._remember and state.stops == self._failed_at_stops:
            failed = {sid for sid in self._failed if sid in shapes}
        place, jobs, job_shape = self.placement, state.jobs, state.job_shape
        walk = self.order.candidates(state, failed) if self._skips else self.order.candidates(state)
        try:
            for j in walk:
                if state.free_capacity <= 1e-9:
                    return
                sid = job_shape[j]
                if sid in failed:
                    continue
                gpus = place(state, jobs[j])
                if gpus is None:
                    if self.blocking:
                        return
                    failed.add(sid)
                    if len(failed) >= len(shapes):
                        return  # every kind of waiting job has been tried
                    continue
                yield Start(j, gpus)
        finally:
            if self._remember:
                self._failed, self._failed_at_stops = failed, state.stops
