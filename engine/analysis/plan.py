"""Capacity plans: the fewest nodes of one shape for which a run meets a target, searched in parallel on Ray;
and plans in money (:func:`plan_mix`): the cheapest mix of several node shapes that meets it.

    from engine.analysis.plan import plan
    answer = plan("month.csv", "8:A100-80", ["fifo", "easy-backfill"], "p95_wait_s<=1800")
    answer[["scheduler", "nodes", "gpus"]]        # one row per scheduler; attrs["probes"]: every run made

**Target.** ``METRIC<=VALUE`` or ``METRIC>=VALUE`` over a metric of :data:`TARGET_METRICS`: any of ``compare
--json``'s, and, for runs whose options model failures, the reliability metrics (``ettr>=0.95``,
``failure_lost_gpu_h<=50``, ``failed_job_gpu_h<=10``, ...: a plan whose target holds under failures), and, for jobs
with deadlines, the deadline metrics (``deadline_ratio>=0.95``). A run *meets*
it when no job is unschedulable (a cluster too small for some job does not count as meeting a wait target) and the
metric is defined and on the right side of the value.

**Clusters.** ``node`` is a shape ``GPUS:TYPE`` (e.g. ``8:A100-80``); the cluster with ``n`` nodes is ``n``
such nodes, or, with a ``cluster`` to grow, that cluster with its first group of that shape set to ``n`` nodes
(a group of that shape is added when it has none): a node mix where one group grows.

**Search.** Per scheduler, rounds of probes run in parallel (as many per round as the Ray cluster has CPUs,
at least 2): while no probe meets the target, node counts grow geometrically (1, 2, 4, ... for 2 probes a
round); once one does, the probes split the gap between the largest count known to fail and the smallest
known to meet, until they are one node apart. The answer ``nodes`` therefore meets the target and
``nodes - 1`` does not (both were run). The search assumes that more nodes never make the metric worse;
scheduling anomalies could make a smaller count below ``nodes - 1`` meet it too. A scheduler that does not meet
the target with ``max_nodes`` nodes gets ``nodes`` = ``None``.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence, TypedDict, Unpack

from engine.analysis.metrics import DEADLINE_METRICS, METRICS, RELIABILITY_METRICS, Metric
from engine.analysis.scenario import Scenario
from engine.analysis.sweep import Runner, check_schedulers, finite_or_none, one_line
from engine.errors import ClusterSpecError, EngineError, UnknownNameError, reject_unknown_keys
from engine.sim.cluster import Cluster, NodeGroup, parse_cluster, parse_shorthand
from engine.sim.job import Job
from engine.sim.options import RunOptions
from engine.sim.state import Scheduler

#: Largest node count a plan may probe.
MAX_NODES = 4096
#: What a target may name: every metric of ``compare --json``, then the reliability metrics (only for runs whose
#: options model failures: :meth:`Target.check_options`), then the deadline metrics (only for jobs with deadlines:
#: :func:`_plan_jobs`).
TARGET_METRICS: dict[str, Metric] = {**METRICS, **RELIABILITY_METRICS, **DEADLINE_METRICS}
_TARGET = re.compile(r"^\s*([a-z0-9_]+)\s*(<=|>=)\s*(\S+)\s*$")


class PlanError(EngineError, ValueError):
    """A plan's target or node shape is invalid; the message says what was expected."""


@dataclass(frozen=True)
class Target:
    """``metric op value``: what a run must achieve."""

    metric: str
    op: str
    value: float

    def met_by(self, summary: Mapping[str, Any]) -> bool:
        """Whether a run with metrics ``summary`` meets the target (no unschedulable job, metric defined)."""
        v = summary.get(self.metric)
        if summary.get("unschedulable") or v is None or (isinstance(v, float) and math.isnan(v)):
            return False
        return v <= self.value if self.op == "<=" else v >= self.value

    def check_options(self, options: RunOptions | None) -> None:
        """Raise :class:`PlanError` when the target names a reliability metric and ``options`` model no failures
        (the runs would not have it)."""
        if self.metric in RELIABILITY_METRICS and not (options or RunOptions()).failures.active:
            raise PlanError(
                f"target {self}: {self.metric} is measured only under failures; give a failure model "
                "(--failures PRESET, --node-mtbf-h H, --job-failures RATE or --checkpoint-cost S)"
            )

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"


