"""Seeded multi-run evaluation: every scheduler on the same workloads, mean and 95 % CI of every metric.

``python -m engine evaluate --schedulers first-fit,sjf,rl:wait-mlp --scenario mixed --seeds 10`` runs each
scheduler on workload seeds ``0..9`` of the scenario (the same jobs for every scheduler) and prints, per metric
of :func:`engine.analysis.metrics.summarize`, the mean over seeds and its 95 % confidence interval (Student t), then
the **paired** differences against ``--baseline``: for each seed, scheduler minus baseline on the same jobs,
whose mean and CI say whether a scheduler is better than the baseline beyond seed-to-seed noise.

A scenario is a name (:data:`SCENARIOS`, or a teaching preset of :mod:`engine.analysis.presets`) or a
spec ``"cluster=4x8:V100-32;jobs=200;load=1.5[;arrival=bursty][;users=10][;trace=PATH[;skip=N]]"``. With
``trace``, seed ``k`` takes the ``k``-th block of ``jobs`` consecutive jobs of the trace (after its first ``skip``
jobs) and stretches or compresses its arrivals so that the block offers ``load`` while its arrivals last (see
:func:`_trace_block`).

This module imports torch only when an ``rl:`` scheduler is evaluated (through the scheduler registry).
Training workloads draw seeds at or above ``engine.analysis.workload.TRAIN_SEED_MIN`` (2**20); evaluation seeds
``0..n-1`` are therefore never training workloads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from engine.analysis.metrics import METRICS, summarize
from engine.errors import EngineError, reject_unknown_keys
from engine.schedulers import make_scheduler
from engine.sim.cluster import Cluster, parse_cluster
from engine.sim.job import Job
from engine.sim.options import RunOptions
from engine.sim.simulator import Result, simulate

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class EvalScenario:
    """A family of seeded workloads on one cluster.

    Attributes:
        name: label for reports.
        cluster: cluster spec.
        n_jobs: jobs per workload.
        load: offered load.
        workload: extra generator arguments (``arrival``, ``users``, ``mix``, ...).
        trace: a trace file (relative paths are tried from the working directory, then from the repository);
            seeds then pick consecutive blocks of ``n_jobs`` jobs instead of generating.
        skip_jobs: with ``trace``: jobs at the start of the trace that no block uses.
        preset: a teaching preset of :mod:`engine.analysis.presets`; its cluster and seeded workload are used instead.
    """

    name: str
    cluster: str
    n_jobs: int = 200
    load: float = 1.0
    workload: Mapping[str, Any] = field(default_factory=dict)
    trace: str | None = None
    preset: str | None = None
    skip_jobs: int = 0

    def build_cluster(self) -> Cluster:
        if self.preset is not None:
            from engine.analysis.presets import load_preset

            return load_preset(self.preset).build_cluster()
        return parse_cluster(self.cluster)

    def jobs(self, seed: int) -> tuple[Job, ...]:
        """The workload of ``seed`` (same seed, same jobs)."""
        if self.preset is not None:
            from engine.analysis.presets import load_preset

            return load_preset(self.preset).build_jobs(seed)
        cluster = self.build_cluster()
        if self.trace is None:
            from engine.analysis.workload import make_jobs

            return make_jobs(cluster, self.n_jobs, self.load, seed, self.workload)
        path = Path(self.trace)
        if not path.is_absolute() and not path.exists() and (REPO / path).exists():
            path = REPO / path  # a path relative to the repository, e.g. ../shared/traces/...
        return _trace_block(_load_trace(str(path))[self.skip_jobs:], seed, self.n_jobs, self.load, cluster.n_gpus)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "cluster": self.cluster, "n_jobs": self.n_jobs, "load": self.load,
                "workload": dict(self.workload), "trace": self.trace, "preset": self.preset,
                "skip_jobs": self.skip_jobs}


#: Named evaluation scenarios (the shipped models' training scenarios and the generalisation tests).
SCENARIOS: dict[str, EvalScenario] = {s.name: s for s in (
    EvalScenario("v100-32", "4x8:V100-32", 150, 1.5),
    EvalScenario("mixed-32", "2x8:A100-80,4x4:V100-32", 250, 1.5),
    EvalScenario("v100-64", "8x8:V100-32", 400, 1.5),
    EvalScenario("v100-128", "16x8:V100-32", 800, 1.5),
    EvalScenario("mixed-128", "8x8:A100-80,16x4:V100-32", 800, 1.5),
    EvalScenario("a100-t4-48", "4x4:A100-80,4x8:T4", 250, 1.5),
    EvalScenario("h100-v100-32", "2x8:H100-80,2x8:V100-32", 250, 1.5),
    EvalScenario("hpc-32", "4x8:V100-32", 150, 1.3, {"mix": {"training": 0.6, "batch": 0.4}, "users": 8}),
    EvalScenario("hpc-64", "8x8:V100-32", 400, 1.3, {"mix": {"training": 0.6, "batch": 0.4}, "users": 8}),
    EvalScenario("hpc-128", "16x8:V100-32", 800, 1.3, {"mix": {"training": 0.6, "batch": 0.4}, "users": 8}),
    # The trace's first 300 jobs span 484 h and hold 109,797 GPU-hours (the next 60 blocks: 1,121 at the median,
    # 18,647 at most): no arrival scaling makes that block a window of the same kind, so no seed uses it.
    EvalScenario("philly-64", "8x8:V100-32", 300, 1.2, trace="../shared/traces/philly/philly.csv", skip_jobs=300),
)}


@lru_cache(maxsize=4)
def _load_trace(path: str) -> tuple[Job, ...]:
    from engine.traces import load_trace

    return load_trace(path).jobs


def _trace_block(jobs: Sequence[Job], k: int, n: int, load: float, n_gpus: int) -> tuple[Job, ...]:
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
    block = jobs[k * n:(k + 1) * n]
    since = np.array([j.submit_s for j in block]) - block[0].submit_s
    span = float(since[-1])
    if span <= 0:
        return tuple(replace(j, job_id=i, submit_s=0.0) for i, j in enumerate(block))
    gpus = np.array([j.gpus * j.gpu_fraction for j in block])
    run_s = np.array([j.duration_s for j in block])
    to_last = span - since

    def offered(scale: float) -> float:
        return float((gpus * np.minimum(run_s, scale * to_last)).sum() / (scale * span * n_gpus))

    lo, hi = 1e-6, 1e6
    for _ in range(100):  # geometric bisection: 2**-100 of the factor's log range
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if offered(mid) > load else (lo, mid)
    return tuple(replace(j, job_id=i, submit_s=float(t * hi)) for i, (j, t) in enumerate(zip(block, since)))


def parse_scenario(text: str) -> EvalScenario:
    """A scenario from a name in :data:`SCENARIOS`, a preset name, or a ``key=value;...`` spec."""
    text = text.strip()
    if text in SCENARIOS:
        return SCENARIOS[text]
    preset = _preset_scenario(text)
    if preset is not None:
        return preset
    if "=" not in text:
        from engine.analysis.presets import PRESETS

        raise EngineError(f"unknown scenario {text!r}; named: {', '.join(SCENARIOS)}; presets: {', '.join(PRESETS)}; "
                          "or a spec like 'cluster=4x8:V100-32;jobs=200;load=1.5'")
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
    return EvalScenario(text, cluster, n_jobs, load, workload, trace, skip_jobs=skip_jobs)


def _preset_scenario(name: str) -> EvalScenario | None:
    """The scenario of teaching preset ``name`` (:mod:`engine.analysis.presets`), or None if there is no such preset."""
    from engine.analysis.presets import PRESETS

    preset = PRESETS.get(name)
    if preset is None:
        return None
    cluster = preset.build_cluster()
    n_jobs = len(preset.build_jobs(0))
    load = float(preset.workload.get("generate", {}).get("load", math.nan))
    return EvalScenario(name, cluster.to_shorthand(), n_jobs, load, preset=name)


# Two-sided 95 % Student t quantiles for 1..30 degrees of freedom (beyond: the normal 1.96).
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)


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
        scenario: what was run.
        seeds: workload seeds.
        runs: scheduler -> one ``summarize(...).to_dict()`` per seed (plus any extra metrics), in ``seeds`` order.
        baseline: the scheduler paired differences are taken against.
    """

    scenario: EvalScenario
    seeds: tuple[int, ...]
    runs: dict[str, list[dict[str, Any]]]
    baseline: str

    @property
    def schedulers(self) -> list[str]:
        return list(self.runs)

    @property
    def metric_keys(self) -> list[str]:
        """Every metric of the runs: those of :data:`engine.analysis.metrics.METRICS`, then extra ones."""
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
            "stats": {m: {s: {"mean": clean(a), "ci95": clean(b)} for s, (a, b) in row.items()}
                      for m, row in self.stats().items()},
            "paired": {m: {s: {"diff": clean(a), "ci95": clean(b), "relative": clean(c)}
                           for s, (a, b, c) in row.items()} for m, row in self.paired().items()},
            "runs": self.runs,
        }


