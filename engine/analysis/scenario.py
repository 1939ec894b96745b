"""A scenario: the cluster, the workload, the run options and the schedulers to compare, as one frozen record.

A :class:`Scenario` is what the playground shows in its sidebar, what a downloaded scenario JSON holds, what a
shared link carries in its query parameters, what ``python -m engine simulate --scenario FILE`` runs, and what
the other front ends build on: an evaluation's named scenarios (:mod:`engine.analysis.evaluate`) are scenarios
plus a seed policy, a teaching preset (:mod:`engine.analysis.presets`) is a scenario plus a lesson, a sweep
(:mod:`engine.analysis.sweep`) is a grid over a scenario's fields, and the RL environment draws its episodes'
workloads from a :class:`WorkloadSpec`. A scenario round-trips exactly through :meth:`Scenario.to_json` /
:meth:`Scenario.from_json` and :meth:`Scenario.to_query` / :meth:`Scenario.from_query`.

**Workload sources** (:class:`WorkloadSpec`): ``generate`` (the synthetic generator, every argument of
:func:`engine.traces.generator.generate`), ``trace`` (a trace file with its loader options, its cuts, its load
scale or seeded blocks) and ``preset`` (the workload of a teaching preset in ``presets/``, with its seed).
:meth:`WorkloadSpec.build_jobs` is the one place jobs are built from a description.

**Trust.** A scenario from a link or a file is untrusted: :meth:`Scenario.from_dict` (and so ``from_json`` and
``from_query``) refuses a trace *path*; an uploaded trace is referenced only by the SHA-256 of its bytes
(``WorkloadSpec.trace_sha256``) and whoever rebuilds the jobs supplies the bytes. Only records the repository
ships (presets, named scenarios, cards) or the command line reads (``trusted=True``) may name a trace file
(``trace_path``, relative paths tried from the working directory, then from the repository). Its cluster is
shorthand or inline JSON (never a file), every number is bounded (:data:`INT_BOUNDS`, :data:`NUMBER_BOUNDS`,
which the app's widgets share), every name is checked against what exists, and every message is one line that
names the key (``scenario.workload.load must be a number in (0, 4], got 'x'``), quotes at most a short piece of
what was given and names no server path.

This module imports neither streamlit nor torch.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import re
import tempfile
from dataclasses import dataclass, field, fields, replace
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from engine.errors import EngineError, TraceError, check_int, quote, reject_unknown_keys
from engine.sim.cluster import Cluster, loads_bounded, parse_cluster, parse_cluster_text
from engine.sim.job import MAX_TIME_S, Job
from engine.sim.options import RunOptions
from engine.sim.scaling import SCALING_CURVES
from engine.traces import TRACE_FORMATS
from engine.traces.deadlines import DEADLINE_LAWS, NO_DEADLINES, with_deadlines
from engine.traces.generator import ARRIVALS, generate, job_types
from engine.traces.load import demand_arrays, offered_load_of
from engine.traces.mapped import ALIASES as MAPPED_ALIASES
from engine.traces.mapped import KEYS as MAPPED_KEYS
from engine.traces.options import TIME_UNITS as TRACE_TIME_UNITS
from engine.traces.options import load_options

#: The repository: relative trace paths of trusted records are tried from here, and the presets live here.
REPO_ROOT = Path(__file__).resolve().parents[2]
#: The folder of the teaching presets' JSON files (:mod:`engine.analysis.presets`).
PRESET_DIR = REPO_ROOT / "presets"

#: Workload sources a scenario knows.
WORKLOAD_SOURCES = ("generate", "trace", "preset")

# Limits of what a scenario may ask for (the app's widgets use the same bounds).
MAX_JOBS = 100_000  # generated jobs, and jobs of a trace block
MAX_USERS = 1_000
MAX_LOAD = 4.0
MAX_LOAD_SCALE = 100.0
MAX_MIX_WEIGHT = 10.0
MAX_SEED = 2**31 - 1
MAX_FIRST = 10_000_000
MAX_NODES = 10_000  # a scenario's cluster (the engine's own limits are larger: engine.sim.cluster.MAX_NODES)
MAX_GPUS = 65_536
MAX_SCHEDULERS = 16
MAX_NAME_CHARS = 200  # names and labels
MAX_PATH_CHARS = 1_000
MAX_CLUSTER_CHARS = 64 * 1024  # cluster shorthand or inline JSON (the openb cluster is about 19 KiB)
MAX_SCENARIO_BYTES = 256 * 1024  # a scenario JSON file
MAX_JSON_DEPTH = 8  # a generated workload's job types nest four deep under the scenario
#: Scheduler names: registry names (``sjf+best-fit``) and ``PREFIX:NAME`` plug-ins without path characters.
SCHEDULER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*(:[A-Za-z0-9][A-Za-z0-9_-]*)?")
#: A trace's time unit: ``""`` (the format's default) or a unit the trace loaders turn into seconds.
TIME_UNITS = ("", *TRACE_TIME_UNITS)

#: Integer fields of a workload: (lowest, highest).
INT_BOUNDS: dict[str, tuple[int, int]] = {
    "n_jobs": (1, MAX_JOBS),
    "seed": (0, MAX_SEED),
    "users": (1, MAX_USERS),
    "first": (0, MAX_FIRST),
    "skip": (0, MAX_FIRST),
    "block": (0, MAX_JOBS),
}
#: Number fields of a workload: (lowest, highest, lowest allowed, highest allowed).
NUMBER_BOUNDS: dict[str, tuple[float, float, bool, bool]] = {
    "load": (0.0, MAX_LOAD, False, True),
    "load_scale": (0.0, MAX_LOAD_SCALE, False, True),
    "user_skew": (0.0, 10.0, True, True),
    "estimate_error": (0.0, 10.0, True, True),
    "overestimate": (0.0, 100.0, False, True),
    "burst_factor": (1.0, 100.0, True, True),
    "burst_share": (0.0, 1.0, True, False),
    "diurnal_amplitude": (0.0, 1.0, True, True),
    "allowed_share": (0.0, 1.0, True, True),
    "best_effort": (0.0, 1.0, True, True),
    "elastic": (0.0, 1.0, True, True),
}
#: Keyword arguments of :func:`~engine.traces.generator.generate` a workload carries besides n_jobs, load, seed.
GENERATOR_OPTIONS = (
    "mix",
    "types",
    "users",
    "user_skew",
    "arrival",
    "estimate_error",
    "overestimate",
    "burst_factor",
    "burst_share",
    "diurnal_amplitude",
    "allowed_share",
    "deadlines",
    "best_effort",
    "elastic",
    "scaling",
)
#: Fields :meth:`WorkloadSpec.to_dict` leaves out at their defaults (added later: older files, links and
#: workload keys stay as they were).
OMITTED_AT_DEFAULT = ("deadlines", "best_effort", "elastic", "scaling")
#: Fields that only a trace workload uses.
TRACE_FIELDS = (
    "trace_sha256",
    "trace_path",
    "trace_name",
    "trace_format",
    "time_unit",
    "column_map",
    "first",
    "skip_bad",
    "window",
    "load_scale",
    "skip",
    "block",
)


class ScenarioError(EngineError, ValueError):
    """A scenario (JSON or query parameters) is invalid; the message names the field and what was expected."""


@dataclass(frozen=True)
class WorkloadSpec:
    """Where the jobs come from.

    Attributes:
        source: ``"generate"`` (the synthetic generator), ``"trace"`` (a trace file) or ``"preset"`` (the
            workload of a teaching preset in ``presets/``, generated with ``seed``).
        n_jobs, load, seed: jobs, offered load in (0, 4] and seed of a generated workload; ``seed`` also picks a
            preset's workload and, with ``block``, a trace's block, and ``load`` is then the block's offered load.
        arrival, users, mix, types, user_skew, estimate_error, overestimate, burst_factor, burst_share,
            diurnal_amplitude, allowed_share: the generator's other arguments (see
            :func:`~engine.traces.generator.generate`; the defaults are its own, but ``users`` is 6: the app's
            default). ``mix`` is job type -> weight, empty for the generator's default mix; ``types`` overrides
            job types (:func:`~engine.traces.generator.job_types`).
        deadlines, best_effort: the deadline law (``none``, or one of
            :data:`~engine.traces.deadlines.DEADLINE_LAWS`) and the share of jobs it leaves without a deadline;
            for a trace, a law other than ``none`` replaces the trace's own deadlines (seeded by ``seed``).
        elastic, scaling: the share of generated jobs made elastic and their scaling curve (``""``: the generator's
            default; :func:`~engine.traces.generator.generate`); generated workloads only.
        trace_sha256: SHA-256 (hex) of an uploaded trace file's bytes; the bytes themselves travel separately.
        trace_path: a trace file the repository ships or the command line names (trusted records only).
        trace_name: the uploaded file's name (its extension helps format detection).
        trace_format: format name, or ``""`` to auto-detect.
        time_unit: ``"s"``, ``"ms"`` or ``""`` for the format's default.
        column_map: canonical column -> column in the file, for the ``mapped`` format.
        first: keep only the first N jobs of the trace (0 = all), after ``window``.
        skip_bad: skip malformed rows (the trace report counts them) instead of refusing the file.
        window: ``(start_s, end_s)``: keep jobs submitted in that span after the first arrival (None = all).
        load_scale: divide the trace's submit times by this (2 = arrivals twice as dense); 1 = as recorded.
        skip: jobs at the start of the (cut) trace that no workload uses.
        block: 0 = the whole trace is the workload; N = seed ``k`` takes jobs ``k*N .. k*N+N-1`` (after
            ``skip``) with their arrivals scaled to offer ``load`` (:func:`trace_block`).
        preset: the preset's name, for ``source="preset"``.
    """

    source: str = "generate"
    n_jobs: int = 300
    load: float = 0.9
    seed: int = 0
    arrival: str = "poisson"
    users: int = 6
    mix: tuple[tuple[str, float], ...] = ()
    types: Mapping[str, Any] = field(default_factory=dict, hash=False)
    user_skew: float = 1.2
    estimate_error: float = 0.4
    overestimate: float = 2.0
    burst_factor: float = 4.0
    burst_share: float = 0.1
    diurnal_amplitude: float = 0.5
    allowed_share: float = 0.0
    deadlines: str = NO_DEADLINES
    best_effort: float = 0.0
    elastic: float = 0.0
    scaling: str = ""
    trace_sha256: str = ""
    trace_path: str = ""
    trace_name: str = ""
    trace_format: str = ""
    time_unit: str = ""
    column_map: tuple[tuple[str, str], ...] = ()
    first: int = 0
    skip_bad: bool = False
    window: tuple[float, float] | None = None
    load_scale: float = 1.0
    skip: int = 0
    block: int = 0
    preset: str = ""

    def __post_init__(self) -> None:
        # Pairs are kept sorted so that equal mappings give equal (and equally hashed) specs.
        object.__setattr__(self, "mix", tuple(sorted((str(k), v) for k, v in dict(self.mix).items())))
        object.__setattr__(
            self, "column_map", tuple(sorted((str(k), str(v)) for k, v in dict(self.column_map).items()))
        )
        for key in NUMBER_BOUNDS:  # 1 and 1.0 are the same load: one type, one JSON text
            if type(getattr(self, key)) is int:
                object.__setattr__(self, key, float(getattr(self, key)))
        if isinstance(self.window, (list, tuple)):  # JSON has no tuples; numbers read as floats
            object.__setattr__(self, "window", tuple(float(v) if type(v) is int else v for v in self.window))
        _check_workload(self, "scenario.workload")

    @classmethod
    def from_generator_args(cls, n_jobs: int, load: float = 0.8, seed: int = 0, **options: Any) -> WorkloadSpec:
        """The workload ``generate(cluster, n_jobs, load, seed, **options)`` draws: what is not in ``options``
        takes the generator's default (so ``users`` is 10 here, not the app's 6)."""
        unknown = set(options) - set(GENERATOR_OPTIONS)
        if unknown:
            raise ScenarioError(
                f"generator arguments: unknown {quote(sorted(unknown))}; valid: {', '.join(GENERATOR_OPTIONS)}"
            )
        args = {**_GENERATOR_DEFAULTS, **options}
        args["mix"] = tuple(dict(args["mix"] or {}).items())
        args["types"] = dict(args["types"] or {})
        return cls(source="generate", n_jobs=n_jobs, load=load, seed=seed, **args)

    def generator_args(self) -> dict[str, Any]:
        """The generator arguments that differ from :func:`~engine.traces.generator.generate`'s defaults (the
        inverse of :meth:`from_generator_args`)."""
        args = {k: getattr(self, k) for k in GENERATOR_OPTIONS}
        args["mix"] = dict(self.mix) or None
        args["types"] = dict(self.types) or None
        return {k: v for k, v in args.items() if v != _GENERATOR_DEFAULTS[k]}

    def with_seed(self, seed: int) -> WorkloadSpec:
        return replace(self, seed=seed)

    # ------------------------------------------------------------------ jobs
    def build_jobs(
        self, cluster: Cluster, seed: int | None = None, trace_bytes: bytes | None = None
    ) -> tuple[Job, ...]:
        """The workload's jobs on ``cluster`` (the same description and seed give the same jobs, bit for bit).

        ``seed`` replaces the workload's own seed. An uploaded trace needs its bytes (``trace_bytes``, which
        must match ``trace_sha256``)."""
        seed = self.seed if seed is None else seed
        if self.source == "generate":
            return tuple(
                generate(
                    cluster,
                    self.n_jobs,
                    self.load,
                    seed,
                    mix=dict(self.mix) or None,
                    types=dict(self.types) or None,
                    users=self.users,
                    user_skew=self.user_skew,
                    arrival=self.arrival,
                    estimate_error=self.estimate_error,
                    overestimate=self.overestimate,
                    burst_factor=self.burst_factor,
                    burst_share=self.burst_share,
                    diurnal_amplitude=self.diurnal_amplitude,
                    allowed_share=self.allowed_share,
                    deadlines=self.deadlines,
                    best_effort=self.best_effort,
                    elastic=self.elastic,
                    scaling=self.scaling,
                )
            )
        if self.source == "preset":
            preset = preset_scenario(self.preset)  # generated for the preset's cluster, as the preset shows it
            return preset.workload.build_jobs(preset.build_cluster(), seed)
        return self.cut_trace(self.load_trace(trace_bytes).jobs, cluster.n_gpus, seed)

    def load_trace(self, trace_bytes: bytes | None = None):
        """The trace file read with the loader options (an ``engine.traces.Trace``: jobs and report), before
        :meth:`cut_trace`. An uploaded trace needs ``trace_bytes`` matching ``trace_sha256``."""
        if self.source != "trace":
            raise ScenarioError(f"the workload comes from {self.source!r}, not from a trace")
        if self.trace_path:
            return _load_trace_file(str(resolve_path(self.trace_path)), json.dumps(self.loader_options()))
        if trace_bytes is None:
            raise ScenarioError(
                f"the trace {self.trace_name or self.trace_sha256[:12]} is not available: upload it again"
            )
        if content_hash(trace_bytes) != self.trace_sha256:
            raise ScenarioError("the trace file's bytes do not match the scenario's trace_sha256")
        return load_trace_bytes(trace_bytes, self)

    def cut_trace(self, jobs: Sequence[Job], n_gpus: int, seed: int | None = None) -> tuple[Job, ...]:
        """A loaded trace's jobs as this workload uses them: after ``skip``, seed's ``block`` scaled to ``load``
        on ``n_gpus`` GPUs, or the whole trace divided by ``load_scale``; with a deadline law, its deadlines
        (drawn with the seed) replace the trace's own."""
        seed = self.seed if seed is None else seed
        jobs = jobs[self.skip :]
        cut = (
            trace_block(jobs, seed, self.block, self.load, n_gpus)
            if self.block
            else scale_submits(jobs, self.load_scale)
        )
        if self.deadlines == NO_DEADLINES:
            return cut
        return with_deadlines(cut, self.deadlines, best_effort=self.best_effort, seed=seed)

    def loader_options(self) -> dict[str, Any]:
        """``load_trace`` keyword arguments (:func:`engine.traces.options.load_options` and the window)."""
        options = load_options(
            format=self.trace_format,
            skip_bad=self.skip_bad,
            time_unit=self.time_unit,
            column_map=self.column_map,
            first=self.first,
        )
        return options if self.window is None else {**options, "window": self.window}

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d.update(
            mix=dict(self.mix),
            column_map=dict(self.column_map),
            types=dict(self.types),
            window=None if self.window is None else list(self.window),
        )
        for key in OMITTED_AT_DEFAULT:
            if d[key] == _DEFAULT_WORKLOAD[key]:
                del d[key]
        return d

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, trusted: bool = False, where: str = "scenario.workload"
    ) -> WorkloadSpec:
        """A workload from its JSON object (missing keys take their defaults). Untrusted data may not name a
        trace file (``trace_path``); one-line errors name the key."""
        if not isinstance(data, Mapping):
            raise ScenarioError(f"{where} must be an object")
        reject_unknown_keys(data, {f.name for f in fields(cls)}, where, ScenarioError)
        if data.get("trace_path") and not trusted:
            raise ScenarioError(
                f"{where}.trace_path: a scenario from a link or a file names a trace by its "
                "trace_sha256 only (upload the file)"
            )
        wl = dict(data)
        for key in ("mix", "column_map", "types"):
            if key in wl:
                if not isinstance(wl[key], Mapping):
                    raise ScenarioError(f"{where}.{key} must be an object")
                wl[key] = dict(wl[key]) if key == "types" else tuple((str(k), v) for k, v in wl[key].items())
        for key in (*INT_BOUNDS, *NUMBER_BOUNDS):  # links carry numbers as text
            wl[key] = _as_number(wl[key], int if key in INT_BOUNDS else float, f"{where}.{key}") if key in wl else None
            if wl[key] is None:
                del wl[key]
        try:
            return cls(**wl)
        except ScenarioError as exc:
            raise ScenarioError(str(exc).replace("scenario.workload", where, 1)) from None


