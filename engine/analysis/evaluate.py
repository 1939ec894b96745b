"""Seeded multi-run evaluation: every scheduler on the same workloads, mean and 95 % CI of every metric.

``python -m engine evaluate --schedulers first-fit,sjf,rl:wait-mlp --scenario mixed-32 --seeds 10`` runs each
scheduler on seeds ``0..9`` of a scenario (the same jobs for every scheduler) and prints, per metric of
:func:`engine.analysis.metrics.summarize`, the mean over seeds and its 95 % confidence interval (Student t), then
the **paired** differences against ``--baseline``: for each seed, scheduler minus baseline on the same jobs,
whose mean and CI say whether a scheduler is better than the baseline beyond seed-to-seed noise.

What is evaluated is a :class:`~engine.analysis.scenario.Scenario` and a seed policy: seed ``k`` is
``scenario.with_seed(k)`` (workload seed and simulation seed ``k``). :func:`parse_scenario` reads a named scenario
(:data:`SCENARIOS`, or a teaching preset of :mod:`engine.analysis.presets`), a scenario JSON file (what the app
downloads), or a spec ``"cluster=4x8:V100-32;jobs=200;load=1.5[;arrival=bursty][;users=10][;trace=PATH[;skip=N]]"``.
With ``trace``, seed ``k`` takes the ``k``-th block of ``jobs`` consecutive jobs of the trace (after its first
``skip`` jobs) and stretches or compresses its arrivals so that the block offers ``load`` while its arrivals last
(see :func:`~engine.analysis.scenario.trace_block`).

This module imports torch only when an ``rl:`` scheduler is evaluated (through the scheduler registry).
Training workloads draw seeds at or above ``engine.analysis.workload.TRAIN_SEED_MIN`` (2**20); evaluation seeds
``0..n-1`` are therefore never training workloads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from engine.analysis.metrics import METRICS, summarize
from engine.analysis.scenario import Scenario, WorkloadSpec, preset_names, preset_scenario
from engine.errors import EngineError, reject_unknown_keys
from engine.schedulers import make_scheduler
from engine.sim.cluster import parse_cluster
from engine.sim.options import EnergyModel, RunOptions
from engine.sim.simulator import Result, simulate
from engine.sim.state import Scheduler

#: The keys of the flat evaluation-scenario dicts that model cards written before the scenario record hold.
LEGACY_KEYS = frozenset({"name", "cluster", "n_jobs", "load", "workload", "trace", "preset", "skip_jobs"})


def run_scheduler(
    name: str,
    cluster,
    jobs: Sequence,
    seed: int,
    options: RunOptions | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    factory: Callable[[], Scheduler] | None = None,
) -> Result:
    """Build scheduler ``name`` (by ``factory`` if given, else from the registry) and simulate ``jobs`` on
    ``cluster``. Whatever the scheduler's own code raises (a plug-in's ``decide()`` that fails, returns ``None``
    or raises a ``BaseException`` other than ``KeyboardInterrupt``) becomes one ``EngineError`` naming the
    scheduler (chained: a traceback shows where)."""
    scheduler = factory() if factory is not None else make_scheduler(name)
    try:
        return simulate(cluster, jobs, scheduler, seed=seed, options=options, on_progress=on_progress)
    except (EngineError, KeyboardInterrupt, MemoryError):  # the engine's own one-line errors, and a stop
        raise
    except BaseException as exc:
        hint = " (decide() must return or yield decisions)" if "not iterable" in str(exc) else ""
        raise EngineError(f"scheduler {name!r} failed while it ran: {type(exc).__name__}: {exc}{hint}") from exc


def named_scenario(
    name: str,
    cluster: str,
    n_jobs: int = 200,
    load: float = 1.0,
    workload: Mapping[str, Any] | None = None,
    trace: str | None = None,
    skip_jobs: int = 0,
) -> Scenario:
    """An evaluation scenario: ``n_jobs`` generated jobs at ``load`` (extra generator arguments in
    ``workload``), or, with ``trace`` (a trusted path), blocks of ``n_jobs`` jobs of the trace after its first
    ``skip_jobs``, each scaled to offer ``load``."""
    if trace is None:
        spec = WorkloadSpec.from_generator_args(n_jobs, load, **dict(workload or {}))
    else:
        spec = WorkloadSpec(source="trace", trace_path=trace, block=n_jobs, load=load, skip=skip_jobs)
    return Scenario(cluster=cluster, workload=spec, name=name)


#: Named evaluation scenarios (the shipped models' training scenarios and the generalisation tests).
SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        named_scenario("v100-32", "4x8:V100-32", 150, 1.5),
        named_scenario("mixed-32", "2x8:A100-80,4x4:V100-32", 250, 1.5),
        named_scenario("v100-64", "8x8:V100-32", 400, 1.5),
        named_scenario("v100-128", "16x8:V100-32", 800, 1.5),
        named_scenario("mixed-128", "8x8:A100-80,16x4:V100-32", 800, 1.5),
        named_scenario("a100-t4-48", "4x4:A100-80,4x8:T4", 250, 1.5),
        named_scenario("h100-v100-32", "2x8:H100-80,2x8:V100-32", 250, 1.5),
        # Held out from every training config (issue 38): A100, V100 and T4 nodes, 1,500 jobs at load 0.85.
        named_scenario("hetero-1500", "4x8:A100-80,4x8:V100-32,4x8:T4", 1500, 0.85),
        named_scenario("hpc-32", "4x8:V100-32", 150, 1.3, {"mix": {"training": 0.6, "batch": 0.4}, "users": 8}),
        named_scenario("hpc-64", "8x8:V100-32", 400, 1.3, {"mix": {"training": 0.6, "batch": 0.4}, "users": 8}),
        named_scenario("hpc-128", "16x8:V100-32", 800, 1.3, {"mix": {"training": 0.6, "batch": 0.4}, "users": 8}),
        # The trace's first 300 jobs span 484 h and hold 109,797 GPU-hours (the next 60 blocks: 1,121 at the median,
        # 18,647 at most): no arrival scaling makes that block a window of the same kind, so no seed uses it.
        named_scenario("philly-64", "8x8:V100-32", 300, 1.2, trace="../shared/traces/philly/philly.csv", skip_jobs=300),
    )
}


def scenario_from_dict(data: Mapping[str, Any]) -> Scenario:
    """An evaluated scenario as an evaluation's JSON (and a model card) stores it: a scenario
    (:meth:`Scenario.to_dict`), or the flat form cards written before it hold (``name``, ``cluster``,
    ``n_jobs``, ``load``, ``workload``, ``trace``, ``preset``, ``skip_jobs``). Trusted: a card may name a trace."""
    if not isinstance(data, Mapping):
        raise EngineError("an evaluated scenario must be a JSON object")
    if "n_jobs" not in data:
        return Scenario.from_dict(data, trusted=True)
    reject_unknown_keys(data, LEGACY_KEYS, "evaluated scenario")
    if data.get("preset"):
        return replace(preset_scenario(data["preset"]), name=data.get("name") or data["preset"])
    return named_scenario(
        data["name"],
        data["cluster"],
        data["n_jobs"],
        data["load"],
        data.get("workload"),
        data.get("trace"),
        data.get("skip_jobs", 0),
    )


def describe(sc: Scenario, quote_cluster: str = "`") -> str:
    """One line: the cluster (between ``quote_cluster``), the jobs per seed and the load, and how a trace's
    workloads are cut."""
    w, cluster = sc.workload, f"{quote_cluster}{sc.cluster}{quote_cluster}"
    if w.source != "trace" or not w.block:
        return f"{cluster}, {w.n_jobs} jobs, load {w.load}"
    return (
        f"{cluster}, {w.block} jobs, load {w.load}, trace {w.trace_path or w.trace_name}: a seed's block of "
        f"{w.block} consecutive jobs"
        + (f" after its first {w.skip:,}" if w.skip else "")
        + ", arrivals scaled to offer the load while they last"
    )


def parse_scenario(text: str) -> Scenario:
    """A scenario from a name in :data:`SCENARIOS`, a preset name, a scenario JSON file (``*.json`` or any file
    that exists; read as trusted: it may name a trace file) or a ``key=value;...`` spec."""
    text = text.strip()
    if text in SCENARIOS:
        return SCENARIOS[text]
    if text in preset_names():
        return preset_scenario(text)
    if "=" not in text and (text.endswith(".json") or Path(text).is_file()):
        return Scenario.from_json(Path(text).read_bytes(), trusted=True)
    if "=" not in text:
        raise EngineError(
            f"unknown scenario {text!r}; named: {', '.join(SCENARIOS)}; presets: "
            f"{', '.join(preset_names())}; a scenario file (.json); "
            "or a spec like 'cluster=4x8:V100-32;jobs=200;load=1.5'"
        )
    kv: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        key, eq, value = part.partition("=")
        if not eq:
            raise EngineError(f"scenario spec part {part!r}: expected key=value")
        kv[key.strip()] = value.strip()
    if "cluster" not in kv:
        raise EngineError("scenario spec needs cluster=SPEC (e.g. cluster=4x8:V100-32;jobs=200;load=1.5)")
    try:
        n_jobs, load = int(kv.pop("jobs", 200)), float(kv.pop("load", 1.0))
        workload: dict[str, Any] = {}
        if "arrival" in kv:
            workload["arrival"] = kv.pop("arrival")
        if "users" in kv:
            workload["users"] = int(kv.pop("users"))
        skip_jobs = int(kv.pop("skip", 0))
    except ValueError as exc:
        raise EngineError(f"scenario spec {text!r}: {exc}") from None
    cluster, trace = kv.pop("cluster"), kv.pop("trace", None)
    reject_unknown_keys(kv, {"cluster", "jobs", "load", "arrival", "users", "trace", "skip"}, "scenario spec")
    if n_jobs < 1 or not load > 0 or skip_jobs < 0:
        raise EngineError(f"scenario spec {text!r}: jobs must be >= 1, load > 0 and skip >= 0")
    if skip_jobs and trace is None:
        raise EngineError(f"scenario spec {text!r}: skip=N needs trace=PATH")
    parse_cluster(cluster)  # fail early with the cluster parser's message
    return named_scenario(text, cluster, n_jobs, load, workload, trace, skip_jobs)


# Two-sided 95 % Student t quantiles for 1..30 degrees of freedom (beyond: the normal 1.96).
_T95 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def mean_ci(values: Sequence[float]) -> tuple[float, float]:
    """(mean, half-width of the 95 % confidence interval) of ``values``, ignoring NaN; half-width NaN if n < 2."""
    x = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if x.size == 0:
        return math.nan, math.nan
    if x.size < 2:
        return float(x.mean()), math.nan
    t = _T95[x.size - 2] if x.size - 1 <= len(_T95) else 1.96
    return float(x.mean()), float(t * x.std(ddof=1) / math.sqrt(x.size))


@dataclass(frozen=True)
class Evaluation:
    """Per-seed metrics of every scheduler on one scenario.

    Attributes:
        scenario: what was run (seed ``k`` is ``scenario.with_seed(k)``).
        seeds: workload seeds.
        runs: scheduler -> one ``summarize(...).to_dict()`` per seed (plus any extra metrics), in ``seeds`` order.
        baseline: the scheduler paired differences are taken against.
    """

    scenario: Scenario
    seeds: tuple[int, ...]
    runs: dict[str, list[dict[str, Any]]]
    baseline: str

    @property
    def schedulers(self) -> list[str]:
        return list(self.runs)

    @property
    def metric_keys(self) -> list[str]:
        """Every metric of the runs: those of :data:`engine.analysis.metrics.METRICS`, then extra ones (the
        energy metrics, ``extra``'s)."""
        first = self.runs[self.baseline][0]
        return [*METRICS, *(k for k in first if k not in METRICS)]

    def values(self, scheduler: str, metric: str) -> list[float]:
        return [math.nan if r[metric] is None else float(r[metric]) for r in self.runs[scheduler]]

    def stats(self) -> dict[str, dict[str, tuple[float, float]]]:
        """metric -> scheduler -> (mean, CI half-width)."""
        return {m: {s: mean_ci(self.values(s, m)) for s in self.runs} for m in self.metric_keys}

    def paired(self) -> dict[str, dict[str, tuple[float, float, float]]]:
        """metric -> scheduler -> (mean difference vs baseline, CI half-width, relative difference)."""
        out: dict[str, dict[str, tuple[float, float, float]]] = {}
        for m in self.metric_keys:
            base = np.array(self.values(self.baseline, m))
            row = {}
            for s in self.runs:
                if s == self.baseline:
                    continue
                diff = np.array(self.values(s, m)) - base
                mean, half = mean_ci(diff.tolist())
                bm = float(np.nanmean(base)) if not np.isnan(base).all() else math.nan
                row[s] = (mean, half, mean / bm if bm not in (0.0,) and not math.isnan(bm) else math.nan)
            out[m] = row
        return out

    def to_dict(self) -> dict[str, Any]:
        def clean(v: float) -> float | None:
            return None if v is None or (isinstance(v, float) and math.isnan(v)) else v

        return {
            "scenario": self.scenario.to_dict(),
            "seeds": list(self.seeds),
            "baseline": self.baseline,
            "stats": {
                m: {s: {"mean": clean(a), "ci95": clean(b)} for s, (a, b) in row.items()}
                for m, row in self.stats().items()
            },
            "paired": {
                m: {s: {"diff": clean(a), "ci95": clean(b), "relative": clean(c)} for s, (a, b, c) in row.items()}
                for m, row in self.paired().items()
            },
            "runs": self.runs,
        }


def evaluate(
    schedulers: Sequence[str],
    scenario: str | Scenario,
    seeds: int | Sequence[int],
    *,
    baseline: str | None = None,
    extra: Mapping[str, Callable[[Result], float]] | None = None,
    on_run: Callable[[str, int], None] | None = None,
    options: RunOptions | None = None,
    energy: EnergyModel | None = None,
    built: Mapping[str, Callable[[], Scheduler]] | None = None,
) -> Evaluation:
    """Run every scheduler on the scenario's workload for each seed (``seeds=n`` means ``0..n-1``).

    ``extra`` adds metrics computed from each run's :class:`~engine.sim.simulator.Result` (e.g. a model's objective);
    ``options`` replace the scenario's run options (by default its own: for a named scenario, preemption that
    loses nothing); ``energy`` adds energy, cost and carbon to every run's metrics (as ``summarize`` does);
    ``built`` (name -> factory) builds the schedulers it names, which need not be registered (a teacher within a
    model's own encoding), instead of the registry.
    """
    built = built or {}
    sc = scenario if isinstance(scenario, Scenario) else parse_scenario(scenario)
    if options is not None:
        sc = replace(sc, options=options)
    names = [s.strip() for s in schedulers if s.strip()]
    if not names:
        raise EngineError("no schedulers to evaluate")
    if len(set(names)) != len(names):
        raise EngineError(f"schedulers repeat a name: {names}")
    baseline = baseline or names[0]
    if baseline not in names:
        raise EngineError(f"baseline {baseline!r} is not among the evaluated schedulers {names}")
    for n in names:  # unknown names fail before any simulation runs
        if n not in built:
            make_scheduler(n)
    seed_list = tuple(range(seeds)) if isinstance(seeds, int) else tuple(int(s) for s in seeds)
    if not seed_list:
        raise EngineError("need at least one seed")
    cluster = sc.build_cluster(trusted=True)
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for seed in seed_list:
        run = sc.with_seed(seed)
        jobs = run.workload.build_jobs(cluster)
        for n in names:
            result = run_scheduler(n, cluster, jobs, run.seed, run.options, factory=built.get(n))
            row = summarize(result, energy=energy).to_dict()
            row.update({k: float(f(result)) for k, f in (extra or {}).items()})
            runs[n].append(row)
            if on_run is not None:
                on_run(n, seed)
    return Evaluation(sc, seed_list, runs, baseline)
