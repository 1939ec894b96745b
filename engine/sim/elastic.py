"""Elastic jobs in the simulation: their speed on other GPU counts and the :class:`~engine.sim.state.Resize` decision.

Progress: a job's ``duration_s`` is reference work at its requested size ``gpus`` (what a rigid job runs). On ``k``
GPUs an elastic job does that work at

    rate = speed(job type, GPU type) x communication factor x speedup(k) / speedup(gpus)

where ``speedup`` is its curve (:mod:`engine.sim.scaling`): the factor is exactly 1.0 at ``k == gpus``, so a job run
at its requested size (what every scheduler that does not resize does) runs exactly as a rigid job would.

Resizing: a :class:`~engine.sim.state.Resize` that the checks accepted stops the job's run segment, releases its
GPUs, takes the new ones and re-times its completion. Its work left grows by ``rescale_s x new rate`` (the run's
``options.elastic.rescale_s``): the job makes no progress for ``rescale_s`` seconds after each change of its
allocation, as Pollux charges a reallocation. Starting a job (first start or after a preemption) is not a rescale.
Each resize counts in :attr:`~engine.sim.record.Result.rescales`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from engine.sim.job import Job
from engine.sim.scaling import SCALING_CURVES
from engine.sim.state import JOB_QUEUED

if TYPE_CHECKING:  # pragma: no cover
    from engine.sim.simulator import Simulation


def speedup_ratio(job: Job, k: int) -> float:
    """How much faster elastic ``job`` runs on ``k`` GPUs than at its requested size (1.0 at ``k == job.gpus``)."""
    return _ratio(job.scaling, job.gpus, k)


@lru_cache(maxsize=4096)
def _ratio(scaling: str, gpus: int, k: int) -> float:
    if k == gpus:
        return 1.0
    curve = SCALING_CURVES[scaling]
    return curve.speedup(k) / curve.speedup(gpus)


def resize(sim: Simulation, j: int, gpus: tuple[int, ...]) -> None:
    """Move running elastic job ``j`` of ``sim`` to ``gpus`` now (a resize the checks accepted), paying the rescale
    cost (module docstring)."""
    sim._stop(j)
    sid = sim._job_shape[j]
    sim._state[j] = JOB_QUEUED  # for _start, which takes the job from the queue (no scheduler sees this)
    sim._queue[j] = None
    sim._queue_shapes[sid] = sim._queue_shapes.get(sid, 0) + 1
    rate = sim.placement_rate(sim.jobs[j], gpus)
    sim._work_left[j] = sim._work_left[j] + sim.options.elastic.rescale_s * rate
    sim._start(j, gpus)
    sim._rec.rescales[j] = sim._rec.rescales[j] + 1
