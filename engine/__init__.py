"""GPU-cluster scheduling playground: the simulation engine.

Importable without Streamlit or torch. The public API::

    from engine import parse_cluster, make_scheduler, simulate
    from engine.metrics import summarize
    cluster = parse_cluster("4x8:A100-80,2x4:V100-32")
    result = simulate(cluster, jobs, make_scheduler("easy-backfill"), seed=0)
"""

from ._native import install

install()  # before any hot module is imported: compiled modules only while they match their sources

from .cluster import Cluster, GpuType, NodeGroup, parse_cluster
from .errors import ClusterSpecError, EngineError, InvalidDecision, StallError, TraceError, UnknownNameError
from .job import Job
from .schedulers import SCHEDULERS, make_scheduler, scheduler_names
from .simulator import PreemptionModel, Result, Simulation, simulate
from .state import ClusterState, Decision, Preempt, Scheduler, Start, Wake

__all__ = [
    "Cluster", "ClusterSpecError", "ClusterState", "Decision", "EngineError", "GpuType", "InvalidDecision",
    "Job", "NodeGroup", "Preempt", "PreemptionModel", "Result", "SCHEDULERS", "Scheduler", "Simulation",
    "StallError", "Start", "TraceError", "UnknownNameError", "Wake", "make_scheduler", "parse_cluster",
    "scheduler_names", "simulate",
]