_GENERATOR_DEFAULTS: dict[str, Any] = {k: inspect.signature(generate).parameters[k].default for k in GENERATOR_OPTIONS}
_DEFAULT_WORKLOAD: dict[str, Any] = {f.name: f.default for f in fields(WorkloadSpec)}


def _check_workload(w: WorkloadSpec, where: str) -> None:
    """Every bound of a workload, in one place; the message names the key (``where.key``)."""
    if w.source not in WORKLOAD_SOURCES:
        raise ScenarioError(f"{where}.source {quote(w.source)}: expected one of {', '.join(WORKLOAD_SOURCES)}")
    for key, (least, most) in INT_BOUNDS.items():
        check_int(getattr(w, key), f"{where}.{key}", least, most, ScenarioError)
    for key, (low, high, low_in, high_in) in NUMBER_BOUNDS.items():
        value = getattr(w, key)
        ok = (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and ((low <= value if low_in else low < value) and (value <= high if high_in else value < high))
        )
        if not ok:
            raise ScenarioError(
                f"{where}.{key} must be a number in {'[' if low_in else '('}{low:g}, {high:g}"
                f"{']' if high_in else ')'}, got {quote(value)}"
            )
    if not isinstance(w.deadlines, str) or (w.deadlines != NO_DEADLINES and w.deadlines not in DEADLINE_LAWS):
        raise ScenarioError(
            f"{where}.deadlines {quote(w.deadlines)}: expected one of {', '.join([NO_DEADLINES, *DEADLINE_LAWS])}"
        )
    if not isinstance(w.scaling, str) or (w.scaling and w.scaling not in SCALING_CURVES):
        raise ScenarioError(f"{where}.scaling {quote(w.scaling)}: expected one of {', '.join(SCALING_CURVES)}")
    if (w.elastic or w.scaling) and w.source != "generate":
        raise ScenarioError(f"{where}.elastic and {where}.scaling apply to generated workloads only")
    if w.arrival not in ARRIVALS:
        raise ScenarioError(f"{where}.arrival {quote(w.arrival)}: expected one of {', '.join(ARRIVALS)}")
    if not isinstance(w.skip_bad, bool):
        raise ScenarioError(f"{where}.skip_bad must be true or false, got {quote(w.skip_bad)}")
    if not isinstance(w.types, Mapping):
        raise ScenarioError(f"{where}.types must be an object of job type overrides")
    try:
        known_types = job_types(w.types)
    except (TypeError, ValueError, AttributeError) as exc:
        raise ScenarioError(f"{where}.types: {' '.join(str(exc).split())[:200]}") from None
    for name, weight in w.mix:
        if name not in known_types:
            raise ScenarioError(f"{where}.mix: unknown job type {quote(name)}; known: {', '.join(known_types)}")
        if not (isinstance(weight, (int, float)) and not isinstance(weight, bool) and 0 <= weight <= MAX_MIX_WEIGHT):
            raise ScenarioError(
                f"{where}.mix[{name!r}] must be a number from 0 to {MAX_MIX_WEIGHT:g}, got {quote(weight)}"
            )
    if w.mix and not sum(v for _, v in w.mix) > 0:
        raise ScenarioError(f"{where}.mix needs at least one weight above 0")
    if w.trace_format and (not isinstance(w.trace_format, str) or w.trace_format not in TRACE_FORMATS):
        raise ScenarioError(
            f"{where}.trace_format {quote(w.trace_format)}: expected one of "
            f"{', '.join(TRACE_FORMATS)} (or empty to auto-detect)"
        )
    if w.time_unit not in TIME_UNITS:
        raise ScenarioError(
            f"{where}.time_unit {quote(w.time_unit)}: expected {', '.join(repr(u) for u in TIME_UNITS if u)} or empty"
        )
    for key, column in w.column_map:
        if key not in MAPPED_KEYS and key not in MAPPED_ALIASES:
            raise ScenarioError(f"{where}.column_map: {quote(key)} is not a job field; valid: {', '.join(MAPPED_KEYS)}")
        _check_text(column, f"{where}.column_map[{key!r}]")
    _check_text(w.trace_name, f"{where}.trace_name")
    if "/" in w.trace_name or "\\" in w.trace_name:
        raise ScenarioError(f"{where}.trace_name must be a file name, not a path")
    _check_text(w.trace_path, f"{where}.trace_path", MAX_PATH_CHARS)
    if w.window is not None and not (
        isinstance(w.window, tuple)
        and len(w.window) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= MAX_TIME_S for v in w.window)
        and w.window[0] <= w.window[1]
    ):
        raise ScenarioError(
            f"{where}.window must be [START_S, END_S] with 0 <= START_S <= END_S, got {quote(w.window)}"
        )
    if w.block and w.load_scale != 1.0:
        raise ScenarioError(f"{where}: a trace cut in blocks is scaled to its load; load_scale must stay 1")
    if w.source == "preset" and w.preset not in preset_names():
        raise ScenarioError(f"{where}.preset {quote(w.preset)}: expected one of {', '.join(preset_names())}")
    if w.source == "trace":
        if w.trace_path and w.trace_sha256:
            raise ScenarioError(f"{where}: a trace is a file (trace_path) or an upload (trace_sha256), not both")
        if not w.trace_path and not re.fullmatch(r"[0-9a-f]{64}", w.trace_sha256):
            raise ScenarioError(f"{where}.trace_sha256 must be the 64-hex-digit SHA-256 of the trace file")


