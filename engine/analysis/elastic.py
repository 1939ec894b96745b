"""How a run treated its elastic jobs (``Job.min_gpus < Job.max_gpus``), from a
:class:`~engine.sim.simulator.Result`. Every formula is written here; a summary holds these metrics only when some
job of the run is elastic.

* ``elastic_jobs`` = jobs of the workload that are elastic.
* ``rescales`` = resizes over all jobs (``Result.rescales``: each ``Resize`` a scheduler made).
* GPU-time efficiency of a completed elastic job = useful GPU-seconds / GPU-seconds held, where useful =
  ``duration_s x speedup(gpus)`` (its work in seconds on one reference GPU, by its own curve) and held = its busy
  GPU-seconds over all run segments (rescale stalls and lost work included). On ``k`` reference GPUs from start to
  end it is ``speedup(k) / k``: 1 on one GPU with no rescale, less the worse the job scales where it runs; faster
  GPU types raise it (their speed counts as useful). ``elastic_gpu_efficiency`` = the sum of useful over the sum of
  held, over completed elastic jobs (NaN when none completed).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from engine.sim.scaling import SCALING_CURVES
from engine.sim.simulator import COMPLETED, Result


@dataclass(frozen=True)
class ElasticSummary:
    """The run-level elastic metrics (formulas in the module docstring)."""

    elastic_jobs: int
    rescales: int
    elastic_gpu_efficiency: float

    def to_dict(self) -> dict[str, int | float]:
        return asdict(self)


def has_elastic(result: Result) -> bool:
    """Whether some job of the run is elastic (then its summary holds the elastic metrics)."""
    return any(j.elastic for j in result.jobs)


def _useful_gpu_s(result: Result) -> np.ndarray:
    """Per job: ``duration_s x speedup(gpus)`` for an elastic job, NaN for a rigid one."""
    return np.array(
        [j.duration_s * SCALING_CURVES[j.scaling].speedup(j.gpus) if j.elastic else math.nan for j in result.jobs],
        dtype=float,
    )


def job_elastic(result: Result, held_gpu_s: np.ndarray) -> dict[str, np.ndarray]:
    """Per-job columns: ``rescales`` and ``gpu_efficiency`` (completed elastic jobs; NaN otherwise), given each
    job's busy GPU-seconds ``held_gpu_s``."""
    useful = _useful_gpu_s(result)
    done = result.status == COMPLETED
    with np.errstate(divide="ignore", invalid="ignore"):
        efficiency = np.where(done & (held_gpu_s > 0), useful / held_gpu_s, math.nan)
    return {"rescales": result.rescales.astype(np.int64), "gpu_efficiency": efficiency}


def summarize_elastic(result: Result, held_gpu_s: np.ndarray) -> ElasticSummary:
    """The elastic metrics of ``result`` (``held_gpu_s``: each job's busy GPU-seconds)."""
    useful = _useful_gpu_s(result)
    counted = (result.status == COMPLETED) & ~np.isnan(useful) & (held_gpu_s > 0)
    held = float(held_gpu_s[counted].sum())
    return ElasticSummary(
        elastic_jobs=int(sum(j.elastic for j in result.jobs)),
        rescales=int(result.rescales.sum()),
        elastic_gpu_efficiency=float(useful[counted].sum()) / held if held > 0 else math.nan,
    )