def parse_target(text: str) -> Target:
    """``"p95_wait_s<=1800"`` -> :class:`Target`; the metric must be a key of :data:`TARGET_METRICS`."""
    m = _TARGET.match(text or "")
    if not m:
        raise PlanError(f"target {text!r}: expected METRIC<=VALUE or METRIC>=VALUE, e.g. p95_wait_s<=1800")
    metric, op, raw = m.groups()
    if metric not in TARGET_METRICS:
        raise UnknownNameError(f"target {text!r}: unknown metric {metric!r}; valid: {', '.join(TARGET_METRICS)}")
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise PlanError(f"target {text!r}: {raw!r} is not a finite number")
    return Target(metric, op, value)


def parse_node(text: str) -> tuple[int, str]:
    """``"8:A100-80"`` -> ``(8, "A100-80")``: GPUs per node and the GPU type (checked against the catalog)."""
    try:
        groups = parse_shorthand(f"1x{text}").groups if "," not in text else ()
    except ClusterSpecError as exc:
        known = f" ({exc.args[0].partition('unknown GPU type ')[2]})" if "unknown GPU type" in str(exc) else ""
        raise PlanError(f"node shape {text!r}: expected GPUS:TYPE, e.g. 8:A100-80{known}") from None
    if len(groups) != 1:
        raise PlanError(f"node shape {text!r}: expected one GPUS:TYPE, e.g. 8:A100-80")
    return groups[0].gpus_per_node, groups[0].gpu_type


def grown_cluster(node: tuple[int, str], nodes: int, base: Cluster | None = None) -> Cluster:
    """The cluster with ``nodes`` nodes of shape ``node``: alone, or ``base`` with that group grown (added)."""
    gpus, gpu_type = node
    if base is None:
        return parse_shorthand(f"{nodes}x{gpus}:{gpu_type}")
    groups = list(base.groups)
    for i, g in enumerate(groups):
        if (g.gpus_per_node, g.gpu_type) == (gpus, gpu_type):
            groups[i] = replace(g, nodes=nodes)
            break
    else:
        groups.append(NodeGroup(gpu_type, nodes, gpus))
    return replace(base, groups=tuple(groups))


class _Search:
    """One scheduler's search: the counts run so far and whether they met the target."""

    def __init__(self, max_nodes: int) -> None:
        self.max_nodes = max_nodes
        self.meets: dict[int, bool] = {}
        self.error: str | None = None

    @property
    def hi(self) -> int | None:
        """The smallest count known to meet the target."""
        return min((n for n, ok in self.meets.items() if ok), default=None)

    @property
    def lo(self) -> int:
        """The largest count known to fail below :attr:`hi` (0: none)."""
        hi = self.hi
        return max((n for n, ok in self.meets.items() if not ok and (hi is None or n < hi)), default=0)

    @property
    def done(self) -> bool:
        hi = self.hi
        return (
            self.error is not None
            or (hi is not None and hi - self.lo == 1)
            or (hi is None and self.meets.get(self.max_nodes) is False)
        )

    def next_counts(self, k: int) -> list[int]:
        """Up to ``k`` new counts to run next."""
        lo, hi = self.lo, self.hi
        if hi is None:
            counts = [2**i for i in range(k)] if lo == 0 else [lo * 2**i for i in range(1, k + 1)]
            counts = [min(c, self.max_nodes) for c in counts]
        else:
            counts = [lo + round((hi - lo) * j / (k + 1)) for j in range(1, k + 1)]
        return sorted({c for c in counts if lo < c and (hi is None or c < hi) and c not in self.meets})


def _plan_jobs(trace: Any, trace_options: Mapping[str, Any] | None, goal: Target) -> tuple[Job, ...]:
    """The jobs a plan runs: a trace file loaded with ``trace_options``, or the given jobs; never none, and some
    with a deadline when ``goal`` is on a deadline metric."""
    if isinstance(trace, str):
        from engine.traces import load_trace

        jobs = load_trace(trace, **(trace_options or {})).jobs
    else:
        jobs = tuple(trace)
    if not jobs:
        raise PlanError("the plan's trace has no jobs")
    if goal.metric in DEADLINE_METRICS and not any(j.has_deadline for j in jobs):
        raise PlanError(f"target {goal}: no job of the plan's trace has a deadline")
    return jobs