@dataclass(frozen=True)
class Scenario:
    """Cluster + workload + run options + schedulers.

    Attributes:
        cluster: cluster shorthand (``"4x8:A100-80,2x4:V100-32"``) or its JSON text (see ``engine.sim.cluster``).
        workload: where the jobs come from.
        schedulers: scheduler names to compare, in display order.
        seed: the simulation seed handed to every scheduler.
        name: a label (e.g. the preset it came from).
        options: how runs unfold besides their inputs (the preemption model, ...).
    """

    cluster: str = "2x8:A100-80,4x4:V100-32"
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    schedulers: tuple[str, ...] = ("fifo", "first-fit", "best-fit")
    seed: int = 0
    name: str = ""
    options: RunOptions = field(default_factory=RunOptions)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schedulers", tuple(self.schedulers))
        if not isinstance(self.cluster, str) or not self.cluster.strip():
            raise ScenarioError("scenario.cluster must be a non-empty cluster spec")
        if len(self.cluster) > MAX_CLUSTER_CHARS:
            raise ScenarioError(
                f"scenario.cluster has {len(self.cluster):,} characters; the limit is {MAX_CLUSTER_CHARS:,}"
            )
        if not isinstance(self.workload, WorkloadSpec):
            raise ScenarioError("scenario.workload must be a WorkloadSpec")
        if not isinstance(self.options, RunOptions):
            raise ScenarioError("scenario.options must be a RunOptions")
        check_int(self.seed, "scenario.seed", 0, MAX_SEED, ScenarioError)
        _check_text(self.name, "scenario.name")
        if len(self.schedulers) > MAX_SCHEDULERS:
            raise ScenarioError(
                f"scenario.schedulers lists {len(self.schedulers)} names; the limit is {MAX_SCHEDULERS}"
            )
        for name in self.schedulers:
            if not (isinstance(name, str) and len(name) <= MAX_NAME_CHARS and SCHEDULER_NAME.fullmatch(name)):
                raise ScenarioError(
                    f"scenario.schedulers: {quote(name)} is not a scheduler name (letters, digits, "
                    "'_.+-', and at most one ':' before a plug-in's name)"
                )
        if len(set(self.schedulers)) != len(self.schedulers):
            raise ScenarioError(f"scenario.schedulers lists a name twice: {quote(list(self.schedulers))}")

    # ------------------------------------------------------------------ engine objects
    def build_cluster(self, *, trusted: bool = False) -> Cluster:
        """The :class:`Cluster` this scenario names (``ClusterSpecError`` if it is invalid or larger than
        :data:`MAX_NODES` nodes or :data:`MAX_GPUS` GPUs). Only shorthand and inline JSON, unless ``trusted``
        (the command line, the repository's records): then also a file or source (``.json``, ``openb:PATH``)."""
        cluster = parse_cluster(self.cluster) if trusted else parse_cluster_text(self.cluster)
        if cluster.n_nodes > MAX_NODES or cluster.n_gpus > MAX_GPUS:
            raise ScenarioError(
                f"the cluster has {cluster.n_nodes:,} nodes and {cluster.n_gpus:,} GPUs; "
                f"the playground's limit is {MAX_NODES:,} nodes and {MAX_GPUS:,} GPUs"
            )
        return cluster

    def build_jobs(self, cluster: Cluster, trace_bytes: bytes | None = None) -> tuple[Job, ...]:
        """The workload's jobs (:meth:`WorkloadSpec.build_jobs` with the workload's own seed)."""
        return self.workload.build_jobs(cluster, trace_bytes=trace_bytes)

    def load_trace(self, trace_bytes: bytes | None):
        """The workload's trace (:meth:`WorkloadSpec.load_trace`)."""
        return self.workload.load_trace(trace_bytes)

    def with_seed(self, seed: int) -> Scenario:
        """Seed ``seed`` of this scenario: the workload's seed and the simulation seed both ``seed`` (how
        evaluations, sweeps and presets' lesson checks number their runs)."""
        return replace(self, seed=seed, workload=self.workload.with_seed(seed))

    def run(
        self,
        cluster: Cluster | None = None,
        jobs: Sequence[Job] | None = None,
        *,
        trace_bytes: bytes | None = None,
        on_progress=None,
    ) -> dict[str, Any]:
        """Simulate every scheduler on the scenario's jobs with its seed and run options: ``{name: Result}``
        (``cluster`` and ``jobs``, when given, are the ones already built from this scenario)."""
        from engine.schedulers import make_scheduler
        from engine.sim.simulator import simulate

        cluster = self.build_cluster() if cluster is None else cluster
        jobs = self.build_jobs(cluster, trace_bytes) if jobs is None else jobs
        return {
            name: simulate(cluster, jobs, make_scheduler(name), seed=self.seed, options=self.options)
            for name in self.schedulers
        }

    # ------------------------------------------------------------------ identity
    def workload_key(self) -> str:
        """Canonical JSON of everything that determines the jobs and the cluster (not the schedulers):
        two scenarios with equal keys simulate the same jobs on the same cluster."""
        d = self.to_dict()
        for key in ("schedulers", "name", "options"):
            d.pop(key)
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    def with_schedulers(self, names) -> Scenario:
        return replace(self, schedulers=tuple(names))

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "workload": self.workload.to_dict(),
            "schedulers": list(self.schedulers),
            "seed": self.seed,
            "name": self.name,
            "options": self.options.to_dict(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, trusted: bool = False) -> Scenario:
        """A scenario from its JSON object (what :meth:`to_dict` writes; older files without ``options`` or
        the newer workload keys load with their defaults). ``trusted`` allows a trace file path (records the
        repository ships or the command line reads); the cluster is checked whole."""
        if not isinstance(data, Mapping):
            raise ScenarioError("a scenario must be a JSON object with cluster, workload and schedulers")
        reject_unknown_keys(data, {f.name for f in fields(cls)}, "scenario", ScenarioError)
        scheds = data.get("schedulers", cls.schedulers)
        if not isinstance(scheds, (list, tuple)) or not all(isinstance(s, str) for s in scheds):
            raise ScenarioError("scenario.schedulers must be a list of scheduler names")
        kwargs: dict[str, Any] = {k: data[k] for k in ("cluster", "name") if k in data}
        if "seed" in data:
            kwargs["seed"] = _as_number(data["seed"], int, "scenario.seed")
        if "options" in data:
            try:
                kwargs["options"] = RunOptions.from_dict(data["options"], "scenario.options")
            except EngineError as exc:  # OptionsError: one line naming scenario.options.KEY
                raise ScenarioError(str(exc)) from None
        workload = WorkloadSpec.from_dict(data.get("workload", {}), trusted=trusted)
        sc = cls(workload=workload, schedulers=tuple(scheds), **kwargs)
        sc.build_cluster(trusted=trusted)  # checked whole, its cluster included (cheap: no layout)
        return sc

    @classmethod
    def from_json(cls, text: str | bytes, *, trusted: bool = False) -> Scenario:
        """A scenario from its JSON (at most :data:`MAX_SCENARIO_BYTES`, nested at most :data:`MAX_JSON_DEPTH`)."""
        if len(text) > MAX_SCENARIO_BYTES:
            raise ScenarioError(f"the scenario JSON has {len(text):,} bytes; the limit is {MAX_SCENARIO_BYTES:,}")
        try:
            data = loads_bounded(text, "scenario JSON", MAX_JSON_DEPTH)
        except ValueError as exc:
            raise ScenarioError(str(exc)) from None
        return cls.from_dict(data, trusted=trusted)

    # ------------------------------------------------------------------ URL query parameters
    def to_query(self) -> dict[str, str]:
        """Flat string parameters for a shareable link; fields equal to the app's default are left out."""
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
            elif f.name in ("types", "window"):
                value = json.dumps(value if f.name == "types" else list(value), separators=(",", ":"))
            out[f"w.{f.name}"] = str(value)
        for key, value in _flat(self.options.to_dict(), "o."):
            if value != _flat_default(key):
                out[key] = json.dumps(value)
        return out

    @classmethod
    def from_query(cls, params: Mapping[str, Any], *, cluster: str = "") -> Scenario:
        """Inverse of :meth:`to_query` (untrusted). A link without a ``cluster`` parameter gets ``cluster`` (the
        app's current one; refused when ``""``). Parameters it does not know are ignored (links may carry others;
        :func:`unknown_link_keys` names them)."""
        if "cluster" not in params and not cluster:
            raise ScenarioError("the link has no 'cluster' parameter")
        for key, value in params.items():
            limit = MAX_CLUSTER_CHARS if key in _LONG_PARAMS else MAX_NAME_CHARS * 8
            if len(_one(value)) > limit:
                raise ScenarioError(
                    f"link parameter {quote(key)} has {len(_one(value)):,} characters; the limit is {limit:,}"
                )
        data: dict[str, Any] = {"cluster": _one(params["cluster"]) if "cluster" in params else cluster}
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
                    pairs[k] = _number_text(v, float, key, strict=True) if f.name == "mix" else v
                wl[f.name] = pairs
            elif f.name in ("types", "window"):
                wl[f.name] = _json_param(text, key)
            elif f.name == "skip_bad":
                if text.lower() not in ("true", "false"):
                    raise ScenarioError(f"link parameter {key} must be True or False, got {quote(text)}")
                wl[f.name] = text.lower() == "true"
            else:
                wl[f.name] = text
        data["workload"] = wl
        options: dict[str, Any] = {}
        for key, default in _flat(RunOptions().to_dict(), "o."):
            if key in params:
                outer, inner = key[2:].split(".", 1)
                text = _one(params[key])
                # A text option may be typed bare (o.admission.policy=feasible); links the app writes quote it.
                bare = isinstance(default, str) and not text.startswith('"')
                options.setdefault(outer, {})[inner] = text if bare else _json_param(text, key)
        if options:
            data["options"] = options
        return cls.from_dict(data)


