"""Scaling curves: how much faster an elastic job runs on more GPUs (a registry of named curves).

A curve maps a GPU count ``k >= 1`` to a speed-up over one GPU, ``speedup(1) == 1``. An elastic job
(:class:`~engine.sim.job.Job` with ``min_gpus < max_gpus``) names one in ``Job.scaling``; the simulator runs it
on ``k`` GPUs at ``speedup(k) / speedup(gpus)`` times the rate it has at its requested size ``gpus``
(:mod:`engine.sim.elastic`). A curve is the job's own scaling on a consolidated placement; the cluster's
communication factor for a placement spread over more nodes than needed still applies on top.

Two kinds:

* :class:`TableCurve`: measured speed-ups at some GPU counts, linear between them and flat past the last (no
  extrapolation past what was measured);
* :class:`AmdahlCurve`: ``1 / (serial + (1 - serial) / k + cross_node x (1 - 1 / nodes))`` with ``nodes =
  ceil(k / gpus_per_node)``: Amdahl's law for the work within a node, plus a synchronisation term that appears
  when the job spans nodes and grows with their number (the inter-node share of a ring all-reduce).

=======================  ==========================================================  =============================
curve                    speed-up                                                    source
=======================  ==========================================================  =============================
``linear``               ``k`` (ideal scaling)                                       by definition
``resnet50-a100``        1.81, 3.07, 4.5, 5.5, 5.6, 5.8 at 2, 4, 8, 16, 32, 64        ElasticFlow (ASPLOS'23),
                                                                                     ``throughputs_A100/resnet50``
``amdahl-resnet50``      serial 0.111, cross-node 0.03, 8 GPUs per node              fitted to ``resnet50-a100``
                                                                                     at 8 and 16 GPUs (estimate)
``pollux-<app>``         cifar10, bert, imagenet, yolov3, deepspeech2, ncf           Pollux (OSDI'21) artifact
                                                                                     (:mod:`engine.traces.profiles`)
=======================  ==========================================================  =============================

A table whose GPU counts do not increase from ``(1, 1.0)``, or with a speed-up that is not a number > 0, is
refused with one line naming the curve; so is an unknown curve name (:func:`scaling_curve`). Speed-ups may dip
where measurements do (Pollux's yolov3 is slower on two nodes than on one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise
from numbers import Real
from typing import Any, Protocol

from engine.errors import EngineError, quote


class ScalingError(EngineError, ValueError):
    """A scaling curve is invalid or unknown; the message names it."""


class ScalingCurve(Protocol):
    """What the engine asks of a curve: its name and its speed-up on ``k`` GPUs."""

    @property
    def name(self) -> str:
        """The curve's name in :data:`SCALING_CURVES`."""

    def speedup(self, k: int) -> float:
        """Speed-up on ``k >= 1`` GPUs over one GPU (1.0 at ``k == 1``)."""


def _number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class TableCurve:
    """Measured speed-ups: ``points`` is ``((gpus, speed-up), ...)`` with GPU counts increasing from ``(1, 1.0)``;
    linear between points, the last point's speed-up beyond it."""

    name: str
    points: tuple[tuple[int, float], ...]
    source: str = ""

    def __post_init__(self) -> None:
        pts = self.points
        if not pts or tuple(pts[0]) != (1, 1.0):
            raise ScalingError(f"scaling curve {self.name!r}: the table must start at (1, 1.0), got {quote(pts[:1])}")
        for (g0, _), (g1, _) in pairwise(pts):
            if not (isinstance(g1, int) and g1 > g0):
                raise ScalingError(f"scaling curve {self.name!r}: GPU counts must increase, got {g0} then {quote(g1)}")
        for g, s in pts:
            if not (_number(s) and s > 0):
                raise ScalingError(f"scaling curve {self.name!r}: speed-up at {g} GPUs must be > 0, got {quote(s)}")

    def speedup(self, k: int) -> float:
        return table_speedup(self.points, k)


def table_speedup(points: tuple[tuple[int, float], ...], k: int) -> float:
    """The speed-up of table ``points`` on ``k`` GPUs: linear between points, the last point's beyond it."""
    for (g0, s0), (g1, s1) in pairwise(points):
        if k < g1:
            return s0 + (max(k, g0) - g0) / (g1 - g0) * (s1 - s0)
    return points[-1][1]


