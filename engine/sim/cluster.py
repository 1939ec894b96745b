"""Cluster model: GPU catalog, node groups, racks, speed and communication tables.

Units: memory in GiB, speeds relative to the reference GPU type ``generic`` (speed 1): a job whose trace
duration is ``d`` seconds runs ``d / speed`` seconds on a GPU of that speed (before placement effects).

A cluster is written either as shorthand, ``"4x8:A100-80,2x4:V100-32"`` (nodes x GPUs per node : type),
or as a JSON file for full detail::

    {
      "groups": [{"gpu_type": "A100-80", "nodes": 4, "gpus_per_node": 8, "rack": "r0"}, ...],
      "gpu_types": [{"name": "MY-GPU", "vram_gib": 48, "speed": 1.7,     # extra catalog entries; power
                     "board_w": 300, "price_per_h": 2.0}],              # (idle_w, busy_w) and price optional
      "nodes_per_rack": 4,                                              # racks for groups without "rack"
      "bandwidth": {"cross_node": 0.3, "cross_rack": 0.8},              # communication penalties
      "communication": {"training": 1.0, "inference": 0.05},            # job-type sensitivities
      "speeds": {"A100-80": {"training": 2.6}},                         # per (GPU type, job type) speed
      "colocation_slowdown": 0.15
    }

Speed model (documented here once; the simulator applies it):

* **GPU type.** A job of type ``t`` on GPU type ``g`` progresses at ``speed(t, g) = g.speed ** e[t]`` units
  of reference work per second, where ``e`` is :data:`SPEEDUP_EXPONENT` (training gains the full speed-up of
  a faster GPU; inference and interactive work, being memory- or latency-bound, gain less). A cluster
  may override any pair with ``speeds``. A multi-GPU job runs at the speed of its slowest GPU.
* **Communication.** A multi-GPU job whose GPUs span several nodes is slowed by
  ``1 / (1 + s[t] * p)``, where ``p`` is ``bandwidth["cross_node"]`` when all its nodes share one rack and
  ``bandwidth["cross_rack"]`` when they do not, and ``s[t]`` is the job type's communication sensitivity
  (:data:`COMM_SENSITIVITY`: training 1.0, inference 0.05). The extra GPU-seconds this costs are recorded
  as communication overhead.
* **Co-location.** Fractional jobs sharing one GPU each run ``1 / (1 + c * (k - 1))`` as fast, where ``k`` is
  the number of jobs on that GPU and ``c`` is ``colocation_slowdown``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from engine.errors import ClusterSpecError, clip, quote, reject_unknown_keys
from engine.sim.job import MAX_VRAM_GIB

#: Idle draw, percent of board power (no datasheet states idle draw; about 15 % is a common estimate, see
#: shared REFERENCES.md "Power, prices, carbon").
IDLE_PERCENT_OF_BOARD = 15
#: Draw while training, percent of board power: an 8xH100 node in training drew about 76 % of its rated
#: power (arXiv 2506.14551, measured); applied to every type, an estimate.
BUSY_PERCENT_OF_BOARD = 76
#: The power and price fields of :class:`GpuType`, in the order a cluster JSON and ``list --json`` show them.
POWER_PRICE_FIELDS = ("board_w", "idle_w", "busy_w", "price_per_h")

# Physical bounds of every number of a cluster. Besides refusing nonsense, they keep every rate the simulator
# computes a normal float far from 0: the slowest job runs at least MIN_SPEED / (1 + MAX_COMM_SENSITIVITY *
# MAX_BANDWIDTH_PENALTY) / (1 + MAX_COLOCATION_SLOWDOWN * tenants) times reference speed, so a job of the longest
# duration a workload may hold (:data:`engine.sim.job.MAX_TIME_S`) still ends at a finite time.
#: Speeds relative to ``generic`` (a V100): from 1/1000 to 1000 times it (a K80 is 0.25, an H100 4).
MIN_SPEED = 1e-3
MAX_SPEED = 1e3
#: Board power and draw of one GPU, watts: at most 100 kW (the largest boards draw about 1.2 kW).
MAX_GPU_W = 1e5
#: Price of one GPU-hour, USD: at most 10,000 (cloud GPUs cost under 100).
MAX_PRICE_PER_H = 1e4
#: Communication penalties (``bandwidth``) and sensitivities (``communication``): at most 100 each, a job at
#: most 10,001 times slower for being spread (the defaults are below 1).
MAX_BANDWIDTH_PENALTY = 100.0
MAX_COMM_SENSITIVITY = 100.0
#: Co-location slowdown per extra tenant of a GPU: at most 100 (each extra tenant at most 101 times slower; the
#: default is 0.1).
MAX_COLOCATION_SLOWDOWN = 100.0


@dataclass(frozen=True, slots=True)
class GpuType:
    """A GPU model: its memory in GiB, its speed relative to ``generic``, its power and its price.

    Attributes:
        board_w: board power (the power limit), watts; ``None`` when unknown.
        idle_w: draw when no job holds it, watts (default :data:`IDLE_PERCENT_OF_BOARD` % of ``board_w``).
        busy_w: draw when jobs hold all of it, watts (default :data:`BUSY_PERCENT_OF_BOARD` % of ``board_w``).
        price_per_h: USD per GPU-hour (``None`` when unknown); a named price list may replace it
            (:func:`gpu_prices`).
    """

    name: str
    vram_gib: float
    speed: float
    board_w: float | None = None
    idle_w: float | None = None
    busy_w: float | None = None
    price_per_h: float | None = None

    def __post_init__(self) -> None:
        if not self.name or not re.fullmatch(r"[A-Za-z0-9._\-]+", self.name):
            raise ClusterSpecError(f"GPU type name {self.name!r}: use letters, digits, '.', '_' or '-'")
        if not (math.isfinite(self.vram_gib) and self.vram_gib > 0):
            raise ClusterSpecError(f"GPU type {self.name}: vram_gib must be > 0, got {self.vram_gib}")
        _within(self.vram_gib, f"GPU type {self.name}: vram_gib", 0.0, MAX_VRAM_GIB)
        if not (math.isfinite(self.speed) and self.speed > 0):
            raise ClusterSpecError(f"GPU type {self.name}: speed must be > 0, got {self.speed}")
        _within(self.speed, f"GPU type {self.name}: speed", MIN_SPEED, MAX_SPEED)
        for key in POWER_PRICE_FIELDS:
            v = getattr(self, key)
            if v is not None and not (_is_number(v) and v >= 0):
                raise ClusterSpecError(f"GPU type {self.name}: {key} must be a number >= 0 or null, got {quote(v)}")
            if v is not None:
                _within(v, f"GPU type {self.name}: {key}", 0.0, MAX_PRICE_PER_H if key == "price_per_h" else MAX_GPU_W)
        if self.board_w is not None:  # slots + frozen: the derived defaults are set through object
            if self.idle_w is None:
                object.__setattr__(self, "idle_w", self.board_w * IDLE_PERCENT_OF_BOARD / 100)
            if self.busy_w is None:
                object.__setattr__(self, "busy_w", self.board_w * BUSY_PERCENT_OF_BOARD / 100)
        if self.idle_w is not None and self.busy_w is not None and self.idle_w > self.busy_w:
            raise ClusterSpecError(
                f"GPU type {self.name}: idle_w ({self.idle_w:g}) must be <= busy_w ({self.busy_w:g})"
            )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of a cluster's ``gpu_types`` entry (unknown power and price fields left out)."""
        out: dict[str, Any] = {"name": self.name, "vram_gib": self.vram_gib, "speed": self.speed}
        out.update({k: getattr(self, k) for k in POWER_PRICE_FIELDS if getattr(self, k) is not None})
        return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _within(value: float, key: str, low: float, high: float) -> None:
    """``ClusterSpecError`` naming ``key`` unless ``low <= value <= high`` (a number already checked finite)."""
    if value < low:
        raise ClusterSpecError(f"{key} must be at least {low:g}, got {value:g}")
    if value > high:
        raise ClusterSpecError(f"{key} must be at most {high:g}, got {value:g}")