def unknown_link_keys(params: Mapping[str, Any]) -> list[str]:
    """The parameters of a link that :meth:`Scenario.from_query` does not read (a typo, another site's), in order."""
    return [key for key in params if key not in _link_keys()]


@cache
def _link_keys() -> frozenset[str]:
    workload = (f"w.{f.name}" for f in fields(WorkloadSpec))
    return frozenset(("cluster", "sched", "seed", "name", *workload, *dict(_flat(RunOptions().to_dict(), "o."))))


# ---------------------------------------------------------------------------------------------- presets
@lru_cache(maxsize=1)
def preset_names() -> tuple[str, ...]:
    """The teaching presets' names (the stems of ``presets/*.json``)."""
    return tuple(sorted(p.stem for p in PRESET_DIR.glob("*.json")))


def preset_scenario_from_dict(name: str, data: Mapping[str, Any], where: str = "preset") -> Scenario:
    """The scenario part of a preset file (``cluster``, ``workload``, ``schedulers``, ``seed``, ``options``; trusted: a
    preset may name a trace file). ``workload`` is a scenario workload (:meth:`WorkloadSpec.from_dict`), or the
    presets' older form ``{"generate": {generator arguments}}`` / ``{"trace": PATH, "format": NAME}``."""
    seed = data.get("seed", 0)
    cluster = data.get("cluster")
    if isinstance(cluster, Mapping):
        cluster = json.dumps(cluster, separators=(",", ":"))
    if not isinstance(cluster, str):
        raise ScenarioError(f"{where}: 'cluster' must be a cluster spec or a cluster JSON object")
    workload = data.get("workload")
    if not isinstance(workload, Mapping):
        raise ScenarioError(f"{where}: 'workload' must be an object")
    if "source" not in workload:
        if len({"generate", "trace"} & set(workload)) != 1 or (set(workload) - {"generate", "trace", "format"}):
            raise ScenarioError(
                f"{where}: 'workload' needs exactly one of 'generate' (generator arguments) or "
                "'trace' (and its 'format'), or a scenario workload with its 'source'"
            )
        if "generate" in workload:
            args = dict(workload["generate"])
            if "n_jobs" not in args:
                raise ScenarioError(f"{where}: workload.generate needs 'n_jobs'")
            spec = WorkloadSpec.from_generator_args(seed=seed, **args)
        else:
            spec = WorkloadSpec(
                source="trace", trace_path=str(workload["trace"]), trace_format=workload.get("format") or "", seed=seed
            )
    else:
        spec = WorkloadSpec.from_dict(workload, trusted=True, where=f"{where}.workload")
    schedulers = data.get("schedulers")
    if not isinstance(schedulers, (list, tuple)):
        raise ScenarioError(f"{where}: 'schedulers' must be a list of scheduler names")
    try:
        options = RunOptions.from_dict(data.get("options", {}), f"{where}: options")
    except EngineError as exc:  # OptionsError: one line naming the key
        raise ScenarioError(str(exc)) from None
    return Scenario(cluster=cluster, workload=spec, schedulers=tuple(schedulers), seed=seed, name=name, options=options)


