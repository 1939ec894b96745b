"""What a learned scheduler sees and how its choice becomes a decision: ``encode``, ``action_mask``, ``decode``.

These three functions are shared by the Gymnasium environment (:mod:`engine.rl.env`) and by the ``rl:<name>``
scheduler at inference, so training and deployment cannot drift apart. They read the state and change nothing but
the run's :class:`RulePlacements` a caller hands ``decode``. They import numpy only (and the engine).

Action space (``Discrete(window * max_types * len(rules) + 1)``)
    Action ``a < n - 1`` means: take the job in window slot ``a // (max_types * len(rules))``, put it on GPU type
    slot ``(a // len(rules)) % max_types`` (the cluster's GPU types in the order they first appear in the
    cluster spec) using packing rule ``rules[a % len(rules)]`` (names of :data:`engine.schedulers.placement.
    PLACEMENTS`, applied to the GPUs of that type only), or the rule ``"evict"`` (below). The last action,
    ``n - 1``, is *wait*: start nothing more now and let time run to the next event. Actions never name GPU
    indices, so a model trained on one cluster runs on any other with at most ``max_types`` GPU types.

Evict (the rule ``"evict"``, offered only by encodings that list it)
    Make room, then start: preempt running jobs of the GPU type (which ones, and when an eviction is offered, is
    the eviction policy of :mod:`engine.rl.eviction`, with the encoding's ``evict_scope`` and
    ``max_evictions``), then place the job there with :data:`~engine.rl.eviction.EVICT_PLACEMENT`.

Mask
    ``action_mask(state)[a]`` is true exactly when the action is feasible now: the slot holds a job and the
    rule finds GPUs of that type for it (all rules here take idle GPUs of one type, so a whole-GPU job fits a
    type iff the type's eligible nodes have ``gpus`` idle GPUs in total, or, with ``whole_node`` and a job that
    one of them could hold, iff one of them has ``gpus`` idle GPUs; a fractional job fits iff one GPU of the
    type can host it). *Wait* is allowed whenever a job is running; when nothing runs it is masked, so an
    agent can never idle an empty cluster while a job could start.

Job window
    ``window_order="arrival"``: the first ``window`` waiting jobs in queue order (slot 0 = the oldest job, the
    one FIFO would start). ``"mixed"``: the first half in queue order, the rest the waiting jobs with the
    smallest estimated GPU-time (``estimate_s * gpus * gpu_fraction``) among those that can start now.

Observation (a dict of float32 arrays, all features roughly in [0, 1]; :func:`encode`)
    ``jobs`` (window x :attr:`EncodingConfig.job_features`): per job slot, :func:`job_features`, then for each GPU
    type slot in turn :func:`job_type_features` (zeros for empty slots and absent types), then with ``deadlines``
    :func:`deadline_features`.
    ``groups`` (max_types x :attr:`EncodingConfig.group_features`): :func:`group_features` per GPU type slot, then
    with ``node_health`` :func:`node_health_features` (zeros for absent types).
    ``global`` (:attr:`EncodingConfig.global_features`): :func:`global_features`, then with ``preemption_history``
    :func:`preemption_history_features`.
    ``action_mask`` (n actions, int8): the mask above, for libraries that read masks from observations.

Elastic starts (``elastic_start``)
    An elastic job fits a type, and its rule places it, on its ``min_gpus`` GPUs instead of the ones it asks for;
    around the agent's starts at each decision point, optimus's sizing runs (:func:`elastic_sizer`): grown jobs
    shrink for the first waiting job that would not fit before them, spare GPUs go out by marginal gain after them
    (:class:`engine.schedulers.elastic.ElasticGreedy`). Rigid jobs are untouched, so is a run without elastic jobs.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from engine.errors import EngineError, check_int, reject_unknown_keys
from engine.rl.eviction import EVICT_PLACEMENT, EVICT_SCOPES, eviction_cost_gpu_s, find_victims
from engine.schedulers import PLACEMENTS, Placement  # the package: importing it registers fgd and topo-pack
from engine.schedulers.elastic import ElasticGreedy
from engine.sim.job import Job
from engine.sim.state import ClusterState, Decision, Preempt, Start

#: Job features that do not depend on the GPU types, then :data:`JOB_TYPE_FEATURES` per GPU type slot.
JOB_BASE_FEATURES = 12
JOB_TYPE_FEATURES = 4
GROUP_FEATURES = 10
#: More per GPU type slot with ``node_health``: nodes down, time since repair, failures so far.
NODE_HEALTH_FEATURES = 3
#: More per job slot with ``deadlines``: has a deadline, slack, lateness, can shrink, can grow.
DEADLINE_FEATURES = 5
GLOBAL_FEATURES = 8
#: More global features with ``preemption_history``: how often the waiting and running jobs have been preempted.
PREEMPTION_HISTORY_FEATURES = 4
#: Waiting jobs at the head of the queue that :func:`preemption_history_features` reads (a long queue costs the same).
HISTORY_HEAD = 32
WINDOW_ORDERS = ("arrival", "mixed")
#: Per (job, GPU type) slot, when the encoding offers ``"evict"``: can evict-start there, victims' remaining work.
EVICT_FEATURES = 2
#: One more per (job, GPU type) slot with ``evict_cost``: what evicting there would cost the victims.
EVICT_COST_FEATURES = 1
#: The rule that makes room by preempting (:mod:`engine.rl.eviction`).
EVICT = "evict"
#: Rules an encoding may use: packing rules that start a job wherever the mask says it fits a type (a whole-GPU job
#: on idle GPUs, spread over nodes if need be; a fractional one on a GPU that can host it; the mask relies on it),
#: and ``"evict"``. ``fgd`` and ``topo-pack`` are the placements of the schedulers of those names: where the
#: fragmentation of the cluster grows least (:mod:`engine.schedulers.fgd`), on the fewest nodes and racks
#: (:mod:`engine.schedulers.topo`).
RULES = ("first-fit", "best-fit", "least-loaded", "fgd", "topo-pack", EVICT)


@dataclass(frozen=True)
class EncodingConfig:
    """The shape of observations and actions; a model only runs with the encoding it was trained with.

    Attributes:
        window: number of job slots the agent chooses from.
        max_types: number of GPU-type slots; clusters with more GPU types are refused.
        rules: packing rules offered per (job, type), names from :data:`RULES`.
        window_order: how the window is filled, ``"arrival"`` or ``"mixed"`` (see the module docstring).
        max_evictions: with ``"evict"``, a job that was preempted this many times is never a victim again
            (bounds the work rollbacks can lose when preemption is not free); ``None``: no limit.
        evict_cost: with ``"evict"``, one more feature per (job, GPU type) slot: the GPU-seconds of work its
            victims would lose (work since their last checkpoint plus the restart overhead, per the run's
            preemption model; 0 when preemption is free). Without it an agent cannot tell a cheap eviction
            from a costly one. Off by default, so encodings written before the option keep their layout.
        evict_scope: with ``"evict"``, where a job that one node could hold makes room: ``"type"`` (anywhere
            on the GPU type, the default) or ``"node"`` (on one node, so it is not spread; module docstring).
        whole_node: a multi-GPU job that one node of a type could hold fits that type only where one node has
            it idle, so no action starts it spread over nodes (a spread job is slowed by communication): it
            waits or, with ``"evict"``, makes room. Off by default, so encodings written before it stay as
            they were.
        node_health: :data:`NODE_HEALTH_FEATURES` more features per GPU type slot (:func:`node_health_features`:
            its nodes down now, time since their repair, failures so far), for runs under a failure model. Off
            by default, so encodings written before it (and the shipped agents) keep their layout.
        deadlines: :data:`DEADLINE_FEATURES` more features per job slot (:func:`deadline_features`: has a
            deadline, its slack, how late it is sure to be, how far it can shrink and grow), for workloads with
            deadlines or elastic jobs. Off by default, so encodings written before it (and the shipped agents)
            keep their layout.
        preemption_history: :data:`PREEMPTION_HISTORY_FEATURES` more global features
            (:func:`preemption_history_features`: how many of the waiting and running jobs were preempted, and how
            often), so an agent can see a run in which evictions feed on each other (a preemption cascade: each
            eviction under costly preemption loses work, which lengthens the queue, which brings more evictions).
            Off by default, so encodings written before it (and the shipped agents) keep their layout.
        elastic_start: an elastic job starts on its ``min_gpus``, then optimus's sizing grows and shrinks it
            (module docstring, "Elastic starts"). The layout is the same; off by default, so encodings written
            before it act as they did.
    """

    window: int = 8
    max_types: int = 4
    rules: tuple[str, ...] = ("first-fit", "best-fit")
    window_order: str = "arrival"
    max_evictions: int | None = None
    evict_cost: bool = False
    evict_scope: str = "type"
    whole_node: bool = False
    node_health: bool = False
    deadlines: bool = False
    preemption_history: bool = False
    elastic_start: bool = False

    def __post_init__(self) -> None:
        check_int(self.window, "encoding.window", 1, 256)
        check_int(self.max_types, "encoding.max_types", 1, 32)
        object.__setattr__(self, "rules", tuple(self.rules))
        if not self.rules or any(r not in RULES for r in self.rules) or len(set(self.rules)) != len(self.rules):
            raise EngineError(f"encoding.rules {list(self.rules)!r}: expected distinct names from {list(RULES)}")
        if self.max_evictions is not None and (
            isinstance(self.max_evictions, bool)
            or not (isinstance(self.max_evictions, int) and self.max_evictions >= 1)
        ):
            raise EngineError(f"encoding.max_evictions must be an integer >= 1 or null, got {self.max_evictions!r}")
        if not isinstance(self.window_order, str) or self.window_order not in WINDOW_ORDERS:
            raise EngineError(f"encoding.window_order {self.window_order!r}: expected one of {list(WINDOW_ORDERS)}")
        if not isinstance(self.evict_cost, bool):
            raise EngineError(f"encoding.evict_cost must be true or false, got {self.evict_cost!r}")
        if self.evict_cost and not self.evicts:
            raise EngineError('encoding.evict_cost needs the "evict" rule in encoding.rules')
        if not isinstance(self.evict_scope, str) or self.evict_scope not in EVICT_SCOPES:
            raise EngineError(f"encoding.evict_scope {self.evict_scope!r}: expected one of {list(EVICT_SCOPES)}")
        if self.evict_scope != "type" and not self.evicts:
            raise EngineError('encoding.evict_scope needs the "evict" rule in encoding.rules')
        for name in ("whole_node", "node_health", "deadlines", "preemption_history", "elastic_start"):
            if not isinstance(getattr(self, name), bool):
                raise EngineError(f"encoding.{name} must be true or false, got {getattr(self, name)!r}")

    @property
    def evicts(self) -> bool:
        """Whether the ``"evict"`` rule is offered."""
        return EVICT in self.rules

    @property
    def type_features(self) -> int:
        """Features per (job, GPU type) slot."""
        return (
            JOB_TYPE_FEATURES + (EVICT_FEATURES if self.evicts else 0) + (EVICT_COST_FEATURES if self.evict_cost else 0)
        )

    @property
    def job_features(self) -> int:
        """Features per job slot: the base ones plus :attr:`type_features` for each GPU type slot, plus
        :data:`DEADLINE_FEATURES` with ``deadlines``."""
        return JOB_BASE_FEATURES + self.type_features * self.max_types + (DEADLINE_FEATURES if self.deadlines else 0)

    @property
    def group_features(self) -> int:
        """Features per GPU type slot: :data:`GROUP_FEATURES`, plus :data:`NODE_HEALTH_FEATURES` with
        ``node_health``."""
        return GROUP_FEATURES + (NODE_HEALTH_FEATURES if self.node_health else 0)

    @property
    def global_features(self) -> int:
        """Global features: :data:`GLOBAL_FEATURES`, plus :data:`PREEMPTION_HISTORY_FEATURES` with
        ``preemption_history``."""
        return GLOBAL_FEATURES + (PREEMPTION_HISTORY_FEATURES if self.preemption_history else 0)

    @property
    def n_actions(self) -> int:
        return self.window * self.max_types * len(self.rules) + 1

    @property
    def wait_action(self) -> int:
        return self.n_actions - 1

    def action(self, slot: int, type_slot: int, rule: int) -> int:
        """The action index of (job slot, GPU-type slot, rule index)."""
        return (slot * self.max_types + type_slot) * len(self.rules) + rule

    def unpack(self, action: int) -> tuple[int, int, int]:
        """(job slot, GPU-type slot, rule index) of a non-wait action."""
        r = len(self.rules)
        return action // (self.max_types * r), (action // r) % self.max_types, action % r

    def to_dict(self) -> dict[str, Any]:
        out = {
            "window": self.window,
            "max_types": self.max_types,
            "rules": list(self.rules),
            "window_order": self.window_order,
        }
        if self.max_evictions is not None:  # cards written before the option existed stay as they were
            out["max_evictions"] = self.max_evictions
        if self.evict_cost:
            out["evict_cost"] = True
        if self.evict_scope != "type":
            out["evict_scope"] = self.evict_scope
        if self.whole_node:
            out["whole_node"] = True
        if self.node_health:
            out["node_health"] = True
        if self.deadlines:
            out["deadlines"] = True
        if self.preemption_history:
            out["preemption_history"] = True
        if self.elastic_start:
            out["elastic_start"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EncodingConfig:
        known = {
            "window",
            "max_types",
            "rules",
            "window_order",
            "max_evictions",
            "evict_cost",
            "evict_scope",
            "whole_node",
            "node_health",
            "deadlines",
            "preemption_history",
            "elastic_start",
        }
        reject_unknown_keys(data, known, "encoding")
        rules = data.get("rules", cls.rules)
        if not isinstance(rules, (list, tuple)) or not all(isinstance(r, str) for r in rules):
            raise EngineError(f"encoding.rules must be a list of rule names from {list(RULES)}, got {rules!r}")
        return cls(**{**data, "rules": tuple(rules)})


@dataclass
class Snapshot:
    """Everything ``encode``/``action_mask``/``decode`` derive from one state (computed once per decision).

    Attributes:
        window: job ids in the slots (may be shorter than the window).
        fits: per slot, boolean per cluster GPU type: the job can start on that type now (with ``whole_node``,
            without spreading over nodes when one node of the type could hold it).
        mask: the action mask (bool, ``n_actions``).
        victims: ``(slot, type) -> job ids`` the ``"evict"`` rule would preempt to start that slot's job on that
            type (only pairs where it is offered).
        victim_work_gpu_s: ``(slot, type) ->`` estimated GPU-seconds those victims still had to run.
        victim_cost_gpu_s: ``(slot, type) ->`` GPU-seconds of work evicting those victims would cost them
            (filled only for encodings with ``evict_cost``).
    """

    window: list[int]
    fits: list[np.ndarray]
    mask: np.ndarray
    type_fits_cache: dict[int, np.ndarray] = field(default_factory=dict)
    victims: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)
    victim_work_gpu_s: dict[tuple[int, int], float] = field(default_factory=dict)
    victim_cost_gpu_s: dict[tuple[int, int], float] = field(default_factory=dict)


def _type_fits(state: ClusterState, job: Job, n_types: int, whole_node: bool) -> np.ndarray:
    """Boolean per GPU type: can ``job`` start on idle (or, if fractional, shareable) GPUs of that type now;
    with ``whole_node``, on one node of the type when one of its eligible nodes is big enough."""
    lay = state.layout
    if job.gpu_fraction < 1.0:
        hosts = state.can_host(job)
        return np.bincount(lay.gpu_type[hosts], minlength=n_types) > 0
    if state.free_gpus < job.gpus:
        return np.zeros(n_types, dtype=bool)
    elig = state.eligible_nodes(job)
    free = np.where(elig, state.node_free, 0)
    fits = np.bincount(lay.node_type, weights=free, minlength=n_types) >= job.gpus
    if whole_node and job.gpus > 1:
        block = np.zeros(n_types)
        np.maximum.at(block, lay.node_type, free)
        size = np.zeros(n_types)
        np.maximum.at(size, lay.node_type, np.where(elig, lay.node_gpus, 0))
        fits = np.where(size >= job.gpus, block >= job.gpus, fits)
    return fits


def _check_cluster(state: ClusterState, cfg: EncodingConfig) -> int:
    n_types = len(state.layout.type_names)
    if n_types > cfg.max_types:
        raise EngineError(
            f"this model handles clusters with at most {cfg.max_types} GPU types; the cluster has "
            f"{n_types} ({', '.join(state.layout.type_names)})"
        )
    return n_types


def snapshot(state: ClusterState, cfg: EncodingConfig, index: QueueIndex | None = None) -> Snapshot:
    """Choose the window, find where each of its jobs fits and build the mask.

    ``index``: the run's :class:`QueueIndex`, if the caller keeps one (a scheduler whose every ``decide`` call
    takes a snapshot); the ``mixed`` window then takes its shortest jobs from it instead of scanning the queue
    (the same jobs, in the same order).
    """
    n_types = _check_cluster(state, cfg)
    jobs, shapes = state.jobs, state.job_shape
    cache: dict[int, np.ndarray] = {}
    startable: dict[int, bool] = {}

    def elastic_shape(j: int) -> int:
        return ~j if jobs[j].elastic else shapes[j]  # an elastic start is its own shape (min_gpus)

    shape_of: Callable[[int], int] = elastic_shape if cfg.elastic_start else shapes.__getitem__

    def fits_of_shape(sid: int, j: int) -> np.ndarray:
        f = cache.get(sid)
        if f is None:
            f = cache[sid] = _type_fits(state, start_size(jobs[j], cfg), n_types, cfg.whole_node)
            startable[sid] = bool(f.any())
        return f

    def can_start(j: int) -> bool:
        sid = shape_of(j)
        s = startable.get(sid)
        if s is None:
            fits_of_shape(sid, j)
            s = startable[sid]
        return s

    if cfg.elastic_start:  # the index groups jobs by their requested shape, not by the start's (elastic_shape)
        index = None
    if index is not None:
        index.update(state)
    if cfg.window_order == "arrival":
        window = list(islice(state.queue, cfg.window))
    else:
        head = (cfg.window + 1) // 2
        window = list(islice(state.queue, head))
        rest = cfg.window - len(window)
        if rest and len(state.queue) > len(window):
            taken = set(window)
            if index is None:
                cand = (j for j in state.queue if j not in taken and can_start(j))
                window += heapq.nsmallest(rest, cand, key=lambda j: (_gpu_time(jobs[j]), j))
            else:
                window += index.shortest(state, rest, taken, can_start)
    fits = [fits_of_shape(shape_of(j), j) for j in window]
    n_rules = len(cfg.rules)
    mask = np.zeros(cfg.n_actions, dtype=bool)
    block = cfg.max_types * n_rules
    victims, victim_work = (
        find_victims(
            state, window, fits, n_types, _tables(state.cluster).job_speeds, cfg.evict_scope, cfg.max_evictions
        )
        if cfg.evicts
        else ({}, {})
    )
    evict_rule = cfg.rules.index(EVICT) if cfg.evicts else -1
    for slot, f in enumerate(fits):
        row = np.zeros((cfg.max_types, n_rules), dtype=bool)
        row[:n_types] = f[:, None]
        if evict_rule >= 0:
            row[:, evict_rule] = False
            for t in range(n_types):
                row[t, evict_rule] = (slot, t) in victims
        mask[slot * block : (slot + 1) * block] = row.ravel()
    mask[-1] = bool(state.running)
    cost = eviction_cost_gpu_s(state, victims) if cfg.evict_cost else {}
    return Snapshot(window, fits, mask, cache, victims, victim_work, cost)


def start_size(job: Job, cfg: EncodingConfig) -> Job:
    """``job`` as the encoding starts it: with ``elastic_start`` an elastic job asks for its ``min_gpus``."""
    return replace(job, gpus=job.min_gpus) if cfg.elastic_start and job.elastic else job


def elastic_sizer(cfg: EncodingConfig, state: ClusterState) -> ElasticGreedy | None:
    """The optimus sizing around the agent's starts for the run of ``state`` (module docstring, reset for it), or
    ``None`` without ``elastic_start`` or an elastic job in the run: call its ``make_room`` at each decision point
    before the agent acts, ``hand_out`` after."""
    if not (cfg.elastic_start and any(job.elastic for job in state.jobs)):
        return None
    sizer = ElasticGreedy("optimus", deadlines=False)
    sizer.reset(state)
    return sizer


def decision_point(
    state: ClusterState,
    cfg: EncodingConfig,
    choose: Callable[[Snapshot], int],
    sizer: ElasticGreedy | None = None,
    placements: RulePlacements | None = None,
    index: QueueIndex | None = None,
) -> Iterator[Decision]:
    """The decisions of one decision point of a scheduler that acts in ``cfg`` (an agent, a teacher within its
    encoding): ``choose(snapshot)`` picks an action at a time, each applied before the next snapshot, until it
    picks *wait*; with a ``sizer`` (:func:`elastic_sizer`), its ``make_room`` before them and its ``hand_out``
    after (the environment does the same around the agent's steps)."""
    if sizer is not None:
        yield from sizer.make_room(state)
    started: list[int] = []
    while True:
        snap = snapshot(state, cfg, index)
        action = choose(snap)
        if action == cfg.wait_action:
            break
        decisions = decode(state, action, cfg, snap, placements)
        if sizer is None:
            yield from decisions
            continue
        for d in decisions:
            if type(d) is Start:
                started.append(d.job_id)
            yield d
    if sizer is not None:
        yield from sizer.hand_out(state, started)


def _gpu_time(job: Job) -> float:
    return job.estimate_s * job.gpus * job.gpu_fraction


class QueueIndex:
    """One run's waiting jobs by shape, each shape's sorted by (estimated GPU-time, job id): where the ``mixed``
    window finds the shortest jobs that can start now in time that grows with the number of shapes, not with
    the queue (a queue of thousands scanned at every start made the teachers quadratic; issue 32).

    It learns of jobs from ``state.entered`` (every job that enters the queue is listed there during or after
    the ``decide`` call it entered in), so it must see a snapshot of every ``decide`` call of the run: a
    scheduler makes one at ``reset`` and passes it to every :func:`snapshot`. Jobs that left the queue are
    dropped when met.
    """

    def __init__(self) -> None:
        self._jobs: Sequence[Job] | None = None
        self._by_shape: dict[int, list[tuple[float, int]]] = {}
        self._held: set[int] = set()
        self._entered: list[int] = []  # the state's list read last (kept, so its identity stays its own)
        self._read = 0  # how much of it was read
        # Shapes that could not start when ``state.stops`` was ``_stops``: resources only shrink until a job
        # stops, so they cannot start before it changes.
        self._blocked: set[int] = set()
        self._stops = -1

    def update(self, state: ClusterState) -> None:
        """Add the jobs that entered the queue since the last call (the whole queue at the first)."""
        entered = state.entered
        if self._jobs is not state.jobs:  # a new run (or the first call): start from its queue
            self._jobs = state.jobs
            self._by_shape, self._held, self._blocked, self._stops = {}, set(), set(), -1
            self._add(state, state.queue)
        elif entered is self._entered:
            self._add(state, islice(entered, self._read, None))
        else:  # the engine started a new list at the end of the last decide call
            self._add(state, entered)
        self._entered, self._read = entered, len(entered)

    def _add(self, state: ClusterState, job_ids: Iterable[int]) -> None:
        jobs, shapes, held, by_shape = state.jobs, state.job_shape, self._held, self._by_shape
        for j in job_ids:
            if j not in held:
                held.add(j)
                bisect.insort(by_shape.setdefault(shapes[j], []), (_gpu_time(jobs[j]), j))

    def shortest(self, state: ClusterState, n: int, taken: set[int], can_start: Callable[[int], bool]) -> list[int]:
        """The ``n`` waiting jobs not in ``taken`` with the smallest (estimated GPU-time, job id) among those
        whose shape ``can_start(job_id)`` now, smallest first: what ``heapq.nsmallest`` over the queue gives."""
        if state.stops != self._stops:  # resources grew: a shape that could not start may now
            self._blocked, self._stops = set(), state.stops
        found: list[tuple[float, int]] = []
        for sid in state.queue_shape_counts:
            if sid in self._blocked:
                continue
            keys = self._by_shape[sid]
            if not can_start(keys[0][1]):  # every entry of a shape has its placements, gone or waiting
                self._blocked.add(sid)
                continue
            i = got = 0
            while i < len(keys) and got < n:
                j = keys[i][1]
                if not state.is_waiting(j):  # started since: drop it (it comes back through entered)
                    del keys[i]
                    self._held.discard(j)
                    continue
                i += 1
                if j not in taken:
                    found.append(keys[i - 1])
                    got += 1
        return [j for _, j in heapq.nsmallest(n, found)]


class _TypeTables:
    """Static per-GPU-type arrays of one cluster layout (computed once per layout, see :func:`_tables`)."""

    def __init__(self, cluster) -> None:
        lay = cluster.layout
        self.cluster = cluster
        self._speeds: dict[str, np.ndarray] = {}
        n_types = len(lay.type_names)
        self.n_types = n_types
        self.total = np.bincount(lay.gpu_type, minlength=n_types).astype(float)
        self.nodes = np.bincount(lay.node_type, minlength=n_types).astype(float)
        self.node_order = np.argsort(lay.node_type, kind="stable")  # nodes grouped by type
        self.starts = np.searchsorted(lay.node_type[self.node_order], np.arange(n_types))
        self.max_node_gpus = np.maximum.reduceat(lay.node_gpus[self.node_order], self.starts).astype(float)
        self.speed = np.minimum(lay.type_speed / 4.0, 1.0)
        self.vram = np.minimum(lay.type_vram_gib / 80.0, 1.0)
        # group_features' columns that never change, filled once; the others are filled per state
        self.groups = np.zeros((n_types, GROUP_FEATURES))
        self.groups[:, [0, 1, 4, 5, 9]] = np.stack(
            [
                np.ones(n_types),
                self.total / lay.n_gpus,
                self.speed,
                self.vram,
                np.minimum(self.max_node_gpus / 8.0, 1.0),
            ],
            axis=1,
        )

    def job_speeds(self, job_type: str) -> np.ndarray:
        """Speed of a job of ``job_type`` on each GPU type (``Cluster.speed``; cached per job type)."""
        sp = self._speeds.get(job_type)
        if sp is None:
            sp = self._speeds[job_type] = np.array(
                [self.cluster.speed(job_type, t) for t in self.cluster.layout.type_names]
            )
        return sp


_TABLES: dict[int, tuple[Any, _TypeTables]] = {}


def _tables(cluster) -> _TypeTables:
    hit = _TABLES.get(id(cluster))
    if hit is not None and hit[0] is cluster:
        return hit[1]
    if len(_TABLES) > 64:
        _TABLES.clear()
    t = _TypeTables(cluster)
    _TABLES[id(cluster)] = (cluster, t)
    return t


def type_speeds(cluster, job_type: str) -> np.ndarray:
    """Speed of a job of ``job_type`` on each GPU type of ``cluster`` (``Cluster.speed``; cached)."""
    return _tables(cluster).job_speeds(job_type)


class _JobTables:
    """Per job of one run, the features that never change, computed when the job is first in a window (see
    :func:`_job_tables`), so that encoding a state reads them instead of recomputing them at every decision."""

    def __init__(self, state: ClusterState, tab: _TypeTables) -> None:
        self.cluster, self.jobs, self._tab = state.cluster, state.jobs, tab
        n = len(state.jobs)
        #: job_features' own values of each job seen, by job id (the rest depend on the state)
        self.own: dict[int, tuple[Any, ...]] = {}
        # job_type_features' columns 0 and 1 (its speed and run time per type), and what column 3 reads; rows of
        # the jobs seen are filled (zeros are not written until touched: a long trace costs what its windows saw)
        self.per_type = np.zeros((n, tab.n_types, 2))
        self.gpus = np.zeros((n, 1), dtype=np.int64)
        self.whole = np.zeros((n, 1), dtype=bool)
        self.elig = np.zeros((n, tab.n_types), dtype=bool)

    def see(self, state: ClusterState, window: list[int]) -> None:
        """Fill the rows of the jobs of ``window`` not seen before."""
        new = [j for j in window if j not in self.own]
        if not new:
            return
        comm, log1p, tab = state.cluster.communication, math.log1p, self._tab
        for j in new:
            job = state.jobs[j]
            gpu_time = _gpu_time(job)
            self.own[j] = (
                math.log2(job.gpus) / 6.0,
                job.gpu_fraction,
                min(job.vram_gib / 80.0, 1.0),
                log1p(job.estimate_s / 60.0) / 10.0,
                log1p(gpu_time / 60.0) / 12.0,
                min(comm.get(job.job_type, comm.get("batch", 0.3)), 1.0),
                job.gpus * job.gpu_fraction,
                job.submit_s,
                job.user,
                gpu_time,
            )
            self.gpus[j, 0], self.whole[j, 0] = job.gpus, not job.fractional
            self.elig[j] = state.eligible_types(job)
        jobs = [state.jobs[j] for j in new]
        speeds = np.array([tab.job_speeds(job.job_type) for job in jobs])
        est = np.array([job.estimate_s for job in jobs])[:, None]
        self.per_type[new] = np.stack([np.minimum(speeds / 4.0, 1.0), np.log1p(est / speeds / 60.0) / 10.0], axis=2)


_JOB_TABLES: dict[int, _JobTables] = {}
#: Runs whose tables are kept; with more at once the oldest table goes, and is filled again only from the jobs its
#: windows see (what encoding cost before the tables), so no number of concurrent runs makes a decision slower.
_MAX_JOB_TABLES = 4


def _job_tables(state: ClusterState, tab: _TypeTables) -> _JobTables:
    """The :class:`_JobTables` of ``state``'s run (its job list on its cluster), made at the first call."""
    hit = _JOB_TABLES.get(id(state.jobs))
    if hit is not None and hit.jobs is state.jobs and hit.cluster is state.cluster:
        return hit
    while len(_JOB_TABLES) >= _MAX_JOB_TABLES:  # the oldest first (dicts keep insertion order)
        _JOB_TABLES.pop(next(iter(_JOB_TABLES)), None)
    t = _JOB_TABLES[id(state.jobs)] = _JobTables(state, tab)
    return t


#: The parts of an observation (the keys of :func:`encode`'s dict).
OBSERVATION_PARTS = ("jobs", "groups", "global", "action_mask")


def encode(
    state: ClusterState,
    cfg: EncodingConfig = EncodingConfig(),
    snap: Snapshot | None = None,
    parts: tuple[str, ...] = OBSERVATION_PARTS,
) -> dict[str, np.ndarray]:
    """The observation dict for ``state``: the feature functions below, laid out as the module docstring says;
    only the ``parts`` asked for (a policy that reads fewer saves computing the others at every decision)."""
    snap = snap or snapshot(state, cfg)
    tab = _tables(state.cluster)
    block_t = _idle_blocks(state, tab)
    jf = np.zeros((cfg.window, cfg.job_features), dtype=np.float32)
    n = len(snap.window)
    if n:
        run = _job_tables(state, tab)
        run.see(state, snap.window)
        fits = np.array(snap.fits, dtype=bool)  # window jobs x GPU types
        jf[:n, :JOB_BASE_FEATURES] = job_features(state, snap, run, fits)
        end = JOB_BASE_FEATURES + cfg.type_features * cfg.max_types
        jf[:n, JOB_BASE_FEATURES:end] = job_type_features(state, snap, cfg, tab, block_t, run, fits).reshape(n, -1)
        if cfg.deadlines:
            jf[:n, end:] = deadline_features(state, snap, tab)
    gf = np.zeros((cfg.max_types, cfg.group_features), dtype=np.float32)
    gf[: tab.n_types, :GROUP_FEATURES] = group_features(state, tab, block_t)
    if cfg.node_health:
        gf[: tab.n_types, GROUP_FEATURES:] = node_health_features(state, tab)
    obs = {"jobs": jf, "groups": gf}
    if "global" in parts:
        glob = global_features(state, snap)
        obs["global"] = np.concatenate([glob, preemption_history_features(state)]) if cfg.preemption_history else glob
    if "action_mask" in parts:
        obs["action_mask"] = snap.mask.astype(np.int8)
    return obs


def _idle_blocks(state: ClusterState, tab: _TypeTables) -> np.ndarray:
    """Per GPU type: the largest number of idle GPUs on one node."""
    return np.maximum.reduceat(state.node_free[tab.node_order], tab.starts)


def job_features(state: ClusterState, snap: Snapshot, run: _JobTables, fits: np.ndarray) -> list[tuple[float, ...]]:
    """The :data:`JOB_BASE_FEATURES` features of each window job that do not depend on the GPU types, in order:

    present (1), log2(gpus)/6, demand / free capacity (clipped at 2, halved; 1 when nothing is free),
    gpu_fraction, vram_gib/80 (clipped at 1), log1p(wait/60 s)/10, log1p(estimate/60 s)/10, log1p(estimated
    GPU-time/60 s)/12, rank of the estimated GPU-time within the window (0 = shortest, 1 = longest), the user's
    current GPU share of the cluster, can start now (on some type), the job type's communication sensitivity
    (clipped at 1). ``run``: the run's :class:`_JobTables`, with the window's jobs seen; ``fits``: ``snap.fits`` as
    one array (window jobs x GPU types), shared with :func:`job_type_features`.
    """
    window, now, n_gpus, log1p = snap.window, state.now_s, state.layout.n_gpus, math.log1p
    free_cap = max(state.free_capacity, 0.0)
    own, user_gpus = run.own, state.user_gpus
    gpu_times = [own[j][9] for j in window]
    ranks = np.argsort(np.argsort(gpu_times, kind="stable"), kind="stable").tolist() if gpu_times else []
    denom = max(len(window) - 1, 1)
    fit_any: Any = fits.any(axis=1).tolist()  # list[bool]: can start on some type
    rows: list[tuple[float, ...]] = []
    for slot, j in enumerate(window):
        gpus_6, fraction, vram, est, gpu_time, comm, demand, submit_s, user, _ = own[j]
        rows.append(
            (
                1.0,
                gpus_6,
                min(demand / free_cap, 2.0) / 2.0 if free_cap > 0 else 1.0,
                fraction,
                vram,
                log1p(max(now - submit_s, 0.0) / 60.0) / 10.0,
                est,
                gpu_time,
                ranks[slot] / denom,
                min(user_gpus.get(user, 0.0) / n_gpus, 1.0),
                float(fit_any[slot]),
                comm,
            )
        )
    return rows


def job_type_features(
    state: ClusterState,
    snap: Snapshot,
    cfg: EncodingConfig,
    tab: _TypeTables,
    block_t: np.ndarray,
    run: _JobTables,
    fits: np.ndarray,
) -> np.ndarray:
    """Features of each window job on each GPU type slot (window jobs x ``max_types`` x
    :attr:`EncodingConfig.type_features`; zeros for absent types), in order:

    its speed there (``Cluster.speed(job_type, type)``, /4, clipped at 1), log1p(estimate / that speed / 60 s)/10
    (its expected run time there), can start now on that type, and can start now on one node of that type (a node
    of the type it may use has ``gpus`` idle GPUs, so it would not be spread over nodes; for a fractional job, the
    same as can start now). With the ``"evict"`` rule, :data:`EVICT_FEATURES` more: can start there by evicting,
    and log1p(estimated GPU-seconds its victims still had to run / 60 s)/12; with ``evict_cost``,
    :data:`EVICT_COST_FEATURES` more: log1p(GPU-seconds of work evicting them would cost / 60 s)/12, their work
    since the last checkpoint plus the restart overhead (0 under free preemption).
    """
    n_types, window = tab.n_types, np.array(snap.window)
    # All window jobs at once. Eligibility is per type (memory, allowed types), so a whole job fits on one node
    # of an eligible type exactly when the type's largest idle block holds it.
    per_type = np.zeros((len(window), cfg.max_types, cfg.type_features))
    per_type[:, :n_types, :2] = run.per_type[window]
    per_type[:, :n_types, 2] = fits
    per_type[:, :n_types, 3] = np.where(run.whole[window], run.elig[window] & (block_t >= run.gpus[window]), fits)
    for (slot, t), left_gpu_s in snap.victim_work_gpu_s.items():
        per_type[slot, t, JOB_TYPE_FEATURES : JOB_TYPE_FEATURES + EVICT_FEATURES] = (
            1.0,
            math.log1p(left_gpu_s / 60.0) / 12.0,
        )
    for (slot, t), cost_gpu_s in snap.victim_cost_gpu_s.items():
        per_type[slot, t, JOB_TYPE_FEATURES + EVICT_FEATURES] = math.log1p(cost_gpu_s / 60.0) / 12.0
    return per_type


def deadline_features(state: ClusterState, snap: Snapshot, tab: _TypeTables) -> np.ndarray:
    """The :data:`DEADLINE_FEATURES` features of each window job (window jobs x 5), with ``deadlines``, in order:

    has a deadline (1/0); its slack, ``deadline_s - now - estimate / best speed`` (the best speed being that of
    its fastest eligible GPU type at its requested size; a job sent back to the queue is counted from its whole
    estimate), as log1p(max(slack, 0) / 60 s)/10, and its lateness, the same of ``max(-slack, 0)`` (how late it
    will end even if it starts now on its fastest type); both 0 without a deadline. Then how far it can shrink,
    log2(gpus / min_gpus)/6, and grow, log2(max_gpus / gpus)/6 (both 0 for a rigid job).
    """
    jobs, now, log1p, log2 = state.jobs, state.now_s, math.log1p, math.log2
    out = np.zeros((len(snap.window), DEADLINE_FEATURES))
    for slot, j in enumerate(snap.window):
        job = jobs[j]
        out[slot, 3] = log2(job.gpus / job.min_gpus) / 6.0
        out[slot, 4] = log2(job.max_gpus / job.gpus) / 6.0
        if not job.has_deadline:
            continue
        speeds = tab.job_speeds(job.job_type)[state.eligible_types(job)]
        best = float(speeds.max()) if speeds.size else 1.0
        slack_s = job.deadline_s - now - job.estimate_s / best
        out[slot, :3] = (1.0, log1p(max(slack_s, 0.0) / 60.0) / 10.0, log1p(max(-slack_s, 0.0) / 60.0) / 10.0)
    return out


def group_features(state: ClusterState, tab: _TypeTables, block_t: np.ndarray) -> np.ndarray:
    """The :data:`GROUP_FEATURES` features of each GPU type of the cluster (types x 10), in order:

    present (1), share of the cluster's GPUs, idle GPUs / GPUs of the type, largest idle block on one node / GPUs
    per node, speed/4, vram/80, free capacity (fractions counted) / GPUs of the type, fully idle nodes / nodes of
    the type, and in absolute terms (so types with different node sizes compare): largest idle block on one node
    / 8 and GPUs per node / 8 (both clipped at 1).
    """
    lay, n_types, node_free = state.layout, tab.n_types, state.node_free
    out = tab.groups.copy()
    out[:, 2] = np.bincount(lay.node_type, weights=node_free, minlength=n_types) / tab.total  # idle GPUs
    out[:, 3] = block_t / tab.max_node_gpus
    out[:, 6] = np.bincount(lay.gpu_type, weights=state.gpu_free, minlength=n_types) / tab.total
    out[:, 7] = np.bincount(lay.node_type, weights=(node_free == lay.node_gpus), minlength=n_types) / tab.nodes
    out[:, 8] = np.minimum(block_t / 8.0, 1.0)
    return out


def node_health_features(state: ClusterState, tab: _TypeTables) -> np.ndarray:
    """The :data:`NODE_HEALTH_FEATURES` features of each GPU type of the cluster (types x 3), with ``node_health``,
    in order:

    nodes of the type down now / its nodes; log1p(mean hours since its up nodes were last repaired, or since the
    run began for a node never failed) / 10 (0 when all are down); log1p(failures of its nodes so far / its nodes)
    / 4, clipped at 1. All 0 but the second under no failure model.
    """
    occ, node_type, n_types = state.occupancy, state.layout.node_type, tab.n_types
    down = np.array(occ.node_down, dtype=float)
    up_h = np.maximum(state.now_s - np.array(occ.node_up_since_s), 0.0) / 3600.0
    up_nodes_t = np.bincount(node_type, weights=1.0 - down, minlength=n_types)
    up_h_t = np.bincount(node_type, weights=up_h * (1.0 - down), minlength=n_types)
    failures_t = np.bincount(node_type, weights=np.array(occ.node_failures, dtype=float), minlength=n_types)
    return np.stack(
        [
            np.bincount(node_type, weights=down, minlength=n_types) / tab.nodes,
            np.log1p(np.divide(up_h_t, up_nodes_t, out=np.zeros(n_types), where=up_nodes_t > 0)) / 10.0,
            np.minimum(np.log1p(failures_t / tab.nodes) / 4.0, 1.0),
        ],
        axis=1,
    )


def global_features(state: ClusterState, snap: Snapshot) -> np.ndarray:
    """The :data:`GLOBAL_FEATURES` features of the whole state (float32), in order:

    log1p(queue length)/6, free capacity / cluster GPUs, running jobs / cluster GPUs (clipped at 1), log1p(oldest
    job's wait / 60 s)/10, oldest job's demand / cluster GPUs (clipped at 1), oldest job can start now (the three
    oldest-job features are 0 with an empty queue), log1p(waiting jobs outside the window)/6, waiting demand /
    cluster GPUs / 4 (clipped at 1).
    """
    jobs, queue, n_gpus, log1p = state.jobs, state.queue, state.layout.n_gpus, math.log1p
    n_queue = len(queue)
    head = next(iter(queue), None)
    waiting_demand = sum(jobs[j].gpus * jobs[j].gpu_fraction for j in queue)
    glob = np.zeros(GLOBAL_FEATURES, dtype=np.float32)
    glob[0] = log1p(n_queue) / 6.0
    glob[1] = max(state.free_capacity, 0.0) / n_gpus
    glob[2] = min(len(state.running) / n_gpus, 1.0)
    if head is not None:
        hj = jobs[head]
        glob[3] = log1p(max(state.now_s - hj.submit_s, 0.0) / 60.0) / 10.0
        glob[4] = min(hj.gpus * hj.gpu_fraction / n_gpus, 1.0)
        glob[5] = float(snap.fits[0].any()) if snap.window and snap.window[0] == head else 0.0
    glob[6] = log1p(max(n_queue - len(snap.window), 0)) / 6.0
    glob[7] = min(waiting_demand / n_gpus / 4.0, 1.0)
    return glob


def preemption_history_features(state: ClusterState) -> np.ndarray:
    """The :data:`PREEMPTION_HISTORY_FEATURES` features of how often the run's jobs have been preempted (float32,
    each in [0, 1]), with ``preemption_history``, in order:

    over the first :data:`HISTORY_HEAD` waiting jobs: the share preempted at least once, log1p(their mean
    preemptions)/3 and log1p(their most preemptions)/5 (clipped at 1); the share of the running jobs preempted at
    least once (all 0 when there are none). A cascade shows as waiting jobs preempted again and again.
    """
    times = state.preemptions
    head = [times(j) for j in islice(state.queue, HISTORY_HEAD)]
    out = np.zeros(PREEMPTION_HISTORY_FEATURES, dtype=np.float32)
    if head:
        out[0] = sum(k > 0 for k in head) / len(head)
        out[1] = min(math.log1p(sum(head) / len(head)) / 3.0, 1.0)
        out[2] = min(math.log1p(max(head)) / 5.0, 1.0)
    if state.running:
        out[3] = sum(times(j) > 0 for j in state.running) / len(state.running)
    return out


def action_mask(
    state: ClusterState, cfg: EncodingConfig = EncodingConfig(), snap: Snapshot | None = None
) -> np.ndarray:
    """Boolean mask over actions: true exactly for the feasible ones (see the module docstring)."""
    return (snap or snapshot(state, cfg)).mask


class RulePlacements:
    """The placement rules of one run, one per (rule, GPU type slot), kept for the whole run: a stateful rule (fgd's
    profile of the shapes submitted so far) then follows the run instead of being rebuilt from its whole past at
    every start, and places exactly as a fresh one would. Make a new one for each run."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, int], Placement] = {}

    def place(self, state: ClusterState, rule: str, t: int, job: Job) -> tuple[int, ...] | None:
        """GPUs of type slot ``t`` for ``job`` by placement rule ``rule`` (``None`` if it finds none)."""
        made = self._made.get((rule, t))
        if made is None:
            made = self._made[rule, t] = PLACEMENTS[rule]()
        return made(state.of_type(t), job)


def decode(
    state: ClusterState,
    action: int,
    cfg: EncodingConfig = EncodingConfig(),
    snap: Snapshot | None = None,
    placements: RulePlacements | None = None,
) -> Iterator[Decision]:
    """The decisions ``action`` stands for, to be applied in order: nothing for *wait*, one ``Start`` on
    concrete GPUs, or for ``"evict"`` the ``Preempt`` of each victim and then the ``Start``.

    The ``Start`` is placed when the iterator reaches it, on the state the preemptions left (the engine applies
    a scheduler's decisions one by one as it yields them), by ``placements`` (the run's, if the caller keeps one;
    else fresh rules). Raises ``EngineError`` at once if the action is masked out (not feasible now).
    """
    snap = snap or snapshot(state, cfg)
    action = int(action)
    if not (0 <= action < cfg.n_actions):
        raise EngineError(f"action {action} is out of range 0..{cfg.n_actions - 1}")
    if not snap.mask[action]:
        raise EngineError(f"action {action} is not feasible now (masked out)")
    if action == cfg.wait_action:
        return iter(())
    slot, t, rule = cfg.unpack(action)
    victims = snap.victims.get((slot, t), ()) if cfg.rules[rule] == EVICT else ()
    job = start_size(state.jobs[snap.window[slot]], cfg)
    return _decisions(state, job, t, cfg.rules[rule], victims, placements or RulePlacements())


def _decisions(
    state: ClusterState, job: Job, t: int, rule: str, victims: tuple[int, ...], placements: RulePlacements
) -> Iterator[Decision]:
    for v in victims:
        yield Preempt(v)
    gpus = placements.place(state, EVICT_PLACEMENT if rule == EVICT else rule, t, job)
    # The mask promised a fit of this type: anything else means a placement rule escaped the type view.
    if gpus is None or any(int(state.layout.gpu_type[g]) != t for g in gpus):
        raise EngineError(
            f"rule {rule!r} returned {gpus} for job {job.job_id}, not GPUs of type slot {t} as the mask promised"
        )
    yield Start(job.job_id, gpus)