class PlanRunner(TypedDict, total=False):
    """How a plan's runs are made: the keyword arguments :func:`plan` and :func:`plan_mix` share.

    Attributes:
        probes_per_round: runs per scheduler per round (default: the CPUs of the Ray cluster, at least 2).
        backend, address, num_cpus, factories, plugins, guard, cancel: as in
            :func:`engine.analysis.sweep.run_sweep` (default backend ``"ray"``; a run past the guard's bounds is
            that scheduler's ``error``).
        on_progress: called with ``(runs done, runs submitted so far)``.
    """

    probes_per_round: int | None
    backend: str
    address: str | None
    num_cpus: int | None
    on_progress: Callable[[int, int], None] | None
    factories: Mapping[str, Callable[[], Scheduler]] | None
    plugins: Sequence[str]
    guard: Callable[..., dict[str, Any]] | None
    cancel: Any


def _goal(target: str | Target, options: RunOptions | None) -> Target:
    """``target`` parsed, and checked against the runs' ``options``."""
    goal = target if isinstance(target, Target) else parse_target(target)
    goal.check_options(options)
    return goal


def _checked_names(schedulers: str | Sequence[str], max_nodes: int, runner: PlanRunner) -> list[str]:
    """The plan's scheduler names, checked (distinct, known), once ``max_nodes`` and the keywords in ``runner``
    are checked too (a misspelt keyword is a ``TypeError``, as for any function)."""
    unknown = sorted(set(runner) - PlanRunner.__optional_keys__)
    if unknown:
        raise TypeError(f"plan got unexpected keyword arguments {', '.join(unknown)}")
    names = [schedulers] if isinstance(schedulers, str) else list(schedulers)
    if not names or len(set(names)) != len(names):
        raise PlanError(f"plan schedulers: expected distinct names, got {names}")
    check_schedulers(names, runner.get("factories"))
    if not (isinstance(max_nodes, int) and 1 <= max_nodes <= MAX_NODES):
        raise PlanError(f"max_nodes must be an integer from 1 to {MAX_NODES}, got {max_nodes!r}")
    return names


def _run_rounds(
    jobs: tuple[Job, ...],
    next_batch: Callable[[int], list[tuple[str, Any]]],
    cluster_of: Callable[[Any], Cluster],
    record: Callable[[str, Any, Any], None],
    seed: int,
    options: RunOptions | None,
    runner: PlanRunner,
) -> tuple[dict[str, Any], int]:
    """Run a plan's probes in rounds of parallel runs on a :class:`~engine.analysis.sweep.Runner` made as
    ``runner`` says, while ``next_batch(k)`` (``k``: runs per scheduler per round) gives ``(scheduler, probe)``
    pairs, each on ``cluster_of(probe)``; ``record(scheduler, probe, summary or exception)`` as runs finish.
    Returns where they ran (``meta``'s ``backend``, ``address`` and ``cpus``) and the number of rounds."""
    backend, on_progress = runner.get("backend", "ray"), runner.get("on_progress")
    factories = dict(runner.get("factories") or {})
    rounds = submitted = finished = 0
    with Runner(
        backend,
        runner.get("address"),
        num_cpus=runner.get("num_cpus"),
        plugins=runner.get("plugins", ()),
        guard=runner.get("guard"),
        cancel=runner.get("cancel"),
    ) as pool:
        ref = pool.put(jobs)
        k = runner.get("probes_per_round") or max(2, pool.cpus)
        while batch := next_batch(k):
            rounds += 1
            for s, probe in batch:
                pool.submit((s, probe), cluster_of(probe), ref, s, seed, factories.get(s), options)
                submitted += 1
            for (s, probe), outcome in pool.completed():
                finished += 1
                if on_progress is not None:
                    on_progress(finished, submitted)
                record(s, probe, outcome)
    return {"backend": backend, "address": pool.address, "cpus": pool.cpus}, rounds


