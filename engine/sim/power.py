"""Idle nodes that power down (``RunOptions.power_down``, :class:`~engine.sim.options.PowerDownModel`): the
simulation's helper, so that every scheduler runs under the same model.

A node is *idle* while no job holds any of its GPUs; it powers down once it has been idle for ``idle_timeout_s``
(at the start of the run every node is idle). Nothing happens at that moment, so the model adds no event to the
calendar: a node's state is settled when a job starts on it. A job started on GPUs of one or more powered-down
nodes wakes them: it holds its GPUs from its start, and its work begins ``wake_s`` seconds later. The simulation
adds ``wake_s x rate`` (its rate at the start) to the job's work left, as it adds a restart overhead, and this
module records that overhead in reference GPU-seconds (``wake_s x rate x GPUs x fraction``, the convention of
``Result.restart_gpu_s``). The GPUs held while their node wakes count as held in the energy metrics (at the busy
draw: an over-estimate, a booting node draws less).

The record: per job, ``wakes`` (the times it waited for a node to wake, ``wake_s`` each: the metrics count that time
as wait) and ``wake_gpu_s``; per time a node was powered down, its node and the interval (its end ``inf``
when the node was idle at the end of the run: it powers down and stays down), which :mod:`engine.analysis.energy` reads to draw ``sleep_w``
instead of the idle power.
"""

from __future__ import annotations

import math
from typing import Sequence

from engine.sim.cluster import Layout
from engine.sim.job import Job
from engine.sim.options import PowerDownModel


class NodeSleep:
    """Which nodes are powered down and what waking them cost; :meth:`of` gives ``None`` when the model is off."""

    def __init__(self, model: PowerDownModel, layout: Layout, jobs: Sequence[Job]) -> None:
        assert model.idle_timeout_s is not None
        self._timeout_s = float(model.idle_timeout_s)
        self._wake_s = float(model.wake_s)
        self._gpu_node: list[int] = layout.gpu_node.tolist()
        self._demand = [job.gpus * job.gpu_fraction for job in jobs]
        self._holders = [0] * layout.n_nodes  # jobs holding a GPU of each node
        self._idle_since_s = [0.0] * layout.n_nodes
        self.wake_gpu_s = [0.0] * len(jobs)
        self.wakes = [0] * len(jobs)
        self.sleep_node: list[int] = []
        self.sleep_start_s: list[float] = []
        self.sleep_end_s: list[float] = []

    @classmethod
    def of(cls, model: PowerDownModel, layout: Layout, jobs: Sequence[Job]) -> NodeSleep | None:
        """The helper of a run with ``model``, or ``None`` when nodes never power down."""
        return cls(model, layout, jobs) if model.active else None

    def _nodes(self, gpus: tuple[int, ...]) -> list[int]:
        gpu_node = self._gpu_node
        return sorted({gpu_node[g] for g in gpus})

    def woken(self, j: int, gpus: tuple[int, ...], now_s: float, rate: float) -> float:
        """Job ``j`` starts now on ``gpus`` at ``rate``: its nodes are held from now on. Returns the reference work
        it adds for waking them: ``wake_s x rate`` when one of them was powered down (idle for longer than the
        timeout), else 0; each such node's powered-down interval ends now."""
        woke = False
        for node in self._nodes(gpus):
            if self._holders[node] == 0:
                down_s = self._idle_since_s[node] + self._timeout_s
                if now_s > down_s:
                    self.sleep_node.append(node)
                    self.sleep_start_s.append(down_s)
                    self.sleep_end_s.append(now_s)
                    woke = True
            self._holders[node] += 1
        if not woke:
            return 0.0
        self.wakes[j] += 1
        extra = self._wake_s * rate
        self.wake_gpu_s[j] += extra * self._demand[j]
        return extra

    def released(self, gpus: tuple[int, ...], now_s: float) -> None:
        """A job held ``gpus`` until now; a node no job holds any more is idle from now."""
        for node in self._nodes(gpus):
            self._holders[node] -= 1
            if self._holders[node] == 0:
                self._idle_since_s[node] = now_s

    def intervals(self) -> tuple[list[int], list[float], list[float]]:
        """``(node, start_s, end_s)`` of every powered-down interval, in the order they ended, then one per node idle
        at the end of the run (no job will hold it again: it powers down at its timeout and stays down, ``inf``)."""
        nodes, starts, ends = list(self.sleep_node), list(self.sleep_start_s), list(self.sleep_end_s)
        for node, held in enumerate(self._holders):
            if held == 0:
                nodes.append(node)
                starts.append(self._idle_since_s[node] + self._timeout_s)
                ends.append(math.inf)
        return nodes, starts, ends
