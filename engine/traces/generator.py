"""Seeded synthetic workloads: job types with their own distributions, arrivals at a target offered load.

    from engine.traces.generator import generate
    jobs = generate("4x8:A100-80", 1000, load=0.8, seed=1)   # same arguments -> same jobs, bit for bit

**Offered load** is ``arrival rate x mean GPU-seconds per job / cluster GPUs`` (GPU-seconds at reference
speed, fractional jobs counting their fraction). The generator first draws every job, then sets the
arrival rate from the drawn jobs' mean, so the realised load is the target up to arrival noise.
``python -m engine trace info FILE --cluster SPEC`` measures it back. On GPUs faster than the reference
(``speed`` > 1) jobs finish sooner, so the busy fraction of such a cluster is below the offered load.

**Where the defaults come from** (computed from the real traces in ``../shared/traces``, see
``sample_traces/README.md``):

* Philly (82,247 jobs, Microsoft, 2017): 93.2 % of jobs use 1 GPU, 2.2 % 2, 2.3 % 4, 2.0 % 8, 0.24 % 16,
  0.1 % more. Median duration 1,144 s (about 19 minutes), mean 13,136 s; quantiles p10 61 s, p25 115 s,
  p75 2,932 s, p90 11,265 s, p99 254,758 s (3 days). Multi-GPU jobs run far longer: median 17,410 s on
  4 GPUs, 23,683 s on 8. A log-normal fit of log-durations gives sigma 2.0 (1 GPU) to 2.8 (4-8 GPUs).
  15 virtual clusters (tenants): the largest submits 50.1 % of jobs, the next 19.6 %, 12.1 %, 9.0 %.
  Jobs per hour of day vary from 0.64x to 2.09x the daily mean.
* Alibaba openb (8,152 pods, 2023): 1,088 pods ask for no GPU; of the GPU pods 98.9 % ask for 1 GPU and
  43.6 % of them for a fraction of one (most common shares 0.81, 0.47, 0.32, 0.65; median 0.47).
  Median lifetime of GPU pods 545 s.
* KTH SP2 (SWF): 1.7 % of jobs ran longer than the user's requested time; users over-estimate.

**Job types** (:data:`DEFAULT_TYPES`; the mix is a parameter, default :data:`DEFAULT_MIX`):

================  ======================================  ==================  ============  ========
type              GPUs (probability)                      GPU fraction        median, sigma  priority
================  ======================================  ==================  ============  ========
``training``      1: .65, 2: .08, 4: .12, 8: .12, 16: .03   whole               2 h, 1.6       0 / 1
``inference``     1                                       .25/.5/.75/1 (80 %  10 min, 1.2    2
                                                          fractional)
``batch``         1: .9, 2: .1                            whole               30 min, 1.3    0
``interactive``   1                                       .25/.5/1            5 min, 1.0     1
================  ======================================  ==================  ============  ========

Durations are log-normal (median, sigma of the log), clipped to [30 s, 7 days] and rounded to seconds.
With the default mix (training .25, inference .3, batch .3, interactive .15), measured on 20,000 jobs
(seed 1): 88.4 % of jobs ask for at most one GPU (Philly: 93.2 %), the median duration is 1,226 s, about
20 minutes (Philly: 19), 34 % of jobs are fractional (between Philly's none and openb's 44 %) and 3.3 %
run longer than their estimate (KTH: 1.7 %). GPU memory per GPU takes few values
(0, 8, 16, 24, 32, 40, 80 GiB) and fractions few values (0.1, 0.25, 0.5, 0.75, 1), so workloads have few
distinct job shapes (schedulers memoise failed shapes). Choices the cluster cannot hold (more GPUs than
its largest GPU type has, more memory than its largest GPU) are removed and the rest renormalised.

**Arrivals**: ``poisson`` (exponential gaps); ``bursty`` (a two-state process: bursts cover
``burst_share`` of the time at ``burst_factor`` times the base rate, same mean rate); ``diurnal``
(rate ``1 + diurnal_amplitude * cos(2 pi (t - 14 h) / 24 h)`` times the mean, peak at 14:00, t = 0 at
midnight, when the first job arrives). **Users**: ``users`` tenants, tenant ``k`` (from 0) submitting with probability proportional
to ``1 / (k + 1) ** user_skew`` (Zipf; 1.2 with 15 users gives the largest 38 %). **Estimates**:
``duration x exp(N(log overestimate, estimate_error))`` rounded up to a minute (0 error and
``overestimate=1`` give exact estimates, still rounded up). **Deadlines**: none by default; ``deadlines`` names
a law of :mod:`engine.traces.deadlines` (``elasticflow``, ``gavel``) and ``best_effort`` the share of jobs left
without one; they are drawn last, so the rest of the workload is the same with and without them. **Elastic
jobs**: none by default; ``elastic`` is the share of jobs made elastic, drawn among the whole-GPU jobs (at most all
of them) after the deadlines, so the rest is again the same; such a job may run on 1 to ``ELASTIC_GROWTH`` times its GPUs (at most the largest GPU
type's count) with the scaling curve ``scaling`` (default :data:`DEFAULT_SCALING`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import numpy as np

from engine.errors import reject_unknown_keys
from engine.sim.cluster import Cluster, parse_cluster
from engine.sim.job import Job
from engine.sim.scaling import scaling_curve
from engine.traces.deadlines import NO_DEADLINES, check_law, draw_deadlines

#: GPU fractions and per-GPU memory (GiB) the default job types use.
FRACTIONS = (0.1, 0.25, 0.5, 0.75, 1.0)
VRAM_GIB = (0.0, 8.0, 16.0, 24.0, 32.0, 40.0, 80.0)
ARRIVALS = ("poisson", "bursty", "diurnal")
MIN_DURATION_S, MAX_DURATION_S = 30.0, 7 * 86400.0
#: The curve of generated elastic jobs unless one is named: ElasticFlow's measured ResNet-50 on A100.
DEFAULT_SCALING = "resnet50-a100"
#: A generated elastic job may grow to this many times its requested GPUs and shrink to 1: an estimate (ElasticFlow
#: scales jobs from 1 GPU up to what their throughput tables cover; REFERENCES.md, "Elastic jobs").
ELASTIC_GROWTH = 4
DAY_S, PEAK_S = 86400.0, 14 * 3600.0


@dataclass(frozen=True)
class JobTypeSpec:
    """The distributions of one job type. Each ``dict`` maps a value to its probability (normalised)."""

    gpus: Mapping[int, float] = field(default_factory=lambda: {1: 1.0})
    fraction: Mapping[float, float] = field(default_factory=lambda: {1.0: 1.0})  # single-GPU jobs only
    vram_gib: Mapping[float, float] = field(default_factory=lambda: {0.0: 1.0})
    median_s: float = 1800.0
    sigma: float = 1.0
    priority: Mapping[int, float] = field(default_factory=lambda: {0: 1.0})

    def __post_init__(self) -> None:
        for name in ("gpus", "fraction", "vram_gib", "priority"):
            table = getattr(self, name)
            if not table or any(not (math.isfinite(p) and p >= 0) for p in table.values()) or sum(table.values()) <= 0:
                raise ValueError(f"{name}: expected value -> probability with probabilities >= 0 summing to > 0")
        if any(int(g) != g or g < 1 for g in self.gpus):
            raise ValueError("gpus: GPU counts must be integers >= 1")
        if any(not 0 < f <= 1 for f in self.fraction):
            raise ValueError("fraction: GPU fractions must be in (0, 1]")
        if any(not (math.isfinite(v) and v >= 0) for v in self.vram_gib):
            raise ValueError("vram_gib: memory must be >= 0")
        if not (math.isfinite(self.median_s) and self.median_s > 0):
            raise ValueError("median_s must be > 0")
        if not (math.isfinite(self.sigma) and self.sigma >= 0):
            raise ValueError("sigma must be >= 0")


DEFAULT_TYPES: dict[str, JobTypeSpec] = {
    "training": JobTypeSpec(
        gpus={1: 0.65, 2: 0.08, 4: 0.12, 8: 0.12, 16: 0.03},
        vram_gib={16.0: 0.25, 32.0: 0.35, 40.0: 0.25, 80.0: 0.15},
        median_s=7200.0,
        sigma=1.6,
        priority={0: 0.7, 1: 0.3},
    ),
    "inference": JobTypeSpec(
        fraction={0.25: 0.3, 0.5: 0.35, 0.75: 0.15, 1.0: 0.2},
        vram_gib={8.0: 0.6, 16.0: 0.4},
        median_s=600.0,
        sigma=1.2,
        priority={2: 1.0},
    ),
    "batch": JobTypeSpec(gpus={1: 0.9, 2: 0.1}, vram_gib={8.0: 0.3, 16.0: 0.5, 24.0: 0.2}, median_s=1800.0, sigma=1.3),
    "interactive": JobTypeSpec(
        fraction={0.25: 0.3, 0.5: 0.4, 1.0: 0.3},
        vram_gib={8.0: 0.7, 16.0: 0.3},
        median_s=300.0,
        sigma=1.0,
        priority={1: 1.0},
    ),
}
DEFAULT_MIX: dict[str, float] = {"training": 0.25, "inference": 0.30, "batch": 0.30, "interactive": 0.15}


def job_types(overrides: Mapping[str, JobTypeSpec | Mapping[str, Any]] | None = None) -> dict[str, JobTypeSpec]:
    """:data:`DEFAULT_TYPES` with some fields replaced: ``{"training": {"median_s": 600}}`` or a whole spec.

    JSON keys (strings) of the ``gpus``, ``fraction``, ``vram_gib`` and ``priority`` tables are converted to
    numbers, so presets can write ``{"gpus": {"8": 1}}``.
    """
    types = dict(DEFAULT_TYPES)
    for name, spec in (overrides or {}).items():
        if isinstance(spec, JobTypeSpec):
            types[name] = spec
            continue
        fields = dict(spec)
        reject_unknown_keys(fields, set(JobTypeSpec.__dataclass_fields__), f"job type {name!r}", ValueError)
        for key, conv in (("gpus", int), ("fraction", float), ("vram_gib", float), ("priority", int)):
            if key in fields:
                fields[key] = {conv(float(k)): float(v) for k, v in fields[key].items()}
        types[name] = replace(types.get(name, JobTypeSpec()), **fields)
    return types


def _table(table: Mapping, keep=lambda v: True) -> tuple[np.ndarray, np.ndarray]:
    """Values and normalised probabilities of a table, restricted to ``keep``; falls back to the smallest."""
    items = sorted((k, p) for k, p in table.items() if keep(k) and p > 0)
    if not items:
        items = [(min(table), 1.0)]
    values = np.array([k for k, _ in items])
    probs = np.array([p for _, p in items], dtype=float)
    return values, probs / probs.sum()


def generate(
    cluster: Cluster | str,
    n_jobs: int,
    load: float = 0.8,
    seed: int = 0,
    *,
    mix: Mapping[str, float] | None = None,
    types: Mapping[str, JobTypeSpec | Mapping[str, Any]] | None = None,
    users: int = 10,
    user_skew: float = 1.2,
    arrival: str = "poisson",
    estimate_error: float = 0.4,
    overestimate: float = 2.0,
    burst_factor: float = 4.0,
    burst_share: float = 0.1,
    diurnal_amplitude: float = 0.5,
    allowed_share: float = 0.0,
    deadlines: str = NO_DEADLINES,
    best_effort: float = 0.0,
    elastic: float = 0.0,
    scaling: str = "",
) -> tuple[Job, ...]:
    """Draw ``n_jobs`` jobs for ``cluster`` at offered load ``load`` (see the module docstring).

    Args:
        cluster: the cluster (or its spec) the workload is sized for.
        n_jobs: number of jobs (>= 1).
        load: target offered load (> 0; 1 = the arrivals would keep every GPU busy).
        seed: the random seed; the same arguments give the same jobs.
        mix: job type -> share of jobs (default :data:`DEFAULT_MIX`).
        types: per-type overrides of :data:`DEFAULT_TYPES` (see :func:`job_types`).
        users, user_skew: number of tenants and their Zipf skew (0 = equally active).
        arrival: ``poisson``, ``bursty`` or ``diurnal``.
        estimate_error, overestimate: sigma of the log-normal estimate error and its median factor.
        burst_factor, burst_share: for ``bursty``: rate multiplier in bursts and share of time in bursts.
        diurnal_amplitude: for ``diurnal``: relative swing of the rate over a day, in [0, 1].
        allowed_share: share of jobs pinned to one GPU type of the cluster (a type their memory fits).
        deadlines, best_effort: the deadline law (:data:`~engine.traces.deadlines.DEADLINE_LAWS` or ``none``)
            and the share of jobs it leaves without a deadline.
        elastic, scaling: the share of jobs made elastic (whole-GPU ones), in [0, 1], and their curve (a name in
            :data:`~engine.sim.scaling.SCALING_CURVES`; ``""``: :data:`DEFAULT_SCALING`).

    Returns:
        Jobs numbered ``0..n-1`` in submit order, the first submitted at 0.
    """
    cluster = parse_cluster(cluster)
    _check_args(
        n_jobs,
        load,
        users,
        user_skew,
        arrival,
        estimate_error,
        overestimate,
        burst_factor,
        burst_share,
        diurnal_amplitude,
        allowed_share,
    )
    check_law(deadlines, best_effort)
    if not (isinstance(elastic, (int, float)) and 0 <= elastic <= 1):
        raise ValueError(f"elastic must be a share in [0, 1], got {elastic!r}")
    curve = scaling_curve(scaling or DEFAULT_SCALING).name
    spec_by_type = job_types(types)
    mix = dict(DEFAULT_MIX if mix is None else mix)
    unknown = set(mix) - set(spec_by_type)
    if unknown:
        raise ValueError(
            f"mix: unknown job types {sorted(unknown)}; known: {', '.join(spec_by_type)} (add new ones through types=)"
        )
    if not mix or any(not (math.isfinite(v) and v >= 0) for v in mix.values()) or sum(mix.values()) <= 0:
        raise ValueError("mix: expected job type -> share with shares >= 0 summing to > 0")
    type_names, type_p = _table(mix)
    rng = np.random.default_rng(seed)

    by_type = cluster.gpus_by_type()
    max_vram = max(cluster.catalog[t].vram_gib for t in by_type)
    max_gpus = max(by_type.values())

    kind = rng.choice(len(type_names), size=n_jobs, p=type_p)
    gpus = np.ones(n_jobs, dtype=np.int64)
    frac = np.ones(n_jobs)
    vram = np.zeros(n_jobs)
    dur = np.zeros(n_jobs)
    prio = np.zeros(n_jobs, dtype=np.int64)
    for t, name in enumerate(type_names):
        sel = np.flatnonzero(kind == t)
        if not len(sel):
            continue
        spec = spec_by_type[name]
        values, p = _table(spec.gpus, lambda g: g <= max_gpus)
        gpus[sel] = rng.choice(values, size=len(sel), p=p)
        values, p = _table(spec.fraction)
        frac[sel] = np.where(gpus[sel] == 1, rng.choice(values, size=len(sel), p=p), 1.0)
        values, p = _table(spec.vram_gib, lambda v: v <= max_vram)
        vram[sel] = rng.choice(values, size=len(sel), p=p)
        raw = spec.median_s * np.exp(spec.sigma * rng.standard_normal(len(sel)))
        dur[sel] = np.maximum(1.0, np.round(np.clip(raw, MIN_DURATION_S, MAX_DURATION_S)))
        values, p = _table(spec.priority)
        prio[sel] = rng.choice(values, size=len(sel), p=p)

    weights = 1.0 / np.arange(1, users + 1) ** user_skew
    user = rng.choice(users, size=n_jobs, p=weights / weights.sum())
    factor = np.exp(math.log(overestimate) + estimate_error * rng.standard_normal(n_jobs))
    estimate = np.maximum(60.0, np.ceil(dur * factor / 60.0) * 60.0)
    allowed = _pinned_types(rng, cluster, vram, allowed_share)

    gpu_s = dur * gpus * frac
    rate = load * cluster.n_gpus / float(gpu_s.mean())
    submit = _arrivals(rng, n_jobs, rate, arrival, burst_factor, burst_share, diurnal_amplitude)
    due = draw_deadlines(deadlines, submit, dur, best_effort, rng)  # last: the draws above do not depend on it
    # elastic after the deadlines, nothing drawn without: a rigid workload is the same as before
    whole = frac == 1.0
    chance = min(1.0, elastic * n_jobs / max(int(whole.sum()), 1))  # of whole-GPU jobs: ``elastic`` of all jobs
    flex = (rng.random(n_jobs) < chance) & whole if elastic > 0 else np.zeros(n_jobs, dtype=bool)
    most = np.where(flex, np.minimum(ELASTIC_GROWTH * gpus, max_gpus), gpus)
    least = np.where(flex, 1, gpus)
    flex = flex & (least < most)

    names = [str(n) for n in type_names]
    return tuple(
        Job(i, s, d, g, f, v, f"user{u}", names[k], p, a, e, f"{names[k]}-{i}", False, dl, lo, hi, curve if x else "")
        for i, (s, d, g, f, v, u, k, p, a, e, dl, lo, hi, x) in enumerate(
            zip(
                submit.tolist(),
                dur.tolist(),
                gpus.tolist(),
                frac.tolist(),
                vram.tolist(),
                user.tolist(),
                kind.tolist(),
                prio.tolist(),
                allowed,
                estimate.tolist(),
                due.tolist(),
                least.tolist(),  # a job's own size where it is not elastic (see above)
                most.tolist(),
                flex.tolist(),
            )
        )
    )


#: The contract's other name for :func:`generate`.
generate_workload = generate


def _check_args(
    n_jobs,
    load,
    users,
    user_skew,
    arrival,
    estimate_error,
    overestimate,
    burst_factor,
    burst_share,
    diurnal_amplitude,
    allowed_share,
) -> None:
    checks = (
        (isinstance(n_jobs, int) and n_jobs >= 1, f"n_jobs must be an integer >= 1, got {n_jobs!r}"),
        (math.isfinite(load) and load > 0, f"load must be a number > 0, got {load!r}"),
        (isinstance(users, int) and users >= 1, f"users must be an integer >= 1, got {users!r}"),
        (math.isfinite(user_skew) and user_skew >= 0, f"user_skew must be >= 0, got {user_skew!r}"),
        (arrival in ARRIVALS, f"arrival {arrival!r}: expected one of {', '.join(ARRIVALS)}"),
        (math.isfinite(estimate_error) and estimate_error >= 0, "estimate_error must be >= 0"),
        (math.isfinite(overestimate) and overestimate > 0, "overestimate must be > 0"),
        (math.isfinite(burst_factor) and burst_factor >= 1, "burst_factor must be >= 1"),
        (0 <= burst_share < 1, "burst_share must be in [0, 1)"),
        (0 <= diurnal_amplitude <= 1, "diurnal_amplitude must be in [0, 1]"),
        (0 <= allowed_share <= 1, "allowed_share must be in [0, 1]"),
    )
    for ok, message in checks:
        if not ok:
            raise ValueError(message)


def _pinned_types(rng: np.random.Generator, cluster: Cluster, vram: np.ndarray, share: float) -> list[frozenset[str]]:
    """Per job: ``frozenset()`` (any type) or one GPU type of the cluster whose memory fits the job."""
    n = len(vram)
    pin = rng.random(n) < share
    pick = rng.random(n)
    names = sorted(cluster.gpus_by_type())
    mem = np.array([cluster.catalog[t].vram_gib for t in names])
    out: list[frozenset[str]] = []
    for j in range(n):
        if not pin[j]:
            out.append(frozenset())
            continue
        fits = [t for t, m in zip(names, mem) if m >= vram[j]]
        out.append(frozenset({fits[int(pick[j] * len(fits))]}) if fits else frozenset())
    return out


def _arrivals(
    rng: np.random.Generator,
    n: int,
    rate: float,
    arrival: str,
    burst_factor: float,
    burst_share: float,
    amplitude: float,
) -> np.ndarray:
    """``n`` sorted arrival times starting at 0 with mean rate ``rate`` per second."""
    if arrival == "poisson" or n == 1 or (arrival == "bursty" and burst_share == 0):
        gaps = rng.exponential(1.0 / rate, size=n - 1)
        return np.concatenate([[0.0], np.cumsum(gaps)])
    if arrival == "diurnal":
        peak = rate * (1.0 + amplitude)

        def rate_at(t: np.ndarray) -> np.ndarray:
            return rate * (1.0 + amplitude * np.cos(2 * math.pi * (t - PEAK_S) / DAY_S))
    else:
        base = rate / (burst_share * burst_factor + 1.0 - burst_share)
        peak = base * burst_factor
        mean_burst_s = 30.0 / base
        mean_calm_s = mean_burst_s * (1.0 - burst_share) / burst_share
        # Alternate calm and burst periods (about 30 arrivals at the base rate per burst); enough periods
        # to cover n arrivals with a wide margin (past the last edge the process stays calm).
        n_periods = 2 * (int(n * burst_factor / 30.0) + 8)
        lengths = np.where(
            np.arange(n_periods) % 2 == 0,
            rng.exponential(mean_calm_s, n_periods),
            rng.exponential(mean_burst_s, n_periods),
        )
        edges = np.cumsum(lengths)

        def rate_at(t: np.ndarray) -> np.ndarray:
            in_burst = np.searchsorted(edges, t, side="right") % 2 == 1
            return np.where(in_burst, peak, base)

    # Thinning: candidates at the peak rate, each kept with probability rate(t) / peak. The first job
    # arrives at 0 (midnight) so that the clock keeps its phase.
    out: list[np.ndarray] = [np.zeros(1)]
    t0, kept = 0.0, 1
    while kept < n:
        batch = max(64, 2 * (n - kept))
        cand = t0 + np.cumsum(rng.exponential(1.0 / peak, size=batch))
        accepted = cand[rng.random(batch) * peak < rate_at(cand)]
        out.append(accepted[: n - kept])
        kept += len(out[-1])
        t0 = float(cand[-1])
    return np.concatenate(out)
