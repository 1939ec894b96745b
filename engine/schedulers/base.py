"""The composable list scheduler: an ordering picks jobs, a placement rule picks their GPUs."""

from __future__ import annotations

from typing import Iterator

from mypy_extensions import mypyc_attr

from engine.schedulers.ordering import Order, StaticKeyOrder
from engine.schedulers.placement import FAILURES_PERSIST, FitMemory, Placement, reset_placement
from engine.sim.state import FRACTION_EPS, ClusterState, Decision, Start


@mypyc_attr(allow_interpreted_subclasses=True)  # a public base: subclassable compiled too (ARCHITECTURE.md)
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
        # Shapes that did not fit are remembered across decision points, if the placement rule allows it.
        self._remember = placement in FAILURES_PERSIST and not blocking
        self._fits = FitMemory()
        self._none: set[int] = set()  # the failed shapes of a blocking walk: always none (it stops at a failure)

    def reset(self, state: ClusterState) -> None:
        self._fits.reset()
        self.order.reset(state)
        reset_placement(self.placement, state)

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        shapes = state.queue_shape_counts
        if self._remember:
            failed = self._fits.recall(state)
        else:
            failed = self._none if self.blocking else set()
        if self._skips and failed and len(failed) >= len(shapes):
            self.order.catch_up(state)  # every kind of waiting job is known not to fit
            self._fits.keep(state, failed)
            return
        place, jobs, job_shape = self.placement, state.jobs, state.job_shape
        walk = self.order.candidates(state, failed) if self._skips else self.order.candidates(state)
        try:
            for j in walk:
                if state.free_capacity <= FRACTION_EPS:
                    return
                sid = job_shape[j]
                if sid in failed:
                    continue
                gpus = place(state, jobs[j])
                if gpus is None:
                    if self.blocking:
                        return
                    self._fits.fail(state, failed, sid, jobs[j])
                    if len(failed) >= len(shapes):
                        return  # every kind of waiting job has been tried
                    continue
                yield Start(j, gpus)
        finally:
            if self._remember:
                self._fits.keep(state, failed)