def plan(
    trace: str | Sequence[Job],
    node: str,
    schedulers: str | Sequence[str],
    target: str | Target,
    *,
    cluster: str | Cluster | None = None,
    max_nodes: int = 1024,
    seed: int = 0,
    trace_options: Mapping[str, Any] | None = None,
    options: RunOptions | None = None,
    **runner: Unpack[PlanRunner],
):
    """The fewest nodes of shape ``node`` for which each scheduler's run on ``trace`` meets ``target``.

    Args:
        trace: a trace file (read with ``trace_options``, :func:`~engine.traces.load_trace` arguments) or jobs.
        node: ``GPUS:TYPE``, the shape that is counted.
        schedulers: one name or several (which one needs the fewest GPUs?).
        target: ``METRIC<=VALUE`` / ``METRIC>=VALUE`` or a :class:`Target`.
        cluster: a cluster whose group of that shape grows (the others stay); default: only nodes of the shape.
        max_nodes: the most nodes tried (at most :data:`MAX_NODES`).
        seed: the simulation seed of every run.
        options: the run options of every run (default ``RunOptions()``).
        runner: how the runs are made (:class:`PlanRunner`: ``backend``, ``address``, ``cancel``, ...).

    Returns:
        A pandas frame, one row per scheduler: ``scheduler``, ``nodes`` (``None`` when even ``max_nodes`` fails),
        ``gpus`` (of the whole cluster), ``metric``, ``value_at_nodes``, ``value_at_nodes_minus_1`` (NaN at 0
        nodes), ``error``. ``attrs["probes"]``: every run (``scheduler``, ``nodes``, ``gpus``, ``value``,
        ``meets``, ``unschedulable``), ``attrs["meta"]``: ``backend``, ``address``, ``cpus``, ``target``,
        ``node``, ``rounds``, ``runs``, ``wall_s``, ``fewest_gpus`` (the scheduler that needs the fewest).
    """
    import pandas as pd

    goal = _goal(target, options)
    shape = parse_node(node)
    names = _checked_names(schedulers, max_nodes, runner)
    base = None if cluster is None else parse_cluster(cluster)
    jobs = _plan_jobs(trace, trace_options, goal)
    searches = {s: _Search(max_nodes) for s in names}
    probes: dict[tuple[str, int], dict[str, Any]] = {}

    def next_batch(k: int) -> list[tuple[str, int]]:
        return [(s, n) for s, search in searches.items() if not search.done for n in search.next_counts(k)]

    def record(s: str, n: int, outcome: Any) -> None:
        if isinstance(outcome, BaseException):
            searches[s].error = f"{n} nodes: {one_line(outcome)}"
            return
        ok = goal.met_by(outcome)
        searches[s].meets[n] = ok
        probes[(s, n)] = {
            "scheduler": s,
            "nodes": n,
            "gpus": grown_cluster(shape, n, base).n_gpus,
            "value": _value(outcome, goal.metric),
            "meets": ok,
            "unschedulable": outcome["unschedulable"],
        }

    t0 = time.perf_counter()
    where, rounds = _run_rounds(
        jobs, next_batch, lambda n: grown_cluster(shape, n, base), record, seed, options, runner
    )
    rows = []
    for s, search in searches.items():
        n = search.hi if search.error is None else None
        at = probes.get((s, n)) if n is not None else None
        below = probes.get((s, n - 1)) if n is not None else None
        rows.append(
            {
                "scheduler": s,
                "nodes": n,
                "gpus": at["gpus"] if at else None,
                "metric": goal.metric,
                "value_at_nodes": at["value"] if at else math.nan,
                "value_at_nodes_minus_1": below["value"] if below else math.nan,
                "error": search.error,
            }
        )
    frame = pd.DataFrame(rows).astype({"nodes": "Int64", "gpus": "Int64"})
    met = [r for r in rows if r["gpus"] is not None]
    frame.attrs["probes"] = sorted(probes.values(), key=lambda p: (names.index(p["scheduler"]), p["nodes"]))
    frame.attrs["meta"] = {
        **where,
        "target": str(goal),
        "node": f"{shape[0]}:{shape[1]}",
        "cluster": None if base is None else base.to_shorthand(),
        "rounds": rounds,
        "runs": len(probes),
        "wall_s": time.perf_counter() - t0,
        "fewest_gpus": min(met, key=lambda r: r["gpus"])["scheduler"] if met else None,
    }
    return frame


def _value(summary: Mapping[str, Any], metric: str) -> float:
    v = summary[metric]
    return math.nan if v is None else float(v)


# ------------------------------------------------------------------------------------------ plans in money
#: What a plan over several node shapes may minimise (a key of ``ENERGY_METRICS``: known before any run).
OBJECTIVES = ("cluster_price_per_h",)
#: Most node mixes a plan over several shapes may consider below its price bound.
MAX_MIXES = 20_000
#: A runner-up is searched among the mixes that cost less than this many times the answer.
RUNNER_UP_WITHIN = 2.0

Mix = tuple[int, ...]


def mix_cluster(shapes: Sequence[tuple[int, str]], mix: Mix) -> Cluster:
    """The cluster of ``mix[i]`` nodes of shape ``shapes[i]`` (shapes with no node left out)."""
    return parse_shorthand(",".join(f"{n}x{g}:{t}" for n, (g, t) in zip(mix, shapes) if n))


