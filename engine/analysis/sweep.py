"""Sweeps: every cell of a grid (cluster x load x seed x scheduler) simulated as one Ray task.

    from engine.analysis.sweep import SweepSpec, run_sweep
    spec = SweepSpec.grid(clusters=("4x8:A100-80",), schedulers=("fifo", "sjf"), jobs=300, loads=(0.6, 0.9), seeds=3)
    frame = run_sweep(spec)          # one row per cell: cluster, load, seed, scheduler, every metric

**A grid over a scenario.** A :class:`SweepSpec` is a base :class:`~engine.analysis.scenario.Scenario` (its
workload, its run options, its schedulers) and the values its cells take: clusters, loads and seeds. Cell
``(cluster, load, seed, scheduler)`` is the base with that cluster, that load and ``with_seed(seed)`` (workload
and simulation seed), run with that scheduler. The load is the offered load of a generated workload (or of a
trace cut in seeded blocks) and the load scale of a whole trace (its submit times divided by it; 1 = as
recorded, the same jobs for every seed). For a generated workload whose generator arguments are the defaults
this is exactly what ``python -m engine generate --cluster C --jobs N --load L --seed SEED`` writes, run with
``simulate --seed SEED``; each row holds ``summarize(result).to_dict()``: the metrics of ``compare --json``.

**Ray.** Each distinct workload is put in the object store once (``ray.put``) and every cell that simulates it
gets the reference, so a 10,000-job trace crosses the network once per node, not once per task. Results are
taken as they complete (``ray.wait``) and reported through ``on_progress(done, total)``. A cell that raises is
recorded with its parameters in ``frame.attrs["failures"]``; the other cells still complete. With no address
(and no ``RAY_ADDRESS``) a local Ray is started on this machine's cores; ``address`` joins an existing cluster
(with its token, if it wants one: :mod:`engine.analysis.ray_join`), whose nodes must have this project
importable (the same version); a head lost mid-sweep leaves the finished cells and the rest as failures. A Ray
already initialised in this process is used as it is, and a Ray started here is left running for the next
call (``ray.shutdown()`` stops it).
``backend="serial"`` runs the same cells one after the other in this process (no Ray), for comparison. A
``guard`` (e.g. :func:`engine.runner.workers.call` with its bounds, as the app passes) runs each cell through
itself, so a cell past a time or memory bound is a failed cell with one line, and the others complete.

This module imports ray only when a Ray backend is used, and pandas only to build the result frame.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from engine.analysis.metrics import (
    DEADLINE_METRICS,
    ELASTIC_METRICS,
    ENERGY_METRICS,
    METRICS,
    RELIABILITY_METRICS,
    summarize,
)
from engine.analysis.ray_join import RayJoinError, head_answers, join_cluster
from engine.analysis.scenario import Scenario, ScenarioError, WorkloadSpec
from engine.errors import EngineError, RunCancelled, reject_unknown_keys
from engine.io import atomic_write_text
from engine.plugins import load_plugin
from engine.schedulers import make_scheduler
from engine.sim.cluster import Cluster, parse_cluster
from engine.sim.job import Job
from engine.sim.options import RunOptions
from engine.sim.simulator import simulate
from engine.sim.state import Scheduler

BACKENDS = ("ray", "serial")
#: Seconds without a finished cell after which the Ray head's port is tried, and how many tries in a row must
#: fail before the head counts as gone: Ray notices a lost head only after a minute, and then ends this
#: process, finished cells and all.
HEAD_CHECK_S = 5.0
HEAD_MISSES = 2
#: The columns that name a cell, before the metrics.
CELL_COLUMNS = ("cluster", "load", "seed", "scheduler")
#: Bounds on a spec (a spec may come from a file someone else wrote).
MAX_CELLS = 100_000
MAX_VALUES = 200
MAX_SEEDS = 1_000
#: ``load_trace`` keyword arguments the older spec's ``trace_options`` may set (the load scale is the grid's).
TRACE_OPTIONS = ("format", "skip_bad", "time_unit", "column_map", "first", "window")
#: Most option axes of one grid.
MAX_AXES = 4
#: Keys of the spec files written before a sweep had a base scenario (still read by :meth:`SweepSpec.from_dict`).
LEGACY_KEYS = frozenset({"clusters", "schedulers", "seeds", "jobs", "loads", "generator", "trace", "trace_options"})


class SweepError(EngineError, ValueError):
    """A sweep spec is invalid; the message names the field and what was expected."""


def with_load(workload: WorkloadSpec, load: float) -> WorkloadSpec:
    """``workload`` at grid value ``load``: a whole trace's load scale, otherwise its offered load."""
    if workload.source == "trace" and not workload.block:
        return replace(workload, load_scale=load)
    return replace(workload, load=load)