def evaluate(schedulers: Sequence[str], scenario: str | EvalScenario, seeds: int | Sequence[int], *,
             baseline: str | None = None, extra: Mapping[str, Callable[[Result], float]] | None = None,
             on_run: Callable[[str, int], None] | None = None,
             options: RunOptions | None = None) -> Evaluation:
    """Run every scheduler on the scenario's workload for each seed (``seeds=n`` means ``0..n-1``).

    ``extra`` adds metrics computed from each run's :class:`~engine.sim.simulator.Result` (e.g. a model's objective);
    ``options`` are the runs' options (default :class:`~engine.sim.options.RunOptions`: preemption loses nothing).
    """
    sc = scenario if isinstance(scenario, EvalScenario) else parse_scenario(scenario)
    names = [s.strip() for s in schedulers if s.strip()]
    if not names:
        raise EngineError("no schedulers to evaluate")
    if len(set(names)) != len(names):
        raise EngineError(f"schedulers repeat a name: {names}")
    baseline = baseline or names[0]
    if baseline not in names:
        raise EngineError(f"baseline {baseline!r} is not among the evaluated schedulers {names}")
    for n in names:  # unknown names fail before any simulation runs
        make_scheduler(n)
    seed_list = tuple(range(seeds)) if isinstance(seeds, int) else tuple(int(s) for s in seeds)
    if not seed_list:
        raise EngineError("need at least one seed")
    cluster = sc.build_cluster()
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for seed in seed_list:
        jobs = sc.jobs(seed)
        for n in names:
            result = simulate(cluster, jobs, make_scheduler(n), seed=seed, options=options)
            row = summarize(result).to_dict()
            row.update({k: float(f(result)) for k, f in (extra or {}).items()})
            runs[n].append(row)
            if on_run is not None:
                on_run(n, seed)
    return Evaluation(sc, seed_list, runs, baseline)