def _dominates(a: Mix, b: Mix) -> bool:
    """Whether ``a`` has at least as many nodes of every shape as ``b``."""
    return all(x >= y for x, y in zip(a, b))


class _MixSearch:
    """One scheduler's search for the cheapest mix of node shapes meeting the target (see :func:`plan_mix`)."""

    def __init__(self, node_price: Sequence[float], max_nodes: int) -> None:
        self.node_price = tuple(node_price)
        self.max_nodes = max_nodes
        self.singles = [_Search(max_nodes) for _ in node_price]
        self.meets: dict[Mix, bool] = {}
        self.error: str | None = None

    def price(self, mix: Mix) -> float:
        return sum(n * p for n, p in zip(mix, self.node_price))

    def single(self, i: int, n: int) -> Mix:
        return tuple(n if j == i else 0 for j in range(len(self.node_price)))

    def record(self, mix: Mix, ok: bool) -> None:
        self.meets[mix] = ok
        nonzero = [i for i, n in enumerate(mix) if n]
        if len(nonzero) == 1:
            self.singles[nonzero[0]].meets[mix[nonzero[0]]] = ok

    def _order(self, mixes) -> list[Mix]:
        return sorted(mixes, key=lambda m: (self.price(m), sum(m), m))

    @property
    def answer(self) -> Mix | None:
        """The cheapest mix known to meet the target (ties: fewer nodes, then the earlier shapes)."""
        met = self._order(m for m, ok in self.meets.items() if ok)
        return met[0] if met else None

    @property
    def runner_up(self) -> Mix | None:
        """The cheapest mix known to meet the target after the answer, leaving out those that contain it."""
        best = self.answer
        rest = self._order(m for m, ok in self.meets.items() if ok and m != best and not _dominates(m, best))
        return rest[0] if rest else None

    def _bound(self) -> float:
        """Mixes at or above this price need no run: the runner-up's, else :data:`RUNNER_UP_WITHIN` times the
        answer's."""
        if self.runner_up is not None:
            return self.price(self.runner_up)
        return math.inf if self.answer is None else RUNNER_UP_WITHIN * self.price(self.answer)

    def candidates(self) -> list[Mix]:
        """Every mix below the bound whose outcome the runs so far do not settle: not run, not inside a failing
        mix (it would fail too) and not containing a meeting one (dearer than that one)."""
        bound = self._bound()
        fails = [m for m, ok in self.meets.items() if not ok]
        meets = [m for m, ok in self.meets.items() if ok]
        out: list[Mix] = []

        def extend(prefix: Mix, spent: float) -> None:
            i = len(prefix)
            if i == len(self.node_price):
                if (
                    any(prefix)
                    and prefix not in self.meets
                    and not any(_dominates(f, prefix) for f in fails)
                    and not any(_dominates(prefix, m) for m in meets)
                ):
                    out.append(prefix)
                    if len(out) > MAX_MIXES:
                        raise PlanError(
                            f"more than {MAX_MIXES:,} node mixes cost less than the single-shape "
                            "answers: plan fewer or larger node shapes"
                        )
                return
            n = 0
            while n <= self.max_nodes and spent + n * self.node_price[i] < bound:
                extend((*prefix, n), spent + n * self.node_price[i])
                n += 1

        extend((), 0.0)
        return out

    def next_mixes(self, k: int) -> list[Mix]:
        """Up to ``k`` mixes to run next: first each shape alone (:class:`_Search`, which bounds the price), then
        the largest mixes still unsettled below the bound (a failing one settles every mix inside it)."""
        if self.error is not None:
            return []
        alone = [self.single(i, n) for i, s in enumerate(self.singles) if not s.done for n in s.next_counts(k)]
        if alone or any(not s.done for s in self.singles):
            return [m for m in alone if m not in self.meets]
        open_ = set(self.candidates())
        # A mix inside another unsettled one is inside one with a single node more (every mix between the two
        # is unsettled too), so checking those finds the largest.
        steps = [tuple(int(i == j) for j in range(len(self.node_price))) for i in range(len(self.node_price))]
        maximal = [m for m in open_ if not any(tuple(x + d for x, d in zip(m, e)) in open_ for e in steps)]
        return self._order(maximal)[:k]


