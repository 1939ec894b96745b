"""A scenario: the cluster, the workload and the schedulers to compare, as one frozen record.

A :class:`Scenario` is what the playground shows in its sidebar, what a downloaded scenario JSON holds and
what a shared link carries in its query parameters. It round-trips exactly through :meth:`Scenario.to_json`
/ :meth:`Scenario.from_json` and :meth:`Scenario.to_query` / :meth:`Scenario.from_query`.

An uploaded trace is not stored in the scenario, only referenced by the SHA-256 of its bytes
(``WorkloadSpec.trace_sha256``); whoever rebuilds the jobs (:meth:`Scenario.build_jobs`) supplies the bytes.

A scenario is data from whoever made the link or the file, so it is untrusted: its cluster is shorthand or
inline JSON (never a file or a ``PREFIX:`` source such as ``openb:PATH``), every number is bounded (the limits
below, which the app's widgets share), every name is checked against what exists, and every message is one
line that quotes at most a short piece of what was given and names no server path.

This module imports neither streamlit nor torch.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from engine.errors import EngineError, TraceError, quote, reject_unknown_keys
from engine.sim.cluster import Cluster, loads_bounded, parse_cluster, parse_cluster_text
from engine.sim.job import Job
from engine.traces import TRACE_FORMATS
from engine.traces.generator import ARRIVALS, DEFAULT_TYPES
from engine.traces.mapped import ALIASES as MAPPED_ALIASES
from engine.traces.mapped import KEYS as MAPPED_KEYS

#: Workload sources a scenario knows.
WORKLOAD_SOURCES = ("generate", "trace", "preset")

# Limits of what a scenario may ask for (the app's widgets use the same bounds).
MAX_JOBS = 100_000  # generated jobs
MAX_USERS = 1_000
MAX_LOAD = 4.0
MAX_MIX_WEIGHT = 10.0
MAX_SEED = 2**31 - 1
MAX_FIRST = 10_000_000
MAX_NODES = 10_000  # a scenario's cluster (the engine's own limits are larger: engine.sim.cluster.MAX_NODES)
MAX_GPUS = 65_536
MAX_SCHEDULERS = 16
MAX_NAME_CHARS = 200  # names and labels
MAX_CLUSTER_CHARS = 64 * 1024  # cluster shorthand or inline JSON (the openb cluster is about 19 KiB)
MAX_SCENARIO_BYTES = 256 * 1024  # a scenario JSON file
MAX_JSON_DEPTH = 6
#: Scheduler names: registry names (``sjf+best-fit``) and ``PREFIX:NAME`` plug-ins without path characters.
SCHEDULER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*(:[A-Za-z0-9][A-Za-z0-9_-]*)?")
TIME_UNITS = ("", "s", "ms")


class ScenarioError(EngineError, ValueError):
    """A scenario (JSON or query parameters) is invalid; the message names the field and what was expected."""


@dataclass(frozen=True)
class WorkloadSpec:
    """Where the jobs come from.

    Attributes:
        source: ``"generate"`` (the synthetic generator), ``"trace"`` (an uploaded or shipped trace file) or
            ``"preset"`` (the workload of a scenario preset in ``presets/``, generated with ``seed``).
        n_jobs, load, seed, arrival, users: generator arguments (jobs, offered load in (0, 4], seed, arrival
            pattern, number of users).
        mix: job type -> weight for the generator; empty means the generator's default mix.
        trace_sha256: SHA-256 (hex) of the trace file's bytes; the bytes themselves travel separately.
        trace_name: the file's name (its extension helps format detection).
        trace_format: format name, or ``""`` to auto-detect.
        time_unit: ``"s"``, ``"ms"``, ... or ``""`` for the format's default.
        column_map: canonical column -> column in the file, for the ``mapped`` format.
        first: keep only the first N jobs of the trace (0 = all).
        skip_bad: skip malformed rows (the trace report counts them) instead of refusing the file.
        preset: the preset's name, for ``source="preset"``.
    """

    source: str = "generate"
    n_jobs: int = 300
    load: float = 0.9
    seed: int = 0
    arrival: str = "poisson"
    users: int = 6
    mix: tuple[tuple[str, float], ...] = ()
    trace_sha256: str = ""
    trace_name: str = ""
    trace_format: str = ""
    time_unit: str = ""
    column_map: tuple[tuple[str, str], ...] = ()
    first: int = 0
    skip_bad: bool = False
    preset: str = ""

    def __post_init__(self) -> None:
        # Pairs are kept sorted so that equal mappings give equal (and equally hashed) specs.
        object.__setattr__(self, "mix", tuple(sorted((str(k), v) for k, v in self.mix)))
        object.__setattr__(self, "column_map", tuple(sorted((str(k), str(v)) for k, v in self.column_map)))
        if self.source not in WORKLOAD_SOURCES:
            raise ScenarioError(f"workload.source {quote(self.source)}: expected one of {', '.join(WORKLOAD_SOURCES)}")
        _check_int(self.n_jobs, "workload.n_jobs", 1, MAX_JOBS)
        _check_int(self.users, "workload.users", 1, MAX_USERS)
        _check_int(self.seed, "workload.seed", 0, MAX_SEED)
        _check_int(self.first, "workload.first", 0, MAX_FIRST)
        if not (isinstance(self.load, (int, float)) and not isinstance(self.load, bool) and 0 < self.load <= MAX_LOAD):
            raise ScenarioError(f"workload.load must be a number in (0, {MAX_LOAD:g}], got {quote(self.load)}")
        if self.arrival not in ARRIVALS:
            raise ScenarioError(f"workload.arrival {quote(self.arrival)}: expected one of {', '.join(ARRIVALS)}")
        if not isinstance(self.skip_bad, bool):
            raise ScenarioError(f"workload.skip_bad must be true or false, got {quote(self.skip_bad)}")
        for name, weight in self.mix:
            if name not in DEFAULT_TYPES:
                raise ScenarioError(f"workload.mix: unknown job type {quote(name)}; known: {', '.join(DEFAULT_TYPES)}")
            if not (isinstance(weight, (int, float)) and 0 <= weight <= MAX_MIX_WEIGHT):
                raise ScenarioError(f"workload.mix[{name!r}] must be a number from 0 to {MAX_MIX_WEIGHT:g}, "
                                    f"got {quote(weight)}")
        if self.mix and not sum(w for _, w in self.mix) > 0:
            raise ScenarioError("workload.mix needs at least one weight above 0")
        if self.trace_format and self.trace_format not in TRACE_FORMATS:
            raise ScenarioError(f"workload.trace_format {quote(self.trace_format)}: expected one of "
                                f"{', '.join(TRACE_FORMATS)} (or empty to auto-detect)")
        if self.time_unit not in TIME_UNITS:
            raise ScenarioError(f"workload.time_unit {quote(self.time_unit)}: expected 's', 'ms' or empty")
        for key, column in self.column_map:
            if key not in MAPPED_KEYS and key not in MAPPED_ALIASES:
                raise ScenarioError(f"workload.column_map: {quote(key)} is not a job field; "
                                    f"valid: {', '.join(MAPPED_KEYS)}")
            _check_text(column, f"workload.column_map[{key!r}]")
        _check_text(self.trace_name, "workload.trace_name")
        if "/" in self.trace_name or "\\" in self.trace_name:
            raise ScenarioError("workload.trace_name must be a file name, not a path")
        if self.source == "preset":
            from engine.analysis.presets import PRESETS

            if self.preset not in PRESETS:
                raise ScenarioError(f"workload.preset {quote(self.preset)}: expected one of {', '.join(PRESETS)}")
        if self.source == "trace" and not re.fullmatch(r"[0-9a-f]{64}", self.trace_sha256):
            raise ScenarioError("workload.trace_sha256 must be the 64-hex-digit SHA-256 of the trace file")


@dataclass(frozen=True)
class Scenario:
    """Cluster + workload + schedulers.

    Attributes:
        cluster: cluster shorthand (``"4x8:A100-80,2x4:V100-32"``) or its JSON text (see ``engine.sim.cluster``).
        workload: where the jobs come from.
        schedulers: scheduler names to compare, in display order.
        seed: the simulation seed handed to every scheduler.
        name: a label (e.g. the preset it came from).
    """

    cluster: str = "2x8:A100-80,4x4:V100-32"
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    schedulers: tuple[str, ...] = ("fifo", "first-fit", "best-fit")
    seed: int = 0
    name: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.cluster, str) or not self.cluster.strip():
            raise ScenarioError("scenario.cluster must be a non-empty cluster spec")
        if len(self.cluster) > MAX_CLUSTER_CHARS:
            raise ScenarioError(f"scenario.cluster has {len(self.cluster):,} characters; "
                                f"the limit is {MAX_CLUSTER_CHARS:,}")
        if not isinstance(self.workload, WorkloadSpec):
            raise ScenarioError("scenario.workload must be a WorkloadSpec")
        _check_int(self.seed, "scenario.seed", 0, MAX_SEED)
        _check_text(self.name, "scenario.name")
        if len(self.schedulers) > MAX_SCHEDULERS:
            raise ScenarioError(f"scenario.schedulers lists {len(self.schedulers)} names; "
                                f"the limit is {MAX_SCHEDULERS}")
        for name in self.schedulers:
            if not (isinstance(name, str) and len(name) <= MAX_NAME_CHARS and SCHEDULER_NAME.fullmatch(name)):
                raise ScenarioError(f"scenario.schedulers: {quote(name)} is not a scheduler name (letters, digits, "
                                    "'_.+-', and at most one ':' before a plug-in's name)")
        if len(set(self.schedulers)) != len(self.schedulers):
            raise ScenarioError(f"scenario.schedulers lists a name twice: {quote(list(self.schedulers))}")

    # ------------------------------------------------------------------ engine objects
    def build_cluster(self) -> Cluster:
        """The :class:`Cluster` this scenario names (``ClusterSpecError`` if it is invalid or larger than
        :data:`MAX_NODES` nodes or :data:`MAX_GPUS` GPUs). Only shorthand and inline JSON: never a file."""
        cluster = parse_cluster_text(self.cluster)
        if cluster.n_nodes > MAX_NODES or cluster.n_gpus > MAX_GPUS:
            raise ScenarioError(f"the cluster has {cluster.n_nodes:,} nodes and {cluster.n_gpus:,} GPUs; "
                                f"the playground's limit is {MAX_NODES:,} nodes and {MAX_GPUS:,} GPUs")
        return cluster

    def build_jobs(self, cluster: Cluster, trace_bytes: bytes | None = None) -> tuple[Job, ...]:
        """The workload's jobs: generated, or loaded from ``trace_bytes`` (which must match the hash)."""
        w = self.workload
        if w.source == "generate":
            from engine.traces.generator import generate

            return tuple(generate(cluster, w.n_jobs, load=w.load, seed=w.seed, mix=dict(w.mix) or None,
                                  users=w.users, arrival=w.arrival))
        if w.source == "preset":
            from engine.analysis.presets import load_preset

            return tuple(load_preset(w.preset).build_jobs(w.seed))
        return self.load_trace(trace_bytes).jobs

    def load_trace(self, trace_bytes: bytes | None):
        """The workload's trace (an ``engine.traces.Trace``: jobs and report) from the file's bytes, which must
        match ``workload.trace_sha256``; ``None`` means the bytes are not at hand."""
        w = self.workload
        if w.source != "trace":
            raise ScenarioError(f"the workload comes from {w.source!r}, not from a trace")
        if trace_bytes is None:
            raise ScenarioError(f"the trace {w.trace_name or w.trace_sha256[:12]} is not available: upload it again")
        if content_hash(trace_bytes) != w.trace_sha256:
            raise ScenarioError("the trace file's bytes do not match the scenario's trace_sha256")
        return load_trace_bytes(trace_bytes, w)

    # ------------------------------------------------------------------ identity
    def workload_key(self) -> str:
        """Canonical JSON of everything that determines the jobs and the cluster (not the schedulers):
        two scenarios with equal keys simulate the same jobs on the same cluster."""
        d = self.to_dict()
        d.pop("schedulers")
        d.pop("name")
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    def with_schedulers(self, names) -> Scenario:
        return replace(self, schedulers=tuple(names))

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["schedulers"] = list(self.schedulers)
        d["workload"]["mix"] = {k: v for k, v in self.workload.mix}
        d["workload"]["column_map"] = {k: v for k, v in self.workload.column_map}
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scenario:
        if not isinstance(data, Mapping):
            raise ScenarioError("a scenario must be a JSON object with cluster, workload and schedulers")
        _check_keys(data, {f.name for f in fields(cls)}, "scenario")
        wl = data.get("workload", {})
        if not isinstance(wl, Mapping):
            raise ScenarioError("scenario.workload must be an object")
        _check_keys(wl, {f.name for f in fields(WorkloadSpec)}, "scenario.workload")
        wl = dict(wl)
        for key in ("mix", "column_map"):
            if key in wl:
                if not isinstance(wl[key], Mapping):
                    raise ScenarioError(f"scenario.workload.{key} must be an object")
                wl[key] = tuple((str(k), v) for k, v in wl[key].items())
        for key, kind in (("n_jobs", int), ("seed", int), ("users", int), ("first", int), ("load", float)):
            if key in wl:
                wl[key] = _coerce(wl[key], kind, f"scenario.workload.{key}")
        scheds = data.get("schedulers", cls.schedulers)
        if not isinstance(scheds, (list, tuple)) or not all(isinstance(s, str) for s in scheds):
            raise ScenarioError("scenario.schedulers must be a list of scheduler names")
        kwargs = {k: data[k] for k in ("cluster", "name") if k in data}
        if "seed" in data:
            kwargs["seed"] = _coerce(data["seed"], int, "scenario.seed")
        sc = cls(workload=WorkloadSpec(**wl), schedulers=tuple(scheds), **kwargs)
        sc.build_cluster()  # a scenario from outside is checked whole, its cluster included (cheap: no layout)
        return sc

    @classmethod
    def from_json(cls, text: str | bytes) -> Scenario:
        """A scenario from its JSON (at most :data:`MAX_SCENARIO_BYTES`, nested at most :data:`MAX_JSON_DEPTH`)."""
        if len(text) > MAX_SCENARIO_BYTES:
            raise ScenarioError(f"the scenario JSON has {len(text):,} bytes; the limit is {MAX_SCENARIO_BYTES:,}")
        try:
            data = loads_bounded(text, "scenario JSON", MAX_JSON_DEPTH)
        except ValueError as exc:
            raise ScenarioError(str(exc)) from None
        return cls.from_dict(data)

    # ------------------------------------------------------------------ URL query parameters
    def to_query(self) -> dict[str, str]:
        """Flat string parameters for a shareable link; fields equal to their defaults are left out."""
        out = {"cluster": self.cluster, "sched": ",".join(self.schedulers)}
        if self.seed:
            out["seed"] = str(self.seed)
        if self.name:
            out["name"] = self.name
        default = WorkloadSpec()
        for f in fields(WorkloadSpec):
            value = getattr(self.workload, f.name)
            if value == getattr(default, f.name):
                continue
            if f.name in ("mix", "column_map"):
                value = ",".join(f"{k}:{v}" for k, v in value)
            out[f"w.{f.name}"] = str(value)
        return out

    @classmethod
    def from_query(cls, params: Mapping[str, Any]) -> Scenario:
        """Inverse of :meth:`to_query`; unknown parameters are ignored (links may carry others)."""
        if "cluster" not in params:
            raise ScenarioError("the link has no 'cluster' parameter")
        for key, value in params.items():
            limit = MAX_CLUSTER_CHARS if key == "cluster" else MAX_NAME_CHARS * 8
            if len(_one(value)) > limit:
                raise ScenarioError(f"link parameter {quote(key)} has {len(_one(value)):,} characters; "
                                    f"the limit is {limit:,}")
        data: dict[str, Any] = {"cluster": _one(params["cluster"])}
        if "sched" in params:
            data["schedulers"] = [s for s in _one(params["sched"]).split(",") if s]
        if "seed" in params:
            data["seed"] = _one(params["seed"])
        if "name" in params:
            data["name"] = _one(params["name"])
        wl: dict[str, Any] = {}
        for f in fields(WorkloadSpec):
            key = f"w.{f.name}"
            if key not in params:
                continue
            text = _one(params[key])
            if f.name in ("mix", "column_map"):
                pairs = {}
                for part in filter(None, text.split(",")):
                    k, sep, v = part.partition(":")
                    if not sep:
                        raise ScenarioError(f"link parameter {key}: expected NAME:VALUE pairs, got {quote(part)}")
                    pairs[k] = _coerce(v, float, key) if f.name == "mix" else v
                wl[f.name] = pairs
            elif f.name == "skip_bad":
                wl[f.name] = text == "True"
            else:
                wl[f.name] = text
        data["workload"] = wl
        return cls.from_dict(data)