@dataclass(frozen=True)
class SweepSpec:
    """A grid of cells over a base scenario: every cluster x load x seed x scheduler of ``base``.

    Attributes:
        base: the scenario whose workload, run options and schedulers every cell shares.
        clusters: cluster specs (anything :func:`~engine.sim.cluster.parse_cluster` reads, or the cluster JSON as
            text), as the rows name them.
        loads: offered loads (or a whole trace's load scales) of the grid.
        seeds: seeds ``0..seeds-1``: workload seeds and every run's simulation seed.
        axes: run-option axes, ``((path, values), ...)``: ``path`` a numeric key of the base's options JSON
            (:func:`option_paths`, e.g. ``"failures.mtbf_h"``), ``values`` the numbers it takes in the grid.
    """

    base: Scenario
    clusters: tuple[str, ...]
    loads: tuple[float, ...] = (1.0,)
    seeds: int = 1
    axes: tuple[tuple[str, tuple[float, ...]], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.base, Scenario):
            raise SweepError("sweep base must be a Scenario")
        values = self.clusters
        if isinstance(values, str) or not all(isinstance(v, str) and v.strip() for v in values):
            raise SweepError("sweep clusters: expected a list of non-empty strings")
        object.__setattr__(self, "clusters", tuple(v.strip() for v in values))
        for name, values in (("clusters", self.clusters), ("schedulers", self.schedulers)):
            if not 1 <= len(values) <= MAX_VALUES:
                raise SweepError(f"sweep {name}: expected 1 to {MAX_VALUES} entries, got {len(values)}")
            repeated = sorted({v for v in values if values.count(v) > 1})
            if repeated:
                raise SweepError(f"sweep {name}: {repeated[0]!r} is listed more than once")
        if not (isinstance(self.seeds, int) and not isinstance(self.seeds, bool) and 1 <= self.seeds <= MAX_SEEDS):
            raise SweepError(f"sweep seeds: expected an integer from 1 to {MAX_SEEDS}, got {self.seeds!r}")
        try:
            loads = tuple(float(v) for v in self.loads)
        except (TypeError, ValueError):
            raise SweepError(f"sweep loads: expected a list of numbers, got {self.loads!r}") from None
        if not 1 <= len(loads) <= MAX_VALUES:
            raise SweepError(f"sweep loads: expected 1 to {MAX_VALUES} numbers")
        if len(set(loads)) != len(loads):
            raise SweepError("sweep loads: a load is listed more than once")
        for load in loads:  # every value the grid gives the workload is within the scenario's bounds
            try:
                with_load(self.base.workload, load)
            except ScenarioError as exc:
                raise SweepError(f"sweep loads: {exc}") from None
        object.__setattr__(self, "loads", loads)
        object.__setattr__(self, "axes", _checked_axes(self.base.options, self.axes))
        if self.base.workload.source == "trace" and not self.base.workload.block and self.base.workload.load_scale != 1:
            raise SweepError("sweep base: the grid's loads are the trace's load scales; keep the base's at 1")
        if self.cells > MAX_CELLS:
            raise SweepError(f"the sweep has {self.cells:,} cells; at most {MAX_CELLS:,} are allowed")

    @classmethod
    def grid(
        cls,
        clusters: Sequence[str],
        schedulers: Sequence[str],
        *,
        seeds: int = 1,
        jobs: int | None = None,
        loads: Sequence[float] = (),
        generator: Mapping[str, Any] | None = None,
        trace: str | None = None,
        trace_options: Mapping[str, Any] | None = None,
        options: RunOptions | None = None,
    ) -> SweepSpec:
        """A spec from the grid's values: ``jobs`` generated jobs (extra generator arguments in ``generator``)
        or a ``trace`` file read with ``trace_options`` (:data:`TRACE_OPTIONS`; loads are then load scales,
        default 1). This is also how spec files of the older form read."""
        if (jobs is None) == (trace is None):
            raise SweepError("a sweep needs either jobs (generated workloads) or a trace, not both")
        for name, value, allowed in (("generator", generator, None), ("trace_options", trace_options, TRACE_OPTIONS)):
            if value is not None and (not isinstance(value, Mapping) or (allowed and set(value) - set(allowed))):
                raise SweepError(
                    f"sweep {name}: expected an object"
                    + (f" with keys among {', '.join(allowed)}" if allowed else " of generator arguments")
                )
        if isinstance(schedulers, str) or not all(isinstance(v, str) and v.strip() for v in schedulers):
            raise SweepError("sweep schedulers: expected a list of non-empty strings")
        schedulers = tuple(v.strip() for v in schedulers)
        repeated = sorted({v for v in schedulers if schedulers.count(v) > 1})
        if repeated:
            raise SweepError(f"sweep schedulers: {repeated[0]!r} is listed more than once")
        if not loads and trace is None:
            raise SweepError("sweep loads: a generated workload needs at least one load")
        try:
            if trace is None:
                workload = WorkloadSpec.from_generator_args(jobs, **dict(generator or {}))
            else:
                o = dict(trace_options or {})
                window = o.get("window")
                if window is not None and not (isinstance(window, (list, tuple)) and len(window) == 2):
                    raise SweepError("sweep trace_options.window: expected [START_S, END_S]")
                workload = WorkloadSpec(
                    source="trace",
                    trace_path=str(trace),
                    trace_format=o.get("format") or "",
                    skip_bad=bool(o.get("skip_bad", False)),
                    time_unit=o.get("time_unit") or "",
                    column_map=tuple(dict(o.get("column_map") or {}).items()),
                    first=o.get("first") or 0,
                    window=window,
                )
            base = Scenario(
                cluster=str(next(iter(clusters), "") or "-"),
                workload=workload,
                schedulers=schedulers,
                options=options or RunOptions(),
            )
        except (ScenarioError, TypeError) as exc:
            raise SweepError(f"sweep: {exc}") from None
        return cls(base=base, clusters=tuple(clusters), loads=tuple(loads) or (1.0,), seeds=seeds)

    @classmethod
    def of_scenario(
        cls,
        sc: Scenario,
        clusters: Sequence[str] | None = None,
        loads: Sequence[float] | None = None,
        seeds: int = 1,
        axes: Sequence[tuple[str, Sequence[float]]] = (),
    ) -> SweepSpec:
        """The grid over scenario ``sc``: its cluster and its load (a whole trace's load scale) unless other
        ``clusters`` and ``loads`` are given, with option ``axes``."""
        w = sc.workload
        own = w.load_scale if w.source == "trace" and not w.block else w.load
        base = replace(sc, workload=with_load(w, 1.0)) if w.source == "trace" and not w.block else sc
        return cls(
            base=base,
            clusters=tuple(clusters or (sc.cluster,)),
            loads=tuple(loads or (own,)),
            seeds=seeds,
            axes=tuple((p, tuple(v)) for p, v in axes),
        )

    @property
    def schedulers(self) -> tuple[str, ...]:
        return self.base.schedulers

    @property
    def cells(self) -> int:
        return len(self.clusters) * len(self.loads) * len(self.points) * self.seeds * len(self.schedulers)

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns that name a cell: :data:`CELL_COLUMNS`, then each axis's path."""
        return (*CELL_COLUMNS, *(path for path, _ in self.axes))

    @property
    def points(self) -> tuple[tuple[float, ...], ...]:
        """Every combination of the axes' values, in grid order (one empty combination without axes)."""
        return tuple(itertools.product(*(values for _, values in self.axes)))

    def options_at(self, point: Sequence[float]) -> RunOptions:
        """The base's run options with the axes at ``point`` (one value per axis)."""
        return with_option_values(self.base.options, zip((path for path, _ in self.axes), point))

    def cell(self, cluster: str, load: float, seed: int, point: Sequence[float] = ()) -> Scenario:
        """The scenario of the cells at ``(cluster, load, seed)`` and axis values ``point`` (their schedulers: the
        base's)."""
        sc = replace(self.base, cluster=cluster, workload=with_load(self.base.workload, load))
        if self.axes:
            sc = replace(sc, options=self.options_at(point))
        return sc.with_seed(seed)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; :meth:`from_dict` reads it back to an equal spec (``python -m engine sweep --spec``)."""
        out: dict[str, Any] = {
            "base": self.base.to_dict(),
            "clusters": list(self.clusters),
            "loads": list(self.loads),
            "seeds": self.seeds,
        }
        if self.axes:  # a spec without axes keeps the form older versions read
            out["axes"] = {path: list(values) for path, values in self.axes}
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, trusted: bool = False) -> SweepSpec:
        """A spec from :meth:`to_dict`'s form, or the older one (``clusters``, ``schedulers``, ``seeds``,
        ``jobs`` or ``trace`` with ``trace_options``, ``loads``, ``generator``; its trace is a file, so it reads
        only ``trusted``, as the command line does)."""
        if not isinstance(data, Mapping):
            raise SweepError("a sweep spec must be a JSON object")
        if "workload" in data or "cluster" in data:  # a scenario file: the grid of its own values
            try:
                return cls.of_scenario(Scenario.from_dict(data, trusted=trusted))
            except ScenarioError as exc:
                raise SweepError(f"sweep base: {exc}") from None
        if "base" not in data:
            reject_unknown_keys(data, LEGACY_KEYS, "sweep spec", SweepError)
            missing = {"clusters", "schedulers"} - set(data)
            if missing:
                raise SweepError(f"sweep spec: missing {', '.join(sorted(missing))}")
            if data.get("trace") is not None and not trusted:
                raise SweepError("sweep spec: a trace file may be named only on the command line")
            for key in ("clusters", "schedulers", "loads"):
                if key in data and not isinstance(data[key], (list, tuple)):
                    raise SweepError(f"sweep {key}: expected a list")
            return cls.grid(
                data["clusters"],
                data["schedulers"],
                seeds=data.get("seeds", 1),
                jobs=data.get("jobs"),
                loads=data.get("loads") or (),
                generator=data.get("generator"),
                trace=data.get("trace"),
                trace_options=data.get("trace_options"),
            )
        reject_unknown_keys(data, {"base", "clusters", "loads", "seeds", "axes"}, "sweep spec", SweepError)
        for key in ("clusters", "loads"):
            if key in data and not isinstance(data[key], (list, tuple)):
                raise SweepError(f"sweep {key}: expected a list")
        axes = data.get("axes") or {}
        if not isinstance(axes, Mapping) or not all(isinstance(v, (list, tuple)) for v in axes.values()):
            raise SweepError(
                'sweep axes: expected an object of option paths and lists of numbers, e.g. {"failures.mtbf_h": [100, 1000]}'
            )
        try:
            base = Scenario.from_dict(data["base"], trusted=trusted)
        except EngineError as exc:
            raise SweepError(f"sweep base: {exc}") from None
        return cls(
            base=base,
            clusters=tuple(data.get("clusters") or (base.cluster,)),
            loads=tuple(data.get("loads") or (1.0,)),
            seeds=data.get("seeds", 1),
            axes=tuple((str(p), tuple(v)) for p, v in axes.items()),
        )

    @classmethod
    def from_json(cls, text: str | bytes, *, trusted: bool = False) -> SweepSpec:
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SweepError(f"sweep spec is not valid JSON ({exc})") from None
        except RecursionError:
            raise SweepError("sweep spec is not valid JSON (nested too deeply)") from None
        return cls.from_dict(data, trusted=trusted)


def parse_numbers(text: str, what: str = "loads") -> tuple[float, ...]:
    """``"0.5, 0.8,1.1"`` -> ``(0.5, 0.8, 1.1)``: comma-separated finite numbers > 0, each once."""
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = (math.nan,)
    if not values or any(not (math.isfinite(v) and v > 0) for v in values):
        raise SweepError(f"{what} {text!r}: expected comma-separated numbers > 0, e.g. 0.5,0.8,1.1")
    if len(set(values)) != len(values):
        raise SweepError(f"{what} {text!r}: a value is listed more than once")
    return values


def option_paths(options: RunOptions | None = None) -> tuple[str, ...]:
    """The run options a grid may vary: every key of ``options``' JSON form (default options: all of them)
    holding a number, or null where a number may stand (``failures.mtbf_h``, ``preemption.checkpoint_interval_s``),
    as ``"model.key"``."""
    tree = (options or RunOptions()).to_dict()
    return tuple(
        f"{model}.{key}"
        for model, values in tree.items()
        for key, value in values.items()
        if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
    )


def with_option_values(options: RunOptions, values: Iterable[tuple[str, float]]) -> RunOptions:
    """``options`` with each ``(path, value)`` of ``values`` set (a path of :func:`option_paths`); a value out of
    its option's bounds raises :class:`SweepError` naming the option."""
    tree = options.to_dict()
    for path, value in values:
        model, key = path.split(".", 1)
        integer = isinstance(tree[model][key], int) and not isinstance(tree[model][key], bool)
        tree[model][key] = int(value) if integer and float(value).is_integer() else value
    try:
        return RunOptions.from_dict(tree)
    except EngineError as exc:
        raise SweepError(f"sweep axes: {exc}") from None


