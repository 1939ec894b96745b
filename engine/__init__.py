"""GPU-cluster scheduling playground: the simulation engine.

Importable without Streamlit or torch. The public API::

    from engine import parse_cluster, make_scheduler, simulate
    from engine.analysis.metrics import summarize
    cluster = parse_cluster("4x8:A100-80,2x4:V100-32")
    result = simulate(cluster, jobs, make_scheduler("easy-backfill"), seed=0)
"""

from engine._native import install

install()  # before any hot module is imported: compiled modules only while they match their sources

from engine import rl as _rl  # noqa: E402,F401  (registers the `rl:<model>` scheduler prefix; torch only on use)
from engine.errors import ClusterSpecError, EngineError, InvalidDecision, StallError, TraceError, UnknownNameError
from engine.schedulers import SCHEDULERS, make_scheduler, scheduler_names
from engine.sim.cluster import CLUSTER_SOURCES, Cluster, GpuType, NodeGroup, parse_cluster
from engine.sim.job import Job
from engine.sim.options import CarbonSeries, EnergyModel, FailureModel, PreemptionModel, RunOptions
from engine.sim.simulator import Result, Simulation, simulate
from engine.sim.state import ClusterState, Decision, Preempt, Resize, Scheduler, Start, Wake


def _openb_cluster(path: str) -> Cluster:
    """``openb:PATH``: the cluster of a real Alibaba node list (the trace reader is imported on use)."""
    from engine.traces.openb import openb_cluster

    return openb_cluster(path)


CLUSTER_SOURCES["openb"] = _openb_cluster

from engine.plugins import load_entry_points  # noqa: E402

load_entry_points()  # schedulers of installed packages (entry-point group in engine/plugins.py)

__all__ = [
    "CarbonSeries",
    "Cluster",
    "ClusterSpecError",
    "ClusterState",
    "Decision",
    "EnergyModel",
    "EngineError",
    "FailureModel",
    "GpuType",
    "InvalidDecision",
    "Job",
    "NodeGroup",
    "Preempt",
    "PreemptionModel",
    "Resize",
    "Result",
    "RunOptions",
    "SCHEDULERS",
    "Scheduler",
    "Simulation",
    "StallError",
    "Start",
    "TraceError",
    "UnknownNameError",
    "Wake",
    "make_scheduler",
    "parse_cluster",
    "scheduler_names",
    "simulate",
]


def sweep(*args, **kwargs):
    """Every cluster x load x seed x scheduler of a grid on Ray: a pandas frame of metrics, one row per cell.

    See :func:`engine.analysis.sweep.sweep` (imported on first use, so ``import engine`` imports neither ray nor
    pandas)."""
    from engine.analysis.sweep import sweep as run

    return run(*args, **kwargs)


def plan(*args, **kwargs):
    """The fewest nodes of one shape meeting a target, per scheduler, searched on Ray: a pandas frame.

    See :func:`engine.analysis.plan.plan` (imported on first use)."""
    from engine.analysis.plan import plan as run

    return run(*args, **kwargs)


__all__ += ["plan", "sweep"]