@dataclass(frozen=True)
class PriceList:
    """A named list of prices, USD per GPU-hour, by GPU type (``prices``); ``date`` and ``source`` say where
    they come from. Every list here is an estimate: cloud prices change and differ by region."""

    name: str
    date: str
    source: str
    prices: Mapping[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "date": self.date, "source": self.source, "prices": dict(self.prices)}


#: Cloud on-demand prices per GPU-hour, GPU only where the cloud prices it apart (an estimate).
#: K80 0.45, P100 1.46, T4 0.35, V100 2.48: GCP us-central1 GPU prices as listed in SkyPilot's early GCP
#: catalog (sky/clouds/gcp.py, about 2021). A100-40 2.93, A100-80 3.93, L4 0.56, H100-80 11.06 (a3-highgpu-8g
#: over 8 GPUs, host included): GCP list prices about 2024, unverified. A10 1.01: AWS g5.xlarge (one A10G, host
#: included), 2026 blog summaries, unverified (shared REFERENCES.md). ``generic`` is a V100-class GPU, priced
#: as one.
ON_DEMAND_PRICES: dict[str, float] = {
    "generic": 2.48,
    "K80": 0.45,
    "P100": 1.46,
    "T4": 0.35,
    "V100-16": 2.48,
    "V100-32": 2.48,
    "A10": 1.01,
    "L4": 0.56,
    "A100-40": 2.93,
    "A100-80": 3.93,
    "H100-80": 11.06,
}