def parse_axis(text: str) -> tuple[str, tuple[float, ...]]:
    """``"failures.mtbf_h=100,1000"`` -> ``("failures.mtbf_h", (100.0, 1000.0))`` (``--grid``); the path and the
    values are checked when the spec is built."""
    path, sep, values = str(text).partition("=")
    parts = [p.strip() for p in values.split(",") if p.strip()]
    try:
        numbers = tuple(float(p) for p in parts)
    except ValueError:
        numbers = ()
    if not sep or not path.strip() or not numbers:
        raise SweepError(f"--grid {text!r}: expected OPTION=V1,V2,... e.g. failures.mtbf_h=100,1000,10000")
    return path.strip(), numbers


def _checked_axes(options: RunOptions, axes: Any) -> tuple[tuple[str, tuple[float, ...]], ...]:
    """``axes`` as a tuple of ``(path, values)``, each path a known option once, each value a finite number within
    its option's bounds (all raise :class:`SweepError` naming the axis)."""
    allowed = option_paths(options)
    out: list[tuple[str, tuple[float, ...]]] = []
    for path, values in tuple(axes):
        if path not in allowed:
            raise SweepError(f"sweep axes: {path!r} is not a numeric run option; valid: {', '.join(allowed)}")
        if any(path == p for p, _ in out):
            raise SweepError(f"sweep axes: {path!r} is listed more than once")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values):
            raise SweepError(f"sweep axes: {path} takes finite numbers, got {values!r}")
        numbers = tuple(float(v) for v in values)
        if not 1 <= len(numbers) <= MAX_VALUES or len(set(numbers)) != len(numbers):
            raise SweepError(f"sweep axes: {path} takes 1 to {MAX_VALUES} numbers, each once")
        for v in numbers:
            with_option_values(options, [(path, v)])
        out.append((path, numbers))
    if len(out) > MAX_AXES:
        raise SweepError(f"sweep axes: at most {MAX_AXES} option axes, got {len(out)}")
    return tuple(out)