@cache
def preset_scenario(name: str) -> Scenario:
    """The scenario of teaching preset ``name`` (its cluster, its workload, its schedulers, its seed)."""
    if name not in preset_names():
        raise ScenarioError(f"unknown preset {quote(name)}; valid: {', '.join(preset_names())}")
    path = PRESET_DIR / f"{name}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ScenarioError(f"preset file {path.name}: cannot read it as JSON ({exc})") from None
    return preset_scenario_from_dict(name, data, f"preset file {path.name}")


def scenario_from_preset(name: str) -> Scenario:
    """What the app shows for preset ``name``: its cluster and schedulers, and its workload by name (so a link
    says which preset it is) with the preset's seed."""
    sc = preset_scenario(name)
    return replace(sc, workload=WorkloadSpec(source="preset", preset=name, seed=sc.seed))


# ---------------------------------------------------------------------------------------------- traces
def content_hash(data: bytes) -> str:
    """SHA-256 of a file's bytes, hex: how a scenario references an uploaded trace."""
    return hashlib.sha256(data).hexdigest()


def resolve_path(path: str) -> Path:
    """A trusted record's trace file: as given when it exists from the working directory, else relative to
    the repository (e.g. ``../shared/traces/philly/philly.csv``)."""
    p = Path(path)
    if not p.is_absolute() and not p.exists() and (REPO_ROOT / p).exists():
        return REPO_ROOT / p
    return p