#: Named price lists, chosen by name (``EnergyModel.price_list``); ``"catalog"`` means each GPU type's own
#: ``price_per_h`` (the built-in types carry :data:`ON_DEMAND_PRICES`).
PRICE_LISTS: dict[str, PriceList] = {
    p.name: p
    for p in (
        PriceList(
            "on-demand",
            "2021-2026 (estimate)",
            "GCP/AWS on-demand list prices per GPU-hour (see ON_DEMAND_PRICES)",
            ON_DEMAND_PRICES,
        ),
        # Gavel's GCP preemptible prices (scheduler/utils.py, per_instance_type_spot_prices['gcp']), as used in its
        # cost experiments (OSDI 2020): K80 0.135, P100 0.43, V100 0.74. It has no other types.
        PriceList(
            "gcp-preemptible-2020",
            "2020 (estimate)",
            "Gavel scheduler/utils.py, GCP preemptible",
            {"generic": 0.74, "K80": 0.135, "P100": 0.43, "V100-16": 0.74, "V100-32": 0.74},
        ),
    )
}
CATALOG_PRICES = "catalog"


def _catalog_type(name: str, vram_gib: float, speed: float, board_w: float) -> GpuType:
    return GpuType(name, vram_gib, speed, board_w=board_w, price_per_h=ON_DEMAND_PRICES[name])


#: Built-in GPU catalog. Speeds are relative training throughput, V100-class = 1 (the ``generic`` reference,
#: so traces from V100-era clusters such as Philly run unchanged), rounded from public MLPerf-style
#: comparisons; they are defaults for what-if analysis, not measurements of any one model.
#: Board power, watts (shared REFERENCES.md): T4 70 (NVIDIA product brief); L4 72; A100-40 250 (PCIe);
#: A100-80 400 (SXM); H100-80 700 (SXM) (spec pages, secondary); V100 300 (SXM2; PCIe is 250; unverified);
#: K80 150 (half of the 300 W two-GPU board: a catalog K80 is one GPU; unverified); P100 250 (PCIe; SXM is
#: 300; unverified); A10 150 (unverified); ``generic`` as a V100. Idle and busy draw follow from board power
#: (:data:`IDLE_PERCENT_OF_BOARD`, :data:`BUSY_PERCENT_OF_BOARD`): estimates. Prices: :data:`ON_DEMAND_PRICES`.
DEFAULT_CATALOG: dict[str, GpuType] = {
    g.name: g
    for g in (
        _catalog_type("generic", 32.0, 1.0, 300.0),
        _catalog_type("K80", 12.0, 0.25, 150.0),
        _catalog_type("P100", 16.0, 0.55, 250.0),
        _catalog_type("T4", 16.0, 0.45, 70.0),
        _catalog_type("V100-16", 16.0, 1.0, 300.0),
        _catalog_type("V100-32", 32.0, 1.0, 300.0),
        _catalog_type("A10", 24.0, 0.9, 150.0),
        _catalog_type("L4", 24.0, 0.8, 72.0),
        _catalog_type("A100-40", 40.0, 2.2, 250.0),
        _catalog_type("A100-80", 80.0, 2.4, 400.0),
        _catalog_type("H100-80", 80.0, 4.0, 700.0),
    )
}