def build_cluster(spec: str) -> Cluster:
    """A grid's cluster: anything :func:`~engine.sim.cluster.parse_cluster` reads, or the cluster JSON as text."""
    if spec.lstrip().startswith("{"):
        try:
            return parse_cluster(json.loads(spec))
        except json.JSONDecodeError as exc:
            raise SweepError(f"cluster JSON is not valid JSON ({exc})") from None
    return parse_cluster(spec)


def axis_columns(frame) -> list[str]:
    """The option-axis columns of a sweep frame (their names are option paths, the only ones with a dot)."""
    return [c for c in frame.columns if "." in str(c)]


def curve_stats(frame, metric: str):
    """Mean and 95 % CI half-width of ``metric`` over seeds, per (cluster, load, option axes, scheduler) of a sweep
    frame: columns ``cluster``, ``load``, the axes (:func:`axis_columns`), ``scheduler``, ``mean``, ``ci95`` (NaN
    with one seed), ``seeds``."""
    import pandas as pd

    from engine.analysis.evaluate import mean_ci

    by = ["cluster", "load", *axis_columns(frame), "scheduler"]
    rows = []
    for values, group in frame.groupby(by, sort=False, dropna=False):  # (a grid run again without an axis: NaN)
        mean, half = mean_ci(group[metric].tolist())
        rows.append({**dict(zip(by, values)), "mean": mean, "ci95": half, "seeds": len(group)})
    return pd.DataFrame(rows, columns=[*by, "mean", "ci95", "seeds"])