def scenario_from_preset(name: str) -> Scenario:
    """The scenario of preset ``name`` (see :mod:`engine.analysis.presets`): its cluster, its workload, its schedulers."""
    from engine.analysis.presets import load_preset

    preset = load_preset(name)
    cluster = preset.cluster if isinstance(preset.cluster, str) else json.dumps(preset.cluster, separators=(",", ":"))
    return Scenario(cluster=cluster, workload=WorkloadSpec(source="preset", preset=name, seed=preset.seed),
                    schedulers=tuple(preset.schedulers), seed=preset.seed, name=name)


def content_hash(data: bytes) -> str:
    """SHA-256 of a file's bytes, hex: how a scenario references an uploaded trace."""
    return hashlib.sha256(data).hexdigest()


def load_trace_bytes(data: bytes, workload: WorkloadSpec):
    """Load a trace held in memory with the workload's format options; returns an ``engine.traces.Trace``.

    The loaders read files (and detect formats partly by file extension), so the bytes go through a
    temporary file named like the original; errors name the original file, never the temporary one.
    """
    from engine.traces import load_trace

    suffix = "".join(re.sub(r"[^A-Za-z0-9.]", "", s) for s in Path(workload.trace_name).suffixes[-2:]) or ".csv"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"trace{suffix}"
        path.write_bytes(data)
        try:
            return load_trace(path, workload.trace_format or None, skip_bad=workload.skip_bad,
                              time_unit=workload.time_unit or None,
                              column_map=dict(workload.column_map) or None, first=workload.first or None)
        except TraceError as exc:
            raise TraceError(exc.reason.replace(str(path), workload.trace_name or "the trace"),
                             path=workload.trace_name or "the trace", line=exc.line, column=exc.column) from None