@lru_cache(maxsize=4)
def _load_trace_file(path: str, options_json: str):
    """A trace file loaded with options (JSON: a hashable key; evaluations load one file for every seed)."""
    from engine.traces import load_trace

    options = json.loads(options_json)
    if "window" in options:
        options["window"] = tuple(options["window"])
    return load_trace(path, **options)


def load_trace_bytes(data: bytes, workload: WorkloadSpec):
    """Load a trace held in memory with the workload's loader options; returns an ``engine.traces.Trace``.

    The loaders read files (and detect formats partly by file extension), so the bytes go through a
    temporary file named like the original; errors name the original file, never the temporary one.
    """
    from engine.traces import load_trace

    suffix = "".join(re.sub(r"[^A-Za-z0-9.]", "", s) for s in Path(workload.trace_name).suffixes[-2:]) or ".csv"
    options = workload.loader_options()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"trace{suffix}"
        path.write_bytes(data)
        try:
            return load_trace(path, **options)
        except TraceError as exc:
            raise TraceError(
                exc.reason.replace(str(path), workload.trace_name or "the trace"),
                path=workload.trace_name or "the trace",
                line=exc.line,
                column=exc.column,
            ) from None


def scale_submits(jobs: Sequence[Job], load_scale: float) -> tuple[Job, ...]:
    """``jobs`` with submit times divided by ``load_scale``: what ``load_trace(..., load_scale=X)`` returns."""
    if load_scale == 1.0:
        return tuple(jobs)
    return tuple(replace(j, submit_s=j.submit_s / load_scale) for j in jobs)


