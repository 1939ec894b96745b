"""The composable list scheduler: an ordering picks jobs, a placement rule picks their GPUs."""

from __future__ import annotations

from typing import Iterator

from ..state import ClusterState, Decision, Start
from .ordering import Order, StaticKeyOrder
from .placement import Placement


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

    def reset(self, state: ClusterState) -> None:
        self.order.reset(state)
        reset = getattr(self.placement, "reset", None)
        if reset is not None:
            reset(state)

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        failed: set[int] = set()  # shapes that did not fit: resources only shrink during one decision
        shapes = state.queue_shape_counts
        place, jobs, job_shape = self.placement, state.jobs, state.job_shape
        walk = self.order.candidates(state, failed) if self._skips else self.order.candidates(state)
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