#: How much of a faster GPU's speed each job type gets: ``speed(t, g) = g.speed ** SPEEDUP_EXPONENT[t]``.
SPEEDUP_EXPONENT: dict[str, float] = {"training": 1.0, "batch": 0.9, "inference": 0.6, "interactive": 0.5}

#: Communication sensitivity of each job type (0 = indifferent to spreading, 1 = fully sensitive).
COMM_SENSITIVITY: dict[str, float] = {"training": 1.0, "batch": 0.3, "interactive": 0.2, "inference": 0.05}

#: Default slowdown penalties for spreading over nodes in one rack and over racks.
DEFAULT_BANDWIDTH: dict[str, float] = {"cross_node": 0.25, "cross_rack": 0.6}

DEFAULT_COLOCATION_SLOWDOWN = 0.1
DEFAULT_NODES_PER_RACK = 4

#: Largest cluster the engine builds: nodes and GPUs in all (larger ones would take minutes and gigabytes to lay
#: out; the largest real clusters in the traces have about 1,200 nodes).
MAX_NODES = 100_000
MAX_GPUS = 1_000_000
#: Longest cluster text (shorthand or inline JSON) and deepest JSON nesting :func:`parse_cluster_text` reads.
MAX_SPEC_CHARS = 1 << 20
MAX_JSON_DEPTH = 8


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """``nodes`` identical nodes, each with ``gpus_per_node`` GPUs of ``gpu_type``; ``rack`` pins them to
    one named rack (otherwise racks are formed of ``nodes_per_rack`` consecutive nodes)."""

    gpu_type: str
    nodes: int
    gpus_per_node: int
    rack: str | None = None


@dataclass(frozen=True)
class Layout:
    """Flat arrays describing every node and GPU; GPUs of a node are contiguous, ids ``0..n_gpus-1``."""

    type_names: tuple[str, ...]
    type_vram_gib: np.ndarray  # per type
    type_speed: np.ndarray  # per type
    node_type: np.ndarray  # per node: type index
    node_rack: np.ndarray  # per node: rack index
    node_gpus: np.ndarray  # per node: GPU count
    node_first_gpu: np.ndarray  # per node: id of its first GPU
    gpu_node: np.ndarray  # per GPU: node index
    gpu_type: np.ndarray  # per GPU: type index
    rack_names: tuple[str, ...]

    @property
    def n_gpus(self) -> int:
        return int(self.gpu_node.shape[0])

    @property
    def n_nodes(self) -> int:
        return int(self.node_type.shape[0])