@dataclass(frozen=True)
class AmdahlCurve:
    """Amdahl's law within a node plus a cross-node synchronisation term (module docstring)."""

    name: str
    serial: float
    cross_node: float
    gpus_per_node: int = 8
    source: str = ""

    def __post_init__(self) -> None:
        if not (_number(self.serial) and 0 <= self.serial < 1):
            raise ScalingError(f"scaling curve {self.name!r}: serial must be in [0, 1), got {quote(self.serial)}")
        if not (_number(self.cross_node) and self.cross_node >= 0):
            raise ScalingError(f"scaling curve {self.name!r}: cross_node must be >= 0, got {quote(self.cross_node)}")
        if not (isinstance(self.gpus_per_node, int) and self.gpus_per_node >= 1):
            raise ScalingError(f"scaling curve {self.name!r}: gpus_per_node must be an integer >= 1")

    def speedup(self, k: int) -> float:
        nodes = -(-k // self.gpus_per_node)
        return 1.0 / (self.serial + (1.0 - self.serial) / k + self.cross_node * (1.0 - 1.0 / nodes))


class LinearCurve:
    """Ideal scaling: ``speedup(k) == k``."""

    name = "linear"

    def speedup(self, k: int) -> float:
        return float(k)


POLLUX_ARTIFACT = "Pollux (OSDI'21) artifact, petuum/adaptdl simulator/ @ de25dcc"
#: Pollux's measured tables (throughput on ``g`` GPUs / on 1, consolidated into 4-GPU nodes, at each application's
#: fixed batch size); how each number is derived: scripts/derive_profiles.py. The application profiles of
#: :mod:`engine.traces.profiles` read them from here.
POLLUX_TABLES: dict[str, tuple[tuple[int, float], ...]] = {
    "cifar10": ((1, 1.0), (2, 1.675), (3, 2.57), (4, 3.558), (6, 5.222), (8, 5.4), (12, 7.406), (16, 9.091)),
    # Multi-node placements synchronise about 1 s a step, so 6 GPUs (two nodes) gain little over 4.
    "bert": ((1, 1.0), (2, 2.093), (3, 3.007), (4, 4.148), (6, 4.565), (8, 5.625), (12, 8.778), (16, 10.451)),
    "imagenet": ((1, 1.0), (2, 1.983), (3, 2.78), (4, 3.695), (6, 5.781), (8, 7.305), (12, 11.17), (16, 14.16)),
    # Across nodes a step synchronises for about 1 s, more than it computes: 6 to 16 GPUs are slower than 4.
    "yolov3": ((1, 1.0), (2, 1.949), (3, 2.306), (4, 2.936), (6, 1.282), (8, 1.583), (12, 2.082), (16, 2.207)),
    # Estimate: from scalability.csv (one replica per node on 6 to 16 nodes); spread placements.
    "deepspeech2": ((1, 1.0), (6, 5.797), (8, 7.814), (12, 8.431), (16, 8.238)),
    # No multi-GPU data: Pollux runs ncf on 1 GPU only.
    "ncf": ((1, 1.0),),
}

#: ElasticFlow's measured ResNet-50 on A100 at a fixed batch size (ElasticFlow, ASPLOS'23,
#: ``scheduler/throughputs_A100/resnet50.csv``; /work/shared/REFERENCES.md, "Elastic jobs").
RESNET50_A100 = ((1, 1.0), (2, 1.81), (4, 3.07), (8, 4.5), (16, 5.5), (32, 5.6), (64, 5.8))

_CURVES: tuple[ScalingCurve, ...] = (
    LinearCurve(),
    TableCurve("resnet50-a100", RESNET50_A100, "ElasticFlow (ASPLOS'23) throughputs_A100/resnet50.csv"),
    # Estimate: serial 0.111 from 1 / 4.5 = s + (1 - s) / 8 (8 GPUs, one node), cross-node 0.03 from
    # 1 / 5.5 at 16 GPUs (two nodes); it gives 1.80 and 3.0 at 2 and 4 GPUs (measured 1.81, 3.07).
    AmdahlCurve("amdahl-resnet50", 0.111, 0.03, 8, "fitted to resnet50-a100 at 8 and 16 GPUs (estimate)"),
    *(TableCurve(f"pollux-{app}", table, POLLUX_ARTIFACT) for app, table in POLLUX_TABLES.items()),
)
#: Curve name -> curve.
SCALING_CURVES: dict[str, ScalingCurve] = {curve.name: curve for curve in _CURVES}

#: The curve name of a rigid job.
RIGID = ""


def scaling_curve(name: Any, where: str = "scaling") -> ScalingCurve:
    """The curve registered as ``name``, or :class:`ScalingError` naming ``where``, the name and the known ones."""
    curve = SCALING_CURVES.get(name) if isinstance(name, str) else None
    if curve is None:
        raise ScalingError(f"{where}: unknown scaling curve {quote(name)}; expected one of {', '.join(SCALING_CURVES)}")
    return curve