def _check_keys(data: Mapping[str, Any], known: set[str], where: str) -> None:
    reject_unknown_keys(data, known, where, ScenarioError)


def _coerce(value: Any, kind: type, where: str):
    expected = "an integer" if kind is int else "a number"
    if isinstance(value, str) and len(value) > 40:
        raise ScenarioError(f"{where} must be {expected} of at most 40 characters, got {len(value):,} characters")
    try:
        out = kind(value)
    except (TypeError, ValueError, OverflowError):
        raise ScenarioError(f"{where} must be {expected}, got {quote(value)}") from None
    if kind is int and isinstance(value, float) and value != out:
        raise ScenarioError(f"{where} must be an integer, got {quote(value)}")
    return out


def _check_int(value: Any, where: str, low: int, high: int) -> None:
    if not (isinstance(value, int) and not isinstance(value, bool) and low <= value <= high):
        raise ScenarioError(f"{where} must be an integer from {low:,} to {high:,}, got {quote(value)}")


def _check_text(value: Any, where: str) -> None:
    """A name or label: a string of at most :data:`MAX_NAME_CHARS` printable characters."""
    if not isinstance(value, str):
        raise ScenarioError(f"{where} must be text, got {quote(value)}")
    if len(value) > MAX_NAME_CHARS:
        raise ScenarioError(f"{where} has {len(value):,} characters; the limit is {MAX_NAME_CHARS}")
    if not value.isprintable():
        raise ScenarioError(f"{where} holds control characters (line breaks, tabs, ...), got {quote(value)}")