@dataclass(frozen=True)
class Cluster:
    """A GPU cluster: node groups plus the catalog and the speed/communication model they run under."""

    groups: tuple[NodeGroup, ...]
    catalog: Mapping[str, GpuType] = field(default_factory=lambda: dict(DEFAULT_CATALOG))
    nodes_per_rack: int = DEFAULT_NODES_PER_RACK
    bandwidth: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_BANDWIDTH))
    communication: Mapping[str, float] = field(default_factory=lambda: dict(COMM_SENSITIVITY))
    speeds: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    colocation_slowdown: float = DEFAULT_COLOCATION_SLOWDOWN

    def __post_init__(self) -> None:
        if not self.groups:
            raise ClusterSpecError("a cluster needs at least one node group")
        for i, g in enumerate(self.groups):
            where = f"node group {i + 1} ({g.nodes}x{g.gpus_per_node}:{g.gpu_type})"
            if g.gpu_type not in self.catalog:
                raise ClusterSpecError(
                    f"{where}: unknown GPU type {g.gpu_type!r}; known: {', '.join(sorted(self.catalog))}"
                )
            if not (isinstance(g.nodes, int) and g.nodes >= 1):
                raise ClusterSpecError(f"{where}: node count must be an integer >= 1")
            if not (isinstance(g.gpus_per_node, int) and 1 <= g.gpus_per_node <= 64):
                raise ClusterSpecError(f"{where}: GPUs per node must be an integer from 1 to 64")
        if self.n_nodes > MAX_NODES or self.n_gpus > MAX_GPUS:
            raise ClusterSpecError(
                f"the cluster has {self.n_nodes:,} nodes and {self.n_gpus:,} GPUs; the limit is "
                f"{MAX_NODES:,} nodes and {MAX_GPUS:,} GPUs"
            )
        if not (isinstance(self.nodes_per_rack, int) and self.nodes_per_rack >= 1):
            raise ClusterSpecError("nodes_per_rack must be an integer >= 1")
        _within(self.nodes_per_rack, "nodes_per_rack", 1, MAX_NODES)
        for key in ("cross_node", "cross_rack"):
            v = self.bandwidth.get(key)
            if v is None or not (math.isfinite(v) and v >= 0):
                raise ClusterSpecError(f"bandwidth.{key} must be a number >= 0, got {v!r}")
            _within(v, f"bandwidth.{key}", 0.0, MAX_BANDWIDTH_PENALTY)
        for t, v in self.communication.items():
            if not (math.isfinite(v) and v >= 0):
                raise ClusterSpecError(f"communication.{t} must be a number >= 0, got {v!r}")
            _within(v, f"communication.{t}", 0.0, MAX_COMM_SENSITIVITY)
        for gname, table in self.speeds.items():
            if gname not in self.catalog:
                raise ClusterSpecError(f"speeds: unknown GPU type {gname!r}")
            for t, v in table.items():
                if not (math.isfinite(v) and v > 0):
                    raise ClusterSpecError(f"speeds.{gname}.{t} must be a number > 0, got {v!r}")
                _within(v, f"speeds.{gname}.{t}", MIN_SPEED, MAX_SPEED)
        if not (math.isfinite(self.colocation_slowdown) and self.colocation_slowdown >= 0):
            raise ClusterSpecError("colocation_slowdown must be a number >= 0")
        _within(self.colocation_slowdown, "colocation_slowdown", 0.0, MAX_COLOCATION_SLOWDOWN)

    # ----------------------------------------------------------------- derived
    @cached_property
    def layout(self) -> Layout:
        type_names: list[str] = []
        for g in self.groups:
            if g.gpu_type not in type_names:
                type_names.append(g.gpu_type)
        node_type, node_rack, node_gpus = [], [], []
        rack_names: list[str] = []
        auto_in_rack = self.nodes_per_rack  # forces a new auto rack for the first auto node
        for g in self.groups:
            for _ in range(g.nodes):
                if g.rack is not None:
                    if g.rack not in rack_names:
                        rack_names.append(g.rack)
                    rack = rack_names.index(g.rack)
                else:
                    if auto_in_rack >= self.nodes_per_rack:
                        rack_names.append(f"rack{len(rack_names)}")
                        auto_in_rack = 0
                        auto_rack = len(rack_names) - 1
                    rack = auto_rack
                    auto_in_rack += 1
                node_type.append(type_names.index(g.gpu_type))
                node_rack.append(rack)
                node_gpus.append(g.gpus_per_node)
        node_gpus_a = np.array(node_gpus, dtype=np.int64)
        first = np.concatenate([[0], np.cumsum(node_gpus_a)[:-1]]).astype(np.int64)
        gpu_node = np.repeat(np.arange(len(node_gpus), dtype=np.int64), node_gpus_a)
        node_type_a = np.array(node_type, dtype=np.int64)
        return Layout(
            type_names=tuple(type_names),
            type_vram_gib=np.array([self.catalog[t].vram_gib for t in type_names], dtype=float),
            type_speed=np.array([self.catalog[t].speed for t in type_names], dtype=float),
            node_type=node_type_a,
            node_rack=np.array(node_rack, dtype=np.int64),
            node_gpus=node_gpus_a,
            node_first_gpu=first,
            gpu_node=gpu_node,
            gpu_type=node_type_a[gpu_node],
            rack_names=tuple(rack_names),
        )

    @property
    def n_gpus(self) -> int:
        return sum(g.nodes * g.gpus_per_node for g in self.groups)

    @property
    def n_nodes(self) -> int:
        return sum(g.nodes for g in self.groups)

    @property
    def vram_gib(self) -> float:
        """GPU memory of the whole cluster, GiB."""
        return float(sum(self.catalog[t].vram_gib * n for t, n in self.gpus_by_type().items()))

    def gpus_by_type(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for g in self.groups:
            out[g.gpu_type] = out.get(g.gpu_type, 0) + g.nodes * g.gpus_per_node
        return out

    def speed(self, job_type: str, gpu_type: str) -> float:
        """Reference-work seconds done per second by one job of ``job_type`` on ``gpu_type``."""
        table = self.speeds.get(gpu_type)
        if table is not None and job_type in table:
            return float(table[job_type])
        exponent = SPEEDUP_EXPONENT.get(job_type, SPEEDUP_EXPONENT["batch"])
        return float(self.catalog[gpu_type].speed ** exponent)

    def comm_factor(self, job_type: str, n_nodes: int, n_racks: int) -> float:
        """Speed multiplier (<= 1) for a job spread over ``n_nodes`` nodes in ``n_racks`` racks."""
        if n_nodes <= 1:
            return 1.0
        penalty = self.bandwidth["cross_rack"] if n_racks > 1 else self.bandwidth["cross_node"]
        s = self.communication.get(job_type, self.communication.get("batch", COMM_SENSITIVITY["batch"]))
        return 1.0 / (1.0 + s * penalty)

    def to_shorthand(self) -> str:
        return ",".join(f"{g.nodes}x{g.gpus_per_node}:{g.gpu_type}" for g in self.groups)

    def to_spec(self) -> str:
        """The shortest text :func:`parse_cluster_text` reads back to an equal cluster: the shorthand when no group
        names a rack and everything but the groups is the default, else the compact JSON of :meth:`to_dict`."""
        data = self.to_dict()
        default = Cluster(groups=self.groups).to_dict()
        if all(g.rack is None for g in self.groups) and all(data[k] == default[k] for k in data if k != "groups"):
            return self.to_shorthand()
        return json.dumps(data, separators=(",", ":"))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description that :func:`parse_cluster` reads back to an equal cluster."""
        extra = [t.to_dict() for t in self.catalog.values() if DEFAULT_CATALOG.get(t.name) != t]
        return {
            "groups": [
                {
                    k: v
                    for k, v in (
                        ("gpu_type", g.gpu_type),
                        ("nodes", g.nodes),
                        ("gpus_per_node", g.gpus_per_node),
                        ("rack", g.rack),
                    )
                    if v is not None
                }
                for g in self.groups
            ],
            "gpu_types": extra,
            "nodes_per_rack": self.nodes_per_rack,
            "bandwidth": dict(self.bandwidth),
            "communication": dict(self.communication),
            "speeds": {k: dict(v) for k, v in self.speeds.items()},
            "colocation_slowdown": self.colocation_slowdown,
        }


def gpu_prices(cluster: Cluster, price_list: str = CATALOG_PRICES) -> dict[str, float]:
    """USD per GPU-hour of each GPU type ``cluster`` has, from the named list (:data:`PRICE_LISTS`) or, for
    ``"catalog"``, from each type's ``price_per_h``. ``ClusterSpecError`` names the list or type with no price."""
    types = cluster.layout.type_names
    if price_list == CATALOG_PRICES:
        prices = {t: cluster.catalog[t].price_per_h for t in types}
        where = "the cluster's GPU types"
    elif price_list in PRICE_LISTS:
        prices = {t: PRICE_LISTS[price_list].prices.get(t) for t in types}
        where = f"price list {price_list!r} (it prices {', '.join(PRICE_LISTS[price_list].prices)})"
    else:
        raise ClusterSpecError(
            f"unknown price list {quote(price_list)}; known: {', '.join([CATALOG_PRICES, *PRICE_LISTS])}"
        )
    missing = [t for t, v in prices.items() if v is None]
    if missing:
        raise ClusterSpecError(f"{where}: no price_per_h for {', '.join(missing)}")
    return {t: float(v) for t, v in prices.items() if v is not None}


_SHORTHAND_PART = re.compile(r"^\s*(\d+)\s*[xX*]\s*(\d+)\s*:\s*([A-Za-z0-9._\-]+)\s*$")


def parse_shorthand(spec: str, catalog: Mapping[str, GpuType] | None = None) -> Cluster:
    """Parse ``"4x8:A100-80,2x4:V100-32"`` (nodes x GPUs-per-node : type, comma-separated)."""
    catalog = dict(catalog or DEFAULT_CATALOG)
    groups = []
    parts = spec.split(",")
    for i, part in enumerate(parts):
        m = _SHORTHAND_PART.match(part)
        if not m:
            raise ClusterSpecError(
                f"cluster spec part {i + 1} {quote(part.strip())}: expected NODESxGPUS:TYPE, e.g. 4x8:A100-80"
            )
        if len(m.group(1)) > 9 or len(m.group(2)) > 9:
            raise ClusterSpecError(
                f"cluster spec part {i + 1}: counts of at most {MAX_NODES:,} nodes and 64 GPUs per node are allowed"
            )
        nodes, gpn, gtype = int(m.group(1)), int(m.group(2)), m.group(3)
        if gtype not in catalog:
            lower = {k.lower(): k for k in catalog}
            if gtype.lower() in lower:
                gtype = lower[gtype.lower()]
            else:
                raise ClusterSpecError(
                    f"cluster spec part {i + 1} {quote(part.strip())}: unknown GPU type {gtype!r}; "
                    f"known: {', '.join(catalog)}"
                )
        if nodes < 1 or gpn < 1:
            raise ClusterSpecError(f"cluster spec part {i + 1} {quote(part.strip())}: counts must be >= 1")
        groups.append(NodeGroup(gtype, nodes, gpn))
    return Cluster(groups=tuple(groups), catalog=catalog)


def cluster_from_dict(data: Mapping[str, Any], where: str = "cluster JSON") -> Cluster:
    """Build a cluster from the JSON structure described in the module docstring."""
    if not isinstance(data, Mapping):
        raise ClusterSpecError(f"{where}: expected an object with a 'groups' list")
    known = {
        "groups",
        "gpu_types",
        "nodes_per_rack",
        "bandwidth",
        "communication",
        "speeds",
        "colocation_slowdown",
        "name",
        "description",
    }
    reject_unknown_keys(data, known, where, ClusterSpecError)
    catalog = dict(DEFAULT_CATALOG)
    for i, t in enumerate(data.get("gpu_types", []) or []):
        try:
            name = str(t["name"])
            vram_gib, speed = float(t["vram_gib"]), float(t["speed"])
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise ClusterSpecError(
                f"{where}: gpu_types[{i}] needs name, vram_gib and speed ({clip(str(exc))})"
            ) from None
        reject_unknown_keys(
            t, {"name", "vram_gib", "speed", *POWER_PRICE_FIELDS}, f"{where}: gpu_types[{i}]", ClusterSpecError
        )
        try:
            gt = GpuType(name, vram_gib, speed, **{k: t[k] for k in POWER_PRICE_FIELDS if t.get(k) is not None})
        except ClusterSpecError as exc:
            raise ClusterSpecError(f"{where}: gpu_types[{i}]: {exc}") from None
        catalog[gt.name] = gt
    groups = []
    raw_groups = data.get("groups")
    if not isinstance(raw_groups, list) or not raw_groups:
        raise ClusterSpecError(f"{where}: 'groups' must be a non-empty list")
    for i, g in enumerate(raw_groups):
        try:
            groups.append(
                NodeGroup(
                    str(g["gpu_type"]),
                    int(g["nodes"]),
                    int(g["gpus_per_node"]),
                    None if g.get("rack") is None else str(g["rack"]),
                )
            )
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise ClusterSpecError(
                f"{where}: groups[{i}] needs gpu_type, nodes and gpus_per_node (missing or bad: {clip(str(exc))})"
            ) from None
    kwargs: dict[str, Any] = {}
    if "nodes_per_rack" in data:
        kwargs["nodes_per_rack"] = data["nodes_per_rack"]
    if "bandwidth" in data:
        kwargs["bandwidth"] = {**DEFAULT_BANDWIDTH, **_numbers(data["bandwidth"], "bandwidth", where)}
    if "communication" in data:
        kwargs["communication"] = {**COMM_SENSITIVITY, **_numbers(data["communication"], "communication", where)}
    if "speeds" in data:
        if not isinstance(data["speeds"], Mapping):
            raise ClusterSpecError(f"{where}: 'speeds' must map GPU type -> {{job type: speed}}")
        kwargs["speeds"] = {k: _numbers(v, f"speeds.{k}", where) for k, v in data["speeds"].items()}
    if "colocation_slowdown" in data:
        kwargs["colocation_slowdown"] = _number(data["colocation_slowdown"], "colocation_slowdown", where)
    return Cluster(groups=tuple(groups), catalog=catalog, **kwargs)


def _numbers(value: Any, key: str, where: str) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise ClusterSpecError(f"{where}: {key!r} must be an object of numbers")
    return {str(k): _number(v, f"{key}.{k}", where) for k, v in value.items()}


def _number(value: Any, key: str, where: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        raise ClusterSpecError(f"{where}: {clip(str(key))} must be a number, got {quote(value)}") from None


#: Extra ``PREFIX:ARGUMENT`` cluster sources; each takes the argument and returns a Cluster. Modules that add a
#: source register it here (:mod:`engine.traces.openb` adds ``openb:PATH``, a real node list), so the cluster
#: model knows no trace format.
CLUSTER_SOURCES: dict[str, Callable[[str], Cluster]] = {}


def parse_cluster_text(spec: str) -> Cluster:
    """A cluster from text that names no file: shorthand (``"4x8:A100-80"``) or inline JSON (``{"groups": ...}``).

    What a link or an uploaded scenario may carry: it never reads a file or a registered source, and the text
    (at most :data:`MAX_SPEC_CHARS` characters, JSON nested at most :data:`MAX_JSON_DEPTH` deep) and the cluster
    (:data:`MAX_NODES`, :data:`MAX_GPUS`) are bounded. ``ClusterSpecError`` says what is wrong in one line.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ClusterSpecError("empty cluster spec; expected e.g. 4x8:A100-80,2x4:V100-32 or inline JSON")
    if len(spec) > MAX_SPEC_CHARS:
        raise ClusterSpecError(f"the cluster spec has {len(spec):,} characters; the limit is {MAX_SPEC_CHARS:,}")
    text = spec.strip()
    if text.startswith("{"):
        return cluster_from_dict(loads_bounded(text, "cluster JSON", MAX_JSON_DEPTH), where="cluster JSON")
    return parse_shorthand(text)


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def loads_bounded(text: str | bytes, what: str, max_depth: int) -> Any:
    """``json.loads`` of text whose arrays and objects nest at most ``max_depth`` deep (checked first, so deep
    nesting is refused in one line instead of exhausting the parser's recursion). ``ClusterSpecError`` (a
    ``ValueError``) names ``what`` on any problem."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ClusterSpecError(f"{what}: not UTF-8 text") from None
    depth = 0
    # Brackets inside strings do not nest: drop the strings (escapes included) before counting.
    for bracket in _JSON_STRING.sub("", text):
        if bracket in "[{":
            depth += 1
            if depth > max_depth:
                raise ClusterSpecError(f"{what}: nested more than {max_depth} levels deep; the limit is {max_depth}")
        elif bracket in "]}":
            depth -= 1
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ClusterSpecError(f"{what}: not valid JSON ({clip(str(exc), 120)})") from None


def parse_cluster(spec: str | Mapping[str, Any] | Cluster) -> Cluster:
    """Turn any cluster description into a :class:`Cluster`.

    Accepts a Cluster, a dict (JSON structure), inline JSON, a path to a ``.json`` file, ``PREFIX:ARG`` for a
    registered source in :data:`CLUSTER_SOURCES`, or shorthand such as ``"4x8:A100-80,2x4:V100-32"``. This is
    for trusted callers (the command line, code): text from a link or an upload goes to :func:`parse_cluster_text`.
    """
    if isinstance(spec, Cluster):
        return spec
    if isinstance(spec, Mapping):
        return cluster_from_dict(spec)
    spec = str(spec).strip()
    if not spec:
        raise ClusterSpecError("empty cluster spec; expected e.g. 4x8:A100-80,2x4:V100-32 or a .json file")
    if spec.startswith("{"):
        return parse_cluster_text(spec)
    prefix, sep, rest = spec.partition(":")
    if sep and prefix in CLUSTER_SOURCES:
        return CLUSTER_SOURCES[prefix](rest)
    if spec.endswith(".json") or (("/" in spec or "\\" in spec) and Path(spec).exists()):
        path = Path(spec)
        try:
            with open(path, "rb") as f:
                text = f.read(MAX_SPEC_CHARS + 1)
        except FileNotFoundError:
            raise ClusterSpecError(f"cluster file {spec} does not exist") from None
        except OSError as exc:
            raise ClusterSpecError(f"cluster file {spec}: cannot read it ({exc.strerror or exc})") from None
        if len(text) > MAX_SPEC_CHARS:
            raise ClusterSpecError(f"cluster file {spec}: larger than the limit of {MAX_SPEC_CHARS:,} bytes")
        data = loads_bounded(text, f"cluster file {spec}", MAX_JSON_DEPTH)
        return cluster_from_dict(data, where=f"cluster file {spec}")
    return parse_shorthand(spec)