def run_cell(
    cluster: Cluster,
    jobs: Sequence[Job],
    scheduler: str,
    seed: int,
    factory: Callable[[], Scheduler] | None = None,
    plugins: Sequence[str] = (),
    options: RunOptions | None = None,
    energy: bool = False,
) -> dict[str, Any]:
    """One cell: ``scheduler`` (or what ``factory`` builds) on ``jobs`` with simulation seed ``seed`` and run
    ``options``; returns ``summarize(result).to_dict()``, with the energy metrics of ``options.energy`` when
    ``energy``. This is the Ray task (workers import this module by name); ``plugins`` are imported first
    (:func:`engine.plugins.load_plugin`, once per worker), so their schedulers have names there."""
    for plugin in plugins:
        load_plugin(plugin)
    built = factory() if factory is not None else make_scheduler(scheduler)
    model = (options or RunOptions()).energy if energy else None
    return summarize(simulate(cluster, jobs, built, seed=seed, options=options), energy=model).to_dict()


def run_guarded(guard: Callable[..., dict[str, Any]] | None, *args: Any) -> dict[str, Any]:
    """:func:`run_cell` ``(*args)``, through ``guard(run_cell, *args)`` when a guard is given (e.g.
    :func:`engine.runner.workers.call` with a time and a memory bound: a cell past them raises one line). This is
    the Ray task."""
    return run_cell(*args) if guard is None else guard(run_cell, *args)


# ------------------------------------------------------------------------------------------ backends
@dataclass(frozen=True)
class CellFailure:
    """A cell that raised: its parameters and the error, one line."""

    params: Mapping[str, Any]
    error: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.params, "error": self.error}


class Runner:
    """Runs cells on Ray (``backend="ray"``) or one after the other in this process (``"serial"``).

    ``put`` stores a workload once and returns what ``submit`` takes; ``completed`` yields ``(key, summary or
    exception)`` as cells finish. Use as a context manager: a Ray started here is shut down on exit only when
    ``keep_ray`` is false. A set ``cancel`` event stops ``completed`` within a fraction of a second: the cells
    still pending are cancelled (a running Ray task's worker is killed) and :class:`RunCancelled` is raised.
    """

    def __init__(
        self,
        backend: str = "ray",
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        keep_ray: bool = True,
        plugins: Sequence[str] = (),
        guard: Callable[..., dict[str, Any]] | None = None,
        cancel: Any = None,
    ) -> None:
        if backend not in BACKENDS:
            raise EngineError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}")
        self.backend, self.keep_ray, self.guard, self.cancel = backend, keep_ray, guard, cancel
        # A plug-in file is named by its absolute path: workers on this machine find it wherever they run.
        self.plugins = tuple(str(Path(p).resolve()) if p.endswith(".py") else p for p in plugins)
        self.requested_address = address or os.environ.get("RAY_ADDRESS") or None
        self.num_cpus = num_cpus
        self.started_ray = False
        self.address = "in-process"
        self.cpus = 1
        self.init_s = 0.0
        self.cancel = cancel
        self._pending: dict[Any, Any] = {}

    def __enter__(self) -> Runner:
        if self.backend == "ray":
            t0 = time.perf_counter()
            self._connect()
            self.init_s = time.perf_counter() - t0
        return self

    def __exit__(self, *exc: object) -> None:
        """Cancel the cells still pending (left by an error, e.g. a page's run stopped through its progress
        callback: they would go on holding Ray's CPUs for nobody), then shut a Ray started here down unless kept."""
        if self.backend == "ray" and self._pending:
            import ray

            for ref in self._pending:
                ray.cancel(ref, force=True)
            self._pending = {}
        if self.started_ray and not self.keep_ray:
            import ray

            ray.shutdown()

    def _connect(self) -> None:
        import logging

        if self.requested_address is None:
            _exit_cleanly_on_sigterm()  # before ray is imported: it reads its settings then
        import ray

        if not ray.is_initialized():
            quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
            if self.requested_address is None:
                try:
                    _start_local_ray(num_cpus=self.num_cpus, include_dashboard=False, **quiet)
                except Exception as exc:  # Ray's start fails with errors of many types; each is one line here
                    raise EngineError(f"could not start a local Ray on this machine: {one_line(exc)}") from None
            else:
                join_cluster(self.requested_address, **quiet)  # one line within seconds when it cannot
            self.started_ray = True
        self.address = ray.get_runtime_context().gcs_address
        self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._remote = _remote_cell()

    def put(self, jobs: Sequence[Job]) -> Any:
        if self.backend == "serial":
            return jobs
        import ray

        return ray.put(tuple(jobs))

    def submit(
        self,
        key: Any,
        cluster: Cluster,
        jobs_ref: Any,
        scheduler: str,
        seed: int,
        factory: Callable[[], Scheduler] | None = None,
        options: RunOptions | None = None,
        energy: bool = False,
    ) -> None:
        """Start one cell (on Ray it is queued at once; serially it runs when :meth:`completed` reaches it)."""
        args = (self.guard, cluster, jobs_ref, scheduler, seed, factory, self.plugins, options, energy)
        if self.backend == "serial":
            self._pending[key] = args
        else:
            self._pending[self._remote.remote(*args)] = key

    def completed(self) -> Iterator[tuple[Any, dict[str, Any] | BaseException]]:
        """Every submitted cell, as it completes: ``(key, summary)`` or ``(key, the exception it raised)``. When
        the Ray head stops answering (:data:`HEAD_CHECK_S`), Ray is disconnected and every cell still pending
        comes at once with a :class:`~engine.analysis.ray_join.RayJoinError`."""
        if self.backend == "serial":
            while self._pending:
                self._stop_if_cancelled()
                key = next(iter(self._pending))
                args = self._pending.pop(key)
                try:
                    yield key, run_guarded(*args)
                except Exception as exc:  # a failed cell is reported; the others go on
                    yield key, exc
            return
        import ray

        quiet_since, misses = time.monotonic(), 0
        while self._pending:
            self._stop_if_cancelled()
            ready, _ = ray.wait(list(self._pending), num_returns=min(len(self._pending), 64), timeout=0.2)
            if ready:
                quiet_since, misses = time.monotonic(), 0
            elif time.monotonic() - quiet_since >= HEAD_CHECK_S:
                quiet_since = time.monotonic()
                misses = 0 if head_answers(self.address) else misses + 1
                if misses == HEAD_MISSES:
                    yield from self._lost()
                    return
            for ref in ready:
                key = self._pending.pop(ref)
                try:
                    yield key, ray.get(ref)
                except Exception as exc:  # RayTaskError wraps what the cell raised; a dead worker is one too
                    yield key, getattr(exc, "cause", None) or exc

    def _stop_if_cancelled(self) -> None:
        """Raise :class:`RunCancelled` when the cancel event is set, cancelling every cell still pending first."""
        if self.cancel is None or not self.cancel.is_set():
            return
        pending, self._pending = self._pending, {}
        if self.backend == "ray":
            import ray

            for ref in pending:
                ray.cancel(ref, force=True)
        raise RunCancelled(f"stopped with {len(pending):,} cells pending")

    def _lost(self) -> Iterator[tuple[Any, BaseException]]:
        """The cluster's head went away: disconnect now (Ray would end this process a minute later) and report
        every cell still pending as failed; the finished ones are kept by the caller."""
        import ray

        pending, self._pending = self._pending, {}
        ray.shutdown()
        self.started_ray = False
        error = RayJoinError(
            f"the Ray cluster at {self.address} went away (its head no longer answers) before this cell finished"
        )
        for key in pending.values():
            yield key, error


