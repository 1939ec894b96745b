"""The composable list scheduler: an ordering picks jobs, a placement rule picks their GPUs."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from ..state import FRACTION_EPS, ClusterState, Decision, Start
from .ordering import Order, StaticKeyOrder
from .placement import FAILURES_PERSIST, Placement, fits_shared


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
        self._released_at = 0  # length of state.occupancy.released when _failed was recorded
        self._shape_need: dict[int, tuple] = {}  # shape -> (job, GPUs, fraction, eligible GPU types)

    def reset(self, state: ClusterState) -> None:
        self._failed, self._failed_at_stops, self._released_at = set(), -1, 0
        self._shape_need = {}
        self.order.reset(state)
        reset = getattr(self.placement, "reset", None)
        if reset is not None:
            reset(state)

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        shapes = state.queue_shape_counts
        # Shapes that did not fit: resources only shrink during one decision, and between two decisions
        # except where a job stopped, so only shapes that the GPUs freed since could help are tried again.
        failed: set[int] = set()
        if self._remember and self._failed:
            if state.stops == self._failed_at_stops:
                failed = {sid for sid in self._failed if sid in shapes}
            else:
                failed = self._still_failing(state, shapes)
            if self._skips and len(failed) >= len(shapes):
                self.order.catch_up(state)  # every kind of waiting job is known not to fit
                self._failed, self._failed_at_stops = failed, state.stops
                self._released_at = len(state.occupancy.released)
                return
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
                    if self._remember and sid not in self._shape_need:
                        self._note_shape(state, sid, jobs[j])
                    if len(failed) >= len(shapes):
                        return  # every kind of waiting job has been tried
                    continue
                yield Start(j, gpus)
        finally:
            if self._remember:
                self._failed, self._failed_at_stops = failed, state.stops
                self._released_at = len(state.occupancy.released)

    def _note_shape(self, state: ClusterState, sid: int, job) -> None:
        types = tuple(np.flatnonzero(state.eligible_types(job)).tolist())
        self._shape_need[sid] = (job, job.gpus, job.gpu_fraction, types)

    def _still_failing(self, state: ClusterState, shapes) -> set[int]:
        """The remembered failed shapes that still wait and cannot fit now, by an exact test for the rules in
        ``FAILURES_PERSIST``: a whole-GPU shape fits iff an eligible GPU type has enough idle GPUs; a
        fractional one iff an eligible GPU is idle or a GPU released since the failure has room for it
        (other shared GPUs only lost room since then)."""
        occ = state.occupancy
        type_idle = occ.type_idle
        most_idle: dict[tuple[int, ...], int] = {}  # eligible types -> most idle GPUs of one of them
        fresh = None  # shared GPUs released since the failures were recorded (built on first need)
        out = set()
        for sid in self._failed:
            if sid not in shapes:
                continue
            job, k, frac, types = self._shape_need[sid]
            idle = most_idle.get(types)
            if idle is None:
                idle = most_idle[types] = max([type_idle[t] for t in types], default=0)
            if idle >= k:
                continue
            if frac < 1.0:
                if frac <= FRACTION_EPS:
                    continue  # a share so small it "fits" even on full GPUs
                if fresh is None:
                    tenants = occ.tenants
                    fresh = [g for g in set(occ.released[self._released_at:]) if tenants[g]]
                if fresh and any(occ.gpu_type[g] in types and fits_shared(occ, g, job) for g in fresh):
                    continue
            out.add(sid)
        return out