def trace_block(jobs: Sequence[Job], k: int, n: int, load: float, n_gpus: int) -> tuple[Job, ...]:
    """Jobs ``k*n .. k*n+n-1`` of a trace, renumbered from 0, their arrivals scaled by one factor so that the
    block offers load ``load`` while its arrivals last.

    The load a block offers is the GPU-time its jobs would use between the first and the last arrival if each
    started on arrival (a job still running at the last arrival counts only up to then), over that span times
    the cluster's GPUs. Counting a job's whole run instead would let one job of a real trace that runs for weeks
    stand for load that arrives long after the block's arrivals end, and leave the cluster idle while they
    arrive. The load falls as the arrivals are stretched, so the factor is found by bisection; a block that
    cannot offer ``load`` even with its arrivals 10**6 times closer together keeps that compression.
    """
    if (k + 1) * n > len(jobs):
        raise EngineError(f"trace has {len(jobs)} jobs: not enough for seed {k} with {n} jobs per seed")
    block = jobs[k * n : (k + 1) * n]
    since = np.array([j.submit_s for j in block]) - block[0].submit_s
    span = float(since[-1])
    if span <= 0:
        return tuple(replace(j, job_id=i, submit_s=0.0) for i, j in enumerate(block))
    _, gpus, run_s = demand_arrays(block)
    lo, hi = 1e-6, 1e6
    for _ in range(100):  # geometric bisection: 2**-100 of the factor's log range
        mid = math.sqrt(lo * hi)
        offered = offered_load_of(since, gpus, run_s, n_gpus, arrival_scale=mid, until_last_arrival=True)
        lo, hi = (mid, hi) if offered > load else (lo, mid)
    return tuple(replace(j, job_id=i, submit_s=float(t * hi)) for i, (j, t) in enumerate(zip(block, since)))


