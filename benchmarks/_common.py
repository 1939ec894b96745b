"""What the benchmark scripts share (the leading ``_`` keeps ``python -m benchmarks`` from running it as a script)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from engine import make_scheduler, simulate
from engine.sim.cluster import Cluster
from engine.sim.job import Job
from engine.sim.options import RunOptions
from engine.sim.record import Result

SEED = 1  # the seed of each benchmark's workload and run: any fixed seed, so that reruns compare


def timed_run(
    cluster: Cluster, jobs: Sequence[Job], scheduler: str, options: RunOptions | None = None
) -> tuple[float, Result]:
    """``(CPU seconds, result)`` of one ``simulate`` (CPU time: on a shared machine wall time also counts other
    processes)."""
    t0 = time.process_time()
    result = simulate(cluster, jobs, make_scheduler(scheduler), seed=SEED, options=options)
    return time.process_time() - t0, result