def _exit_cleanly_on_sigterm() -> None:
    """Let a SIGTERM end this process through Python's shutdown, which shuts a Ray started here down.

    Ray's crash handler (installed by ``ray.init`` unless disabled) answers a SIGTERM with a stack dump and an
    abort, which reads like a crash (Ray's processes still end with this one). Without it, Streamlit's own
    handler stops the server normally, and a process with no handler of its own (the CLI) gets one that raises
    ``SystemExit`` (exit status 143)."""
    import signal

    os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def _start_local_ray(**options: Any) -> None:
    """``ray.init(address="local", **options)`` from a thread that lives as long as this process.

    Ray ties the life of the processes it starts to the *thread* that starts them (``PR_SET_PDEATHSIG``): started
    from a thread that ends, such as a Streamlit script run, the local Ray would die with it. The main thread
    lives long enough; any other thread hands the start to a daemon thread that waits for the process to end."""
    import ray

    if threading.current_thread() is threading.main_thread():
        ray.init(address="local", **options)
        return
    started, failed = threading.Event(), []

    def owner() -> None:
        try:
            ray.init(address="local", **options)
        except BaseException as exc:  # handed to the caller below
            failed.append(exc)
        finally:
            started.set()
        threading.Event().wait()

    threading.Thread(target=owner, name="ray-owner", daemon=True).start()
    started.wait()
    if failed:
        raise failed[0]


def _remote_cell():
    """:func:`run_guarded` as a Ray remote function (made once per process; ray imported here)."""
    global _REMOTE
    if _REMOTE is None:
        import ray

        _REMOTE = ray.remote(num_cpus=1)(run_guarded)
    return _REMOTE


_REMOTE = None


