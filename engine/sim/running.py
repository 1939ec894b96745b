"""The record of a running job that schedulers read; re-exported by :mod:`engine.sim.state`.

It has a module of its own so that it is compiled with the engine's hot modules (``engine/_native.py``) while
:mod:`engine.sim.state` is not: the engine creates one per start, and schedulers read its fields at every
decision point.
"""

from __future__ import annotations

from engine.sim.job import Job


class RunningJob:
    """A running job as a scheduler sees it (engine-owned; read-only)."""

    __slots__ = ("job", "gpu_ids", "start_s", "rate", "est_end_s", "n_nodes", "n_racks", "gpu_type")

    def __init__(self, job: Job, gpu_ids: tuple[int, ...], start_s: float, rate: float, est_end_s: float,
                 n_nodes: int, n_racks: int, gpu_type: int) -> None:
        self.job = job
        self.gpu_ids = gpu_ids
        self.start_s = start_s  # start of the current run segment
        self.rate = rate  # reference-work seconds per second, all speed effects included
        self.est_end_s = est_end_s  # when the job ends if its estimate is right
        self.n_nodes = n_nodes
        self.n_racks = n_racks
        self.gpu_type = gpu_type  # type index into layout.type_names