def plan_mix(
    trace: str | Sequence[Job],
    nodes: Sequence[str],
    schedulers: str | Sequence[str],
    target: str | Target,
    *,
    minimize: str = "cluster_price_per_h",
    max_nodes: int = 64,
    seed: int = 0,
    trace_options: Mapping[str, Any] | None = None,
    options: RunOptions | None = None,
    **runner: Unpack[PlanRunner],
):
    """The cheapest cluster built from node shapes ``nodes`` (any number of nodes of each, at most ``max_nodes``)
    on which each scheduler's run of ``trace`` meets ``target``, with the runner-up.

    The price is ``cluster_price_per_h`` under ``options.energy.price_list`` (what the cluster costs an hour,
    busy or not); it is known from the mix alone, so only the target needs runs. **Search**, per scheduler:
    first each shape alone as :func:`plan` searches it (its answer is a mix that meets, so it bounds the price);
    then, in rounds of parallel runs, the largest mixes below the bound whose outcome is not yet settled. Like
    :func:`plan` it assumes that more nodes never make the metric worse, so a failing mix settles every mix
    inside it and a mix containing a meeting one is dearer than that one. When no unsettled mix is left below
    the bound, no mix cheaper than the answer meets the target.

    **Runner-up**: the cheapest other mix that meets the target, leaving out those that contain the answer (the
    answer plus spare nodes). It is searched below the price of the cheapest such mix the search has met (a
    single-shape answer, say), or below :data:`RUNNER_UP_WITHIN` times the answer's price while there is none;
    ``None`` when none is found there.

    ``trace``, ``seed``, ``trace_options``, ``options`` and ``runner`` (how the runs are made) are as in
    :func:`plan`.

    Returns:
        A pandas frame, one row per scheduler: ``scheduler``, ``cluster`` (shorthand, ``None`` when no mix meets
        the target), ``nodes`` (one count per shape), ``gpus``, ``cluster_price_per_h``, ``value`` (the target's
        metric), ``runner_up``, ``runner_up_price_per_h``, ``runner_up_value``, ``error``. ``attrs["probes"]``:
        every run (``scheduler``, ``cluster``, ``nodes``, ``cluster_price_per_h``, ``value``, ``meets``);
        ``attrs["meta"]``: ``backend``, ``address``, ``cpus``, ``target``, ``minimize``, ``shapes``,
        ``price_list``, ``rounds``, ``runs``, ``wall_s``, ``cheapest`` (the scheduler with the cheapest answer).
    """
    import pandas as pd

    from engine.analysis.energy import cluster_price_per_h

    if minimize not in OBJECTIVES:
        raise PlanError(f"minimize {minimize!r}: expected one of {', '.join(OBJECTIVES)}")
    goal = _goal(target, options)
    shapes = [parse_node(n) for n in nodes]
    if not shapes or len(set(shapes)) != len(shapes):
        raise PlanError(f"plan node shapes: expected distinct GPUS:TYPE shapes, got {list(nodes)}")
    names = _checked_names(schedulers, max_nodes, runner)
    options = options or RunOptions()
    price_list = options.energy.price_list
    node_price = [cluster_price_per_h(mix_cluster([s], (1,)), price_list) for s in shapes]
    if not all(p > 0 for p in node_price):
        raise PlanError(f"every node shape needs a price > 0 under price list {price_list!r} to be minimised")
    jobs = _plan_jobs(trace, trace_options, goal)
    searches = {s: _MixSearch(node_price, max_nodes) for s in names}
    probes: dict[tuple[str, Mix], dict[str, Any]] = {}

    def next_batch(k: int) -> list[tuple[str, Mix]]:
        return [(s, m) for s, search in searches.items() for m in search.next_mixes(k)]

    def record(s: str, m: Mix, outcome: Any) -> None:
        if isinstance(outcome, BaseException):
            searches[s].error = f"{mix_cluster(shapes, m).to_shorthand()}: {one_line(outcome)}"
            return
        ok = goal.met_by(outcome)
        searches[s].record(m, ok)
        probes[(s, m)] = {
            "scheduler": s,
            "cluster": mix_cluster(shapes, m).to_shorthand(),
            "nodes": list(m),
            "cluster_price_per_h": cluster_price_per_h(mix_cluster(shapes, m), price_list),
            "value": _value(outcome, goal.metric),
            "meets": ok,
        }

    t0 = time.perf_counter()
    where, rounds = _run_rounds(jobs, next_batch, lambda m: mix_cluster(shapes, m), record, seed, options, runner)
    rows = []
    for s, search in searches.items():
        best = search.answer if search.error is None else None
        second = search.runner_up if best is not None else None
        at = probes.get((s, best)) if best is not None else None
        up = probes.get((s, second)) if second is not None else None
        rows.append(
            {
                "scheduler": s,
                "cluster": at["cluster"] if at else None,
                "nodes": list(best) if best else None,
                "gpus": mix_cluster(shapes, best).n_gpus if best else None,
                "cluster_price_per_h": at["cluster_price_per_h"] if at else math.nan,
                "value": at["value"] if at else math.nan,
                "runner_up": up["cluster"] if up else None,
                "runner_up_price_per_h": up["cluster_price_per_h"] if up else math.nan,
                "runner_up_value": up["value"] if up else math.nan,
                "error": search.error,
            }
        )
    frame = pd.DataFrame(rows)
    met = [r for r in rows if r["cluster"] is not None]
    frame.attrs["probes"] = sorted(
        probes.values(), key=lambda p: (names.index(p["scheduler"]), p["cluster_price_per_h"], p["nodes"])
    )
    frame.attrs["meta"] = {
        **where,
        "target": str(goal),
        "minimize": minimize,
        "shapes": [f"{g}:{t}" for g, t in shapes],
        "price_list": price_list,
        "rounds": rounds,
        "runs": len(probes),
        "wall_s": time.perf_counter() - t0,
        "cheapest": min(met, key=lambda r: r["cluster_price_per_h"])["scheduler"] if met else None,
    }
    return frame