def one_line(exc: BaseException) -> str:
    """An exception as ``Type: message`` on one line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def check_schedulers(names: Iterable[str], factories: Mapping[str, Callable[[], Scheduler]] | None) -> None:
    """Build each scheduler once so that an unknown name fails before any cell runs."""
    for name in names:
        if not (factories and name in factories):
            make_scheduler(name)


# ------------------------------------------------------------------------------------------ sweep
def run_sweep(
    spec: SweepSpec,
    *,
    trace_jobs: Sequence[Job] | None = None,
    backend: str = "ray",
    address: str | None = None,
    num_cpus: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    factories: Mapping[str, Callable[[], Scheduler]] | None = None,
    keep_ray: bool = True,
    plugins: Sequence[str] = (),
    energy: bool = False,
    kept: Mapping[tuple, Mapping[str, Any]] | None = None,
    on_cell: Callable[[tuple, dict[str, Any]], None] | None = None,
    guard: Callable[..., dict[str, Any]] | None = None,
    cancel: Any = None,
):
    """Simulate every cell of ``spec`` and return a pandas frame, one row per completed cell in grid order.

    Args:
        spec: the grid.
        trace_jobs: the base's trace, already loaded (e.g. an upload), before its cuts; otherwise a trace file
            of the base is read here.
        backend: ``"ray"`` or ``"serial"`` (in this process, one cell after the other).
        address: a Ray cluster to join (default ``RAY_ADDRESS``, else a local Ray on this machine's cores).
        num_cpus: CPUs of a local Ray that this call starts (default: all).
        on_progress: called with ``(cells done, cells)`` as cells complete.
        factories: schedulers that are not in the registry, by the name ``spec.schedulers`` gives them: each
            cell calls its factory (on the worker; Ray pickles it) to build a fresh one.
        keep_ray: leave a Ray started by this call running (for the next sweep) instead of shutting it down.
        plugins: plug-in files or modules (``--plugin``) every worker imports before it builds a scheduler; they
            must be loaded here too (their names are checked before anything runs).
        energy: every row adds the keys of :data:`~engine.analysis.metrics.ENERGY_METRICS` (cost, energy and
            carbon under the base's ``options.energy``).
        kept: rows of cells an earlier run of this grid finished (``(cluster, load, seed, scheduler, *axis values)
            -> row``,
            e.g. :meth:`CellJournal.open`'s): they are not run again, and are in the frame as given.
        on_cell: called with ``(key, row)`` as each cell completes (not for failed cells), e.g.
            :meth:`CellJournal.add`, so that a killed sweep can resume.
        guard: each cell runs as ``guard(run_cell, *args)`` on its worker (:func:`run_guarded`), e.g.
            ``functools.partial(engine.runner.workers.call, what=..., limit_s=..., memory_mb=...)``: a cell past
            its time or memory bound is stopped and is a failed cell with that one-line reason.
        cancel: anything with ``is_set()`` (a :class:`threading.Event`): once set, the pending cells are cancelled
            and :class:`RunCancelled` is raised (looked at every 0.2 s, and between cells in serial).

    Returns:
        Columns :data:`CELL_COLUMNS`, then one per option axis (its path: the cell's value), then every key of
        :data:`~engine.analysis.metrics.METRICS` (then of ``ENERGY_METRICS`` with ``energy``, then of
        ``RELIABILITY_METRICS`` when a cell's options model failures, then of ``DEADLINE_METRICS`` when its jobs have
        deadlines: a deadline law or a trace with some, then of ``ELASTIC_METRICS`` when the generator makes a share
        of the jobs elastic; a cell with no such job counts 0 of them; undefined values NaN). ``attrs["failures"]``:
        one dict per failed cell (its parameters and ``error``); ``attrs["meta"]``: ``backend``, ``address``,
        ``cpus``, ``cells``, ``completed``, ``failed``, ``wall_s``, ``ray_init_s`` and the ``spec``.
    """
    import pandas as pd

    clusters = {c: build_cluster(c) for c in spec.clusters}  # bad specs fail before anything runs
    check_schedulers(spec.schedulers, factories)
    factories = dict(factories or {})
    base = None
    if spec.base.workload.source == "trace":
        base = tuple(trace_jobs) if trace_jobs is not None else spec.base.workload.load_trace().jobs
        if not base:
            raise EngineError(f"{spec.base.workload.trace_path or spec.base.workload.trace_name}: no jobs to simulate")
    elif trace_jobs is not None:
        raise SweepError("trace_jobs given for a sweep of generated workloads")
    rows: dict[tuple, dict[str, Any]] = {k: dict(v) for k, v in (kept or {}).items()}
    total, done = spec.cells, len(rows)
    failures: dict[tuple, CellFailure] = {}
    t0 = time.perf_counter()
    with Runner(
        backend, address, num_cpus=num_cpus, keep_ray=keep_ray, plugins=plugins, guard=guard, cancel=cancel
    ) as runner:
        options = {point: spec.options_at(point) for point in spec.points}
        for key, cluster, jobs_ref in _workloads(spec, clusters, base, runner):
            for point, scheduler in itertools.product(spec.points, spec.schedulers):
                if (*key, scheduler, *point) not in rows:
                    runner.submit(
                        (*key, scheduler, *point),
                        cluster,
                        jobs_ref,
                        scheduler,
                        key[2],
                        factories.get(scheduler),
                        options[point],
                        energy,
                    )
        for key, outcome in runner.completed():
            params = dict(zip(spec.columns, key))
            if isinstance(outcome, BaseException):
                failures[key] = CellFailure(params, one_line(outcome))
            else:
                rows[key] = {**params, **outcome}
                if on_cell is not None:
                    on_cell(key, rows[key])
            done += 1
            if on_progress is not None:
                on_progress(done, total)
    order = [
        (c, load, seed, s, *point)
        for c in spec.clusters
        for load in spec.loads
        for point in spec.points
        for seed in range(spec.seeds)
        for s in spec.schedulers
    ]
    metrics = {
        **METRICS,
        **(ENERGY_METRICS if energy else {}),
        **(RELIABILITY_METRICS if any(o.failures.active for o in options.values()) else {}),
        **(DEADLINE_METRICS if _has_deadlines(spec, base) else {}),
        **(ELASTIC_METRICS if spec.base.workload.elastic else {}),
    }
    frame = pd.DataFrame([rows[k] for k in order if k in rows], columns=[*spec.columns, *metrics])
    # A cell whose jobs drew no deadline or no elastic job (a small workload, best_effort 1) has no such part: 0 of them
    parts = {**DEADLINE_METRICS, **ELASTIC_METRICS}
    frame = frame.fillna({k: 0 for k, m in parts.items() if k in metrics and m.unit in ("jobs", "count")})
    frame = frame.astype({k: "int64" if m.unit in ("jobs", "count") else "float64" for k, m in metrics.items()})
    frame.attrs["failures"] = [failures[k].to_dict() for k in order if k in failures]
    frame.attrs["meta"] = {
        "backend": backend,
        "address": runner.address,
        "cpus": runner.cpus,
        "cells": total,
        "completed": len(rows),
        "failed": len(failures),
        "wall_s": time.perf_counter() - t0,
        "ray_init_s": runner.init_s,
        "spec": spec.to_dict(),
    }
    return frame


def _has_deadlines(spec: SweepSpec, base: tuple[Job, ...] | None) -> bool:
    """Whether the grid's jobs have deadlines: a deadline law draws them, or the trace carries some."""
    return spec.base.workload.deadlines != "none" or (base is not None and any(j.has_deadline for j in base))


def _workloads(
    spec: SweepSpec, clusters: Mapping[str, Cluster], base: tuple[Job, ...] | None, runner: Runner
) -> Iterator[tuple[tuple[str, float, int], Cluster, Any]]:
    """``((cluster, load, seed), cluster, workload reference)`` for every workload of the grid, each distinct
    workload put once: a generated one per (cluster, load, seed), a whole trace's per load scale (shared by every
    cluster and seed), a trace's seeded block per (GPUs, load, seed)."""
    refs: dict[tuple, Any] = {}
    for c, cluster in clusters.items():
        for load in spec.loads:
            for seed in range(spec.seeds):
                w = spec.cell(c, load, seed).workload
                if base is None:
                    yield (c, load, seed), cluster, runner.put(w.build_jobs(cluster))
                    continue
                key = (cluster.n_gpus, load, seed) if w.block else (load,)
                if key not in refs:
                    refs[key] = runner.put(w.cut_trace(base, cluster.n_gpus))
                yield (c, load, seed), cluster, refs[key]


def sweep(
    clusters: str | Sequence[str],
    schedulers: str | Sequence[str],
    *,
    jobs: int | None = None,
    loads: float | Sequence[float] = (),
    trace: str | Sequence[Job] | None = None,
    seeds: int = 1,
    generator: Mapping[str, Any] | None = None,
    trace_options: Mapping[str, Any] | None = None,
    **run_options: Any,
):
    """``engine.sweep``: build a :class:`SweepSpec` from these arguments (:meth:`SweepSpec.grid`) and
    :func:`run_sweep` it.

    ``trace`` is a file or the jobs themselves (a sequence of :class:`~engine.sim.job.Job`); ``loads`` are
    offered loads for generated workloads (``jobs=N``) and load scales for a trace. ``run_options`` are those
    of :func:`run_sweep` (``backend``, ``address``, ``on_progress``, ``factories``, ...). Returns its frame.
    """

    def as_tuple(value) -> tuple:
        return (value,) if isinstance(value, (str, int, float)) else tuple(value)

    trace_jobs = None
    if trace is not None and not isinstance(trace, (str, os.PathLike)):
        trace_jobs, trace = tuple(trace), "<jobs>"
    spec = SweepSpec.grid(
        as_tuple(clusters),
        as_tuple(schedulers),
        seeds=seeds,
        jobs=jobs,
        loads=as_tuple(loads),
        generator=generator,
        trace=None if trace is None else str(trace),
        trace_options=trace_options,
    )
    return run_sweep(spec, trace_jobs=trace_jobs, **run_options)


class CellJournal:
    """The finished cells of one sweep, kept in a file as they finish (a header line naming the grid and its
    inputs, then one JSON line per cell), so that a killed sweep run again with the same grid and inputs
    resumes where it stopped (:func:`run_sweep`'s ``kept`` and ``on_cell``).

    A journal of another grid, or one whose header is unreadable, is started over (when the first cell is
    added: a sweep that fails before any cell finishes leaves the file as it was); a cell line cut short by a
    kill is dropped. Use :meth:`open`, then :meth:`add` per cell, then :meth:`close`, and :meth:`remove` once
    the results are written."""

    def __init__(self, path: str | os.PathLike[str], spec: SweepSpec, inputs: Mapping[str, Any]) -> None:
        """``inputs``: what else the cells depend on (e.g. the size and time of the files the grid reads)."""
        self.path = Path(path)
        self.columns = spec.columns
        header = {"sweep": spec.to_dict(), "metrics": list(METRICS), "inputs": dict(inputs)}
        self.header = json.loads(json.dumps(header))  # as it reads back from the file
        self._start = json.dumps(self.header) + "\n"
        self._file: Any = None

    def open(self) -> dict[tuple, dict[str, Any]]:
        """The cells an earlier run of this grid kept (key -> row), and the journal opened to add to."""
        cells: dict[tuple, dict[str, Any]] = {}
        lines = self.path.read_bytes().splitlines() if self.path.is_file() else []
        if lines and _json_or_none(lines[0]) == self.header:
            for line in lines[1:]:
                row = _json_or_none(line)
                if isinstance(row, dict) and all(c in row for c in self.columns):
                    cells[tuple(row[c] for c in self.columns)] = row
        self._start = "".join(json.dumps(v) + "\n" for v in (self.header, *cells.values()))
        return cells

    def add(self, key: tuple, row: Mapping[str, Any]) -> None:
        """Keep one finished cell (its row holds its key's columns)."""
        if self._file is None:  # the first cell: the journal is rewritten with the kept cells only (no line cut
            atomic_write_text(self.path, self._start)  # short stays in the middle), then appended to
            self._file = open(self.path, "a", encoding="utf-8")
        self._file.write(json.dumps(dict(row)) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def remove(self) -> None:
        """Forget the cells: the results that hold them are written."""
        self.close()
        self.path.unlink(missing_ok=True)


def _json_or_none(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def finite_or_none(value: Any) -> Any:
    """``None`` for NaN and infinities (strict JSON), the value otherwise."""
    return None if isinstance(value, float) and not math.isfinite(value) else value