# ---------------------------------------------------------------------------------------------- checks
#: Link parameters that may be as long as a cluster: the cluster, job types, and a carbon series (a day of
#: hourly values is about 200 characters, a year about 50,000).
_LONG_PARAMS = ("cluster", "w.types", "o.energy.carbon_g_per_kwh")


def _number_text(value: str, kind: type, where: str, strict: bool = False) -> Any:
    """A number written as text (a link's parameter): the number, or (unless ``strict``) the text itself when it
    is none (the bounds check then names the key and quotes it). Text over 40 characters is refused here."""
    if len(value) > 40:
        raise ScenarioError(f"{where} must be a number of at most 40 characters, got {len(value):,} characters")
    try:
        out = float(value) if kind is float else int(value)
    except (TypeError, ValueError, OverflowError):
        if strict:
            raise ScenarioError(f"{where} must be a number, got {quote(value)}") from None
        return value
    return out


def _as_number(value: Any, kind: type, where: str) -> Any:
    """A JSON or link value of a number field: text read as a number, an integral float as an integer for
    integer fields; anything else unchanged (the bounds check names the key and quotes it)."""
    if isinstance(value, str):
        return _number_text(value, kind, where)
    if kind is int and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _json_param(text: str, key: str) -> Any:
    try:
        return loads_bounded(text, f"link parameter {key}", MAX_JSON_DEPTH)
    except ValueError as exc:
        raise ScenarioError(str(exc)) from None


def _flat(options: Mapping[str, Mapping[str, Any]], prefix: str) -> list[tuple[str, Any]]:
    """``{"energy": {"pue": 1.2}}`` -> ``[("PREFIXenergy.pue", 1.2)]``: each run option's keys as flat link
    parameters; a value that is itself an object (a carbon series) stays whole, as one JSON parameter."""
    return [(f"{prefix}{name}.{k}", v) for name, model in options.items() for k, v in model.items()]


def _flat_default(key: str) -> Any:
    return dict(_flat(RunOptions().to_dict(), "o."))[key]


def _check_text(value: Any, where: str, limit: int = MAX_NAME_CHARS) -> None:
    """A name or label: a string of at most ``limit`` printable characters."""
    if not isinstance(value, str):
        raise ScenarioError(f"{where} must be text, got {quote(value)}")
    if len(value) > limit:
        raise ScenarioError(f"{where} has {len(value):,} characters; the limit is {limit}")
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
    jobs = tuple(
        Job(i, float(s), float(d), gpus=g, gpu_fraction=f, user=u, job_type=t)
        for i, (s, d, g, f, u, t) in enumerate(specs)
    )
    return cluster, jobs