# ------------------------------------------------------------------------------------------ a plan as data
#: Most node shapes one plan may mix.
MAX_SHAPES = 8
#: Default ``max_nodes`` of a plan over one shape, and of each shape of a mix (the command line's defaults).
DEFAULT_MAX_NODES = 1024
DEFAULT_MAX_NODES_MIX = 64
PLAN_KEYS = frozenset({"base", "nodes", "target", "max_nodes", "grow"})


@dataclass(frozen=True)
class PlanSpec:
    """A capacity plan as data (the HTTP API's ``POST /v1/plans`` body): a base scenario whose jobs, schedulers,
    seed and run options every run shares, the node shapes to count and the target.

    Attributes:
        base: the scenario (a generated workload is built for its cluster; ``grow`` grows that cluster).
        nodes: one shape ``GPUS:TYPE`` (the fewest nodes of it, :func:`plan`) or several (the cheapest mix under
            the base's price list, :func:`plan_mix`), at most :data:`MAX_SHAPES`.
        target: ``METRIC<=VALUE`` or ``METRIC>=VALUE``.
        max_nodes: the most nodes tried (of each shape); 0: :data:`DEFAULT_MAX_NODES`, or
            :data:`DEFAULT_MAX_NODES_MIX` for a mix.
        grow: with one shape, grow the base cluster's group of that shape (a node mix where one group grows)
            instead of a cluster of that shape only.
    """

    base: Scenario
    nodes: tuple[str, ...]
    target: str
    max_nodes: int = 0
    grow: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.base, Scenario):
            raise PlanError("plan base must be a scenario")
        if not self.base.schedulers:
            raise PlanError("plan base: scenario.schedulers is empty: name at least one scheduler")
        if not isinstance(self.nodes, tuple) or not all(isinstance(n, str) for n in self.nodes):
            raise PlanError('plan nodes: expected a list of GPUS:TYPE shapes, e.g. ["8:A100-80"]')
        if not 1 <= len(self.nodes) <= MAX_SHAPES or len(set(self.nodes)) != len(self.nodes):
            raise PlanError(f"plan nodes: expected 1 to {MAX_SHAPES} distinct shapes, got {len(self.nodes)}")
        for node in self.nodes:
            parse_node(node)
        if not isinstance(self.target, str):
            raise PlanError("plan target: expected text METRIC<=VALUE or METRIC>=VALUE")
        parse_target(self.target)
        if not (isinstance(self.max_nodes, int) and not isinstance(self.max_nodes, bool)) or not (
            0 <= self.max_nodes <= MAX_NODES
        ):
            raise PlanError(f"plan max_nodes: expected an integer from 1 to {MAX_NODES} (0: the default)")
        if not isinstance(self.grow, bool):
            raise PlanError("plan grow: expected true or false")
        if self.grow and len(self.nodes) > 1:
            raise PlanError("plan grow: a mix of several shapes builds its clusters from the shapes only")

    @property
    def mix(self) -> bool:
        """Whether this plan searches the cheapest mix of several shapes."""
        return len(self.nodes) > 1

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; :meth:`from_dict` reads it back to an equal spec."""
        return {
            "base": self.base.to_dict(),
            "nodes": list(self.nodes),
            "target": self.target,
            "max_nodes": self.max_nodes,
            "grow": self.grow,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, trusted: bool = False) -> PlanSpec:
        """A spec from :meth:`to_dict`'s form (``nodes`` may be one shape as text); unknown keys are refused and
        the base is an untrusted scenario unless ``trusted``."""
        if not isinstance(data, Mapping):
            raise PlanError("a plan spec must be a JSON object")
        reject_unknown_keys(data, PLAN_KEYS, "plan spec", PlanError)
        missing = sorted({"base", "nodes", "target"} - set(data))
        if missing:
            raise PlanError(f"plan spec: missing {', '.join(missing)}")
        nodes = data["nodes"]
        try:
            base = Scenario.from_dict(data["base"], trusted=trusted)
        except EngineError as exc:
            raise PlanError(f"plan base: {exc}") from None
        return cls(
            base=base,
            nodes=(nodes,) if isinstance(nodes, str) else tuple(nodes) if isinstance(nodes, list) else (None,),
            target=data["target"],
            max_nodes=data.get("max_nodes", 0),
            grow=data.get("grow", False),
        )

    @classmethod
    def from_json(cls, text: str | bytes, *, trusted: bool = False) -> PlanSpec:
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            raise PlanError("the plan spec is not valid JSON") from None
        return cls.from_dict(data, trusted=trusted)


def run_plan_spec(spec: PlanSpec, jobs: Sequence[Job], **runner: Unpack[PlanRunner]):
    """:func:`plan` (one shape) or :func:`plan_mix` (several) of ``spec`` on ``jobs`` (the base's, built for its
    cluster); ``runner``: ``backend``, ``address``, ``num_cpus``, ``on_progress``, ``cancel``. Returns the frame."""
    base = spec.base
    if spec.mix:
        return plan_mix(
            jobs,
            spec.nodes,
            base.schedulers,
            spec.target,
            max_nodes=spec.max_nodes or DEFAULT_MAX_NODES_MIX,
            seed=base.seed,
            options=base.options,
            **runner,
        )
    return plan(
        jobs,
        spec.nodes[0],
        base.schedulers,
        spec.target,
        cluster=base.build_cluster() if spec.grow else None,
        max_nodes=spec.max_nodes or DEFAULT_MAX_NODES,
        seed=base.seed,
        options=base.options,
        **runner,
    )


def plan_json(frame) -> dict[str, Any]:
    """A plan's frame (:func:`plan` or :func:`plan_mix`) as the JSON ``python -m engine plan --json`` writes: the
    answer of the scheduler that needs the fewest GPUs (the cheapest, for a mix; else the first), every
    scheduler's answer, every probe and the run's facts."""
    meta, rows = frame.attrs["meta"], plain_rows(frame)
    answers = {r["scheduler"]: r for r in rows}
    probes = [{k: finite_or_none(v) for k, v in p.items()} for p in frame.attrs["probes"]]
    facts = {k: meta[k] for k in ("backend", "address", "cpus", "rounds", "wall_s")}
    if "minimize" not in meta:
        best = answers[meta["fewest_gpus"] or rows[0]["scheduler"]]
        return {
            **best,
            "target": meta["target"],
            "node": meta["node"],
            "cluster": meta["cluster"],
            "schedulers": answers,
            "fewest_gpus": meta["fewest_gpus"],
            "probes": probes,
            **facts,
        }
    best = answers[meta["cheapest"] or rows[0]["scheduler"]]
    return {
        **{k: v for k, v in best.items() if not k.startswith("runner_up")},
        "runner_up": {
            "cluster": best["runner_up"],
            "cluster_price_per_h": best["runner_up_price_per_h"],
            "value": best["runner_up_value"],
        },
        "target": meta["target"],
        "schedulers": answers,
        "probes": probes,
        **{k: meta[k] for k in ("minimize", "shapes", "price_list", "cheapest")},
        **facts,
    }


def plain_rows(frame) -> list[dict[str, Any]]:
    """The plan frame's rows as plain JSON-ready values (counts ``int`` or ``None``, a mix's counts a list, NaN
    ``None``)."""
    import pandas as pd

    return [
        {
            k: None
            if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))
            else int(v)
            if k in ("nodes", "gpus") and not isinstance(v, list)
            else v
            for k, v in r.items()
        }
        for r in frame.to_dict("records")
    ]