def _one(value: Any) -> str:
    """Query parameters may arrive as a string or a list of strings; take the last one."""
    if isinstance(value, (list, tuple)):
        return str(value[-1]) if value else ""
    return str(value)


def worked_example() -> tuple[Cluster, tuple[Job, ...]]:
    """A tiny scenario for teaching: 2 nodes x 4 V100 GPUs and 10 jobs from 2 users, small enough to follow.

    Chosen (from seeded random candidates) because it separates the schedulers: FIFO blocks behind 6-GPU
    jobs, EASY backfilling shortens the makespan, SJF cuts the mean wait, DRF trades wait for balance between
    the users, and the placement rules differ once the half-GPU inference jobs share GPUs.
    """
    cluster = parse_cluster("2x4:V100-32")
    specs = [  # submit_s, duration_s, gpus, gpu_fraction, user, job_type
        (0, 2400, 1, 0.5, "alice", "inference"),
        (0, 3600, 2, 1.0, "bob", "training"),
        (0, 1800, 1, 1.0, "alice", "batch"),
        (60, 1200, 1, 1.0, "alice", "batch"),
        (60, 3600, 6, 1.0, "bob", "training"),
        (90, 600, 4, 1.0, "bob", "training"),
        (210, 300, 6, 1.0, "bob", "training"),
        (270, 300, 6, 1.0, "alice", "training"),
        (300, 2400, 1, 0.5, "bob", "inference"),
        (330, 300, 4, 1.0, "bob", "training"),
    ]
    jobs = tuple(Job(i, float(s), float(d), gpus=g, gpu_fraction=f, user=u, job_type=t)
                 for i, (s, d, g, f, u, t) in enumerate(specs))
    return cluster, jobs
