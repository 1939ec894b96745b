"""Teachers: hand-written policies over the learned schedulers' action space, for behaviour cloning.

A teacher sees what an agent sees (the :class:`~engine.rl.encoding.Snapshot` of a state: the job window and
where each job fits) and answers with an action index of the same encoding, so its choices can be imitated
exactly by a policy network (:mod:`engine.rl.clone`). A teacher starts the best feasible (job, GPU type) pair
it does not decline, and chooses *wait* only when it declines every feasible one (or nothing fits).

Teachers (:data:`TEACHERS`), each scoring every feasible (job, GPU type) pair and taking the smallest score
(ties: lower window slot, then lower type slot); a teacher may decline an option:

* ``sjf-fast``: shortest estimated GPU-time first (``estimate_s x gpus x gpu_fraction``); the job goes on
  the GPU type it runs fastest on among those where it fits now.
* ``short-fast``: shortest estimated run time first (``estimate_s``, whatever the GPU count), on the job's
  fastest fitting type. With heavy-tailed run times, short jobs dominate the mean wait, and multi-GPU jobs are
  not pushed back for their size alone.
* ``short-packed``: like ``short-fast``, but among the types where the job fits it prefers one with a node
  that holds the whole job (no communication over nodes), then the fastest.
* ``short-tight``: like ``short-packed``, then the type whose emptiest node has the fewest idle GPUs (packing
  tightly, as ``best-fit`` does, keeps whole nodes free for multi-GPU jobs), then the fastest.
* ``short-spare``: like ``short-tight``, but first among the types where the job fits it prefers the one with
  the least memory per GPU: a job that fits small-memory GPUs leaves large-memory ones (A100-80 next to
  V100-32) free for the jobs that fit nowhere else.
* ``short-whole``: like ``short-tight``, but a multi-GPU job that one node of a type could hold never starts
  spread over several nodes of that type: it waits for a node to free up (communication cost matters).
* ``srpt-type``: smallest estimated GPU-time *on that type* (the estimate divided by the job's speed on the
  type), so a job that gains little from a fast type leaves it to one that gains more.
* ``fifo-fast``: the oldest job that fits anywhere, on its fastest fitting type (FIFO without blocking).
* ``short-spare-evict``, ``short-whole-evict``: like ``short-spare`` and ``short-whole``, but first, the oldest
  window job that fits no GPU type now makes room with the ``"evict"`` rule (where the encoding offers it), on
  the type whose victims have the least estimated work left. Registered, ``short-whole-evict`` makes room on
  one node (``evict_scope="node"``), so it too never spreads a job that one node could hold.
* ``short-fast-evict-est``, ``short-spare-evict-est``: like ``short-fast`` and ``short-spare``, but a window
  job that fits no GPU type now may make room with ``"evict"``: such starts compete with the others by the
  job's estimate (shortest first; at equal estimates a start on idle GPUs wins).
* ``short-spare-evict-est-cap``: ``short-spare-evict-est``, but, registered, a job that has been preempted
  :data:`REGISTERED_MAX_EVICTIONS` times is never a victim again (``EncodingConfig.max_evictions``). Under
  costly preemption each eviction loses the victim's work since its last checkpoint, and a long job that short
  ones keep evicting can lose it hundreds of times and wait for days (a preemption cascade: models/HISTORY.md);
  the cap lets it finish. In a model's own encoding (``teacher:NAME``) the encoding's ``max_evictions`` applies.

The teachers without ``-evict`` decline every eviction.

Every teacher places with the packing rule ``rule`` (an index into the encoding's rules) on the chosen type.

Every teacher is also a registered scheduler under its own name (:func:`register_teachers`), a baseline that the
CLI, ``evaluate``, the app and the model cards compare agents with.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Callable, Iterator, NamedTuple

import numpy as np

from engine.errors import EngineError
from engine.rl.encoding import EVICT, EncodingConfig, QueueIndex, Snapshot, decision_point, elastic_sizer, type_speeds
from engine.schedulers.elastic import ElasticGreedy
from engine.sim.job import Job
from engine.sim.state import ClusterState, Decision


class Option(NamedTuple):
    """One feasible start a teacher scores: ``job`` on a GPU type where it runs at ``speed``.

    ``one_node``: a node of the type has ``job.gpus`` idle GPUs (the job can start without spreading over
    nodes); ``block``: the most idle GPUs on one node of the type; ``node_gpus``: the type's largest node;
    ``vram_gib``: the type's memory per GPU. ``evict``: the start needs the ``"evict"`` rule (the job does not
    fit the type now), whose victims still had ``victim_work_gpu_s`` estimated GPU-seconds to run;
    ``fits_now``: the job fits some GPU type without evicting.
    """

    job: Job
    speed: float
    one_node: bool
    block: float
    node_gpus: int
    vram_gib: float
    evict: bool = False
    victim_work_gpu_s: float = 0.0
    fits_now: bool = True


#: A teacher's key for an option (smallest first), or ``None`` to decline it.
Score = Callable[[Option], "tuple | None"]


def _sjf(o: Option) -> tuple:
    return (o.job.estimate_s * o.job.gpus * o.job.gpu_fraction, -o.speed)


def _short(o: Option) -> tuple:
    return (o.job.estimate_s, -o.speed)


def _short_packed(o: Option) -> tuple:
    return (o.job.estimate_s, not o.one_node, -o.speed)


def _short_tight(o: Option) -> tuple:
    return (o.job.estimate_s, not o.one_node, o.block, -o.speed)


def _short_spare(o: Option) -> tuple:
    return (o.job.estimate_s, o.vram_gib, not o.one_node, o.block, -o.speed)


def _short_whole(o: Option) -> tuple | None:
    if not o.one_node and o.job.gpus <= o.node_gpus:
        return None  # it could run on one node of this type later: do not spread it now
    return _short_tight(o)


def _srpt(o: Option) -> tuple:
    return (o.job.estimate_s * o.job.gpus * o.job.gpu_fraction / o.speed,)


def _fifo(o: Option) -> tuple:
    return (o.job.submit_s, o.job.job_id, -o.speed)


def _evicting_first(score: Score) -> Score:
    """``score``, plus: a job that fits no type now evicts (oldest job first, on the type whose victims have the
    least estimated work left) before anything else starts."""

    def evicting(o: Option) -> tuple | None:
        if o.evict:
            return None if o.fits_now else (0, o.job.submit_s, o.victim_work_gpu_s)
        key = score(o)
        return None if key is None else (1, *key)

    return evicting


def _evicting_by_estimate(score: Score) -> Score:
    """``score`` (whose first key is the job's estimate), plus: a job that fits no type now may evict, competing
    with the starts on idle GPUs by its estimate (shortest first; at equal estimates a start on idle GPUs wins,
    then the type whose victims have the least estimated work left)."""

    def evicting(o: Option) -> tuple | None:
        if o.evict:
            return None if o.fits_now else (o.job.estimate_s, 1, o.victim_work_gpu_s)
        key = score(o)
        return None if key is None else (key[0], 0, *key[1:])

    return evicting


def _plain(score: Score) -> Score:
    """``score`` for starts on idle GPUs only (it declines every ``"evict"`` option)."""
    return lambda o: None if o.evict else score(o)


TEACHERS: dict[str, Score] = {
    "sjf-fast": _sjf,
    "short-fast": _short,
    "short-packed": _short_packed,
    "short-tight": _short_tight,
    "short-spare": _short_spare,
    "short-whole": _short_whole,
    "srpt-type": _srpt,
    "fifo-fast": _fifo,
}
TEACHERS = {name: _plain(score) for name, score in TEACHERS.items()} | {
    "short-spare-evict": _evicting_first(_short_spare),
    "short-whole-evict": _evicting_first(_short_whole),
    "short-fast-evict-est": _evicting_by_estimate(_short),
    "short-spare-evict-est": _evicting_by_estimate(_short_spare),
    "short-spare-evict-est-cap": _evicting_by_estimate(_short_spare),
}


def teacher_action(name: str, state: ClusterState, cfg: EncodingConfig, snap: Snapshot, rule: int = 0) -> int:
    """The action teacher ``name`` takes in ``state`` (``snap`` is the state's snapshot); *wait* if nothing fits."""
    score = _score(name)
    if not 0 <= rule < len(cfg.rules):
        raise EngineError(f"teacher rule index {rule} is out of range 0..{len(cfg.rules) - 1}")
    best, best_key = cfg.wait_action, None
    lay = state.layout
    block = np.zeros(len(lay.type_names))
    np.maximum.at(block, lay.node_type, state.node_free)  # largest idle block on one node, per type
    node_gpus = np.zeros(len(lay.type_names), dtype=int)
    np.maximum.at(node_gpus, lay.node_type, lay.node_gpus)
    vram = lay.type_vram_gib
    evict_rule = cfg.rules.index(EVICT) if cfg.evicts else -1
    for slot, (j, fits) in enumerate(zip(snap.window, snap.fits)):
        evicts = [t for (s, t) in snap.victims if s == slot]
        if not fits.any() and not evicts:
            continue
        job = state.jobs[j]
        sp = type_speeds(state.cluster, job.job_type)
        fits_now = bool(fits.any())
        options = [(int(t), rule, False) for t in np.flatnonzero(fits)] + [(t, evict_rule, True) for t in evicts]
        for t, r, evict in options:
            key = score(
                Option(
                    job,
                    float(sp[t]),
                    job.fractional or block[t] >= job.gpus,
                    float(block[t]),
                    int(node_gpus[t]),
                    float(vram[t]),
                    evict,
                    snap.victim_work_gpu_s.get((slot, t), 0.0),
                    fits_now,
                )
            )
            if key is None:
                continue
            key = (*key, slot, t)
            if best_key is None or key < best_key:
                best, best_key = cfg.action(slot, t, r), key
    return best


def _score(name: str) -> Score:
    try:
        return TEACHERS[name]
    except KeyError:
        raise EngineError(f"unknown teacher {name!r}; valid teachers: {', '.join(TEACHERS)}") from None


#: The window every registered teacher chooses from (half oldest jobs, half shortest that can start now), and
#: the packing rule it places with. The agents' own encodings may differ (cards also run a model's teacher in
#: its model's encoding).
REGISTERED_WINDOW, REGISTERED_ORDER, REGISTERED_RULE = 16, "mixed", "best-fit"

#: What each teacher does, for a student (the registry's summaries).
SUMMARIES: dict[str, str] = {
    "sjf-fast": "Shortest estimated GPU-time first (estimate x GPUs), on the GPU type the job runs fastest on "
    "among those with room now. Never preempts; jobs that do not fit are skipped.",
    "short-fast": "Shortest estimated run time first, whatever the GPU count, on the job's fastest GPU type with "
    "room now. Short jobs dominate the mean wait, so this cuts it; long jobs may wait long.",
    "short-packed": "Like short-fast, but prefers a GPU type with a node that holds the whole job, so a "
    "multi-GPU job avoids slow communication between nodes.",
    "short-tight": "Like short-packed, then prefers the type whose emptiest node has the fewest idle GPUs "
    "(packing tightly, as best-fit does), keeping whole nodes free for big jobs.",
    "short-spare": "Like short-tight, but first prefers the type with the least memory per GPU that fits, "
    "leaving large-memory GPUs to the jobs that fit nowhere else.",
    "short-whole": "Like short-tight, but a multi-GPU job that one node could hold never starts spread over "
    "several nodes: it waits for a whole node (communication cost matters).",
    "srpt-type": "Smallest estimated GPU-time on each type first (estimate divided by the job's speed there), "
    "so a job that gains little from a fast GPU type leaves it to one that gains more.",
    "fifo-fast": "The oldest waiting job that fits anywhere, on its fastest GPU type with room now: FIFO order "
    "without head-of-line blocking.",
    "short-spare-evict": "short-spare, plus: the oldest waiting job that fits nowhere first preempts running "
    "jobs that would outlast it (latest estimated end first) to make room.",
    "short-whole-evict": "short-whole, plus: the oldest waiting job that fits nowhere first preempts running "
    "jobs that would outlast it (latest estimated end first) to make room, on one node "
    "if one node could hold it, so it never starts spread.",
    "short-fast-evict-est": "short-fast, plus: a job that fits nowhere may preempt running jobs that would "
    "outlast it, competing with the other starts by its estimate (shortest first).",
    "short-spare-evict-est": "short-spare, plus: a job that fits nowhere may preempt running jobs that would "
    "outlast it, competing with the other starts by its estimate (shortest first).",
    "short-spare-evict-est-cap": "short-spare-evict-est, but a job preempted 40 times is never a victim again, "
    "so a long job that short ones keep evicting still finishes (no preemption cascade).",
}
#: Teachers that may take the ``"evict"`` rule (preempt); the others decline it.
EVICTING = frozenset(n for n in TEACHERS if "-evict" in n)
#: Where each registered evicting teacher makes room (``EncodingConfig.evict_scope``): short-whole-evict, whose
#: point is never to spread a job that one node could hold, on one node; the others anywhere on the type.
REGISTERED_EVICT_SCOPE = {n: "node" if n == "short-whole-evict" else "type" for n in EVICTING}
#: How often one job may be a victim of each registered evicting teacher (``EncodingConfig.max_evictions``; the
#: others: no limit). 40 is an estimate of ours, no published number: on 40 training-range workloads of
#: hetero-1500 with costly preemption it changed 3 runs, the one cascade among them (mean wait 1,083 s -> 121 s,
#: preemptions 7,326 -> 140) and two ordinary ones (+17.7 s and +0.6 s), where caps of 1 to 5 made new long
#: waits (a wide job that may evict no one waits) and a cap of 20 changed 9 runs (models/HISTORY.md).
REGISTERED_MAX_EVICTIONS = {"short-spare-evict-est-cap": 40}


class TeacherScheduler:
    """A teacher as an engine scheduler: ``simulate`` applies its decisions (for ``"evict"``, the victims'
    ``Preempt``s, then the ``Start``) like any heuristic's.

    With ``cfg``, it chooses within that encoding (a model's own window and rules) and is called
    ``teacher:NAME``. Without, it is the registered scheduler ``NAME``: a window of :data:`REGISTERED_WINDOW`
    jobs (:data:`REGISTERED_ORDER`), GPU-type slots for every type of the cluster it runs on, and the rules
    ``best-fit`` (plus ``"evict"`` for the teachers in :data:`EVICTING`, scoped by
    :data:`REGISTERED_EVICT_SCOPE`).
    """

    def __init__(self, name: str, cfg: EncodingConfig | None = None, rule: int = 0) -> None:
        _score(name)
        self.name = f"teacher:{name}" if cfg is not None else name
        self.cfg, self.rule, self._fixed = cfg, rule, cfg is not None
        self._teacher = name
        self._index = QueueIndex()
        self._sizer: ElasticGreedy | None = None  # with an elastic_start encoding, the run's sizing (reset)

    def reset(self, state: ClusterState) -> None:
        """A registered teacher sizes its type slots to the cluster; every choice is a function of the state
        (the window's :class:`~engine.rl.encoding.QueueIndex` only finds the same jobs faster)."""
        self._index = QueueIndex()
        if not self._fixed:
            n_types = len(state.layout.type_names)
            if n_types > 32:
                raise EngineError(f"teacher {self._teacher}: clusters with at most 32 GPU types, got {n_types}")
            rules = (REGISTERED_RULE, EVICT) if self._teacher in EVICTING else (REGISTERED_RULE,)
            self.cfg = EncodingConfig(
                window=REGISTERED_WINDOW,
                max_types=max(n_types, 1),
                rules=rules,
                window_order=REGISTERED_ORDER,
                evict_scope=REGISTERED_EVICT_SCOPE.get(self._teacher, "type"),
                max_evictions=REGISTERED_MAX_EVICTIONS.get(self._teacher),
            )
            self.rule = 0
        assert self.cfg is not None
        self._sizer = elastic_sizer(self.cfg, state)

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        cfg = self.cfg
        assert cfg is not None, "reset() sizes the encoding before the first decision"
        teacher, rule = self._teacher, self.rule
        return decision_point(
            state, cfg, lambda snap: teacher_action(teacher, state, cfg, snap, rule), self._sizer, index=self._index
        )


def within(name: str, cfg: EncodingConfig, rule: str = REGISTERED_RULE) -> TeacherScheduler:
    """Teacher ``name`` choosing within a model's encoding ``cfg`` (``teacher:NAME``), placing with ``rule`` (by
    default the registered one), with the registered eviction cap where ``name`` has one (a cap only forbids
    evictions, so the choices stay the model's actions). Where it matches the registered teacher's runs, the model
    could have made every choice the registered one made. ``EngineError`` if ``rule`` is not one of ``cfg``'s."""
    if rule not in cfg.rules:
        raise EngineError(f"teacher {name} places with {rule}, not among the encoding's rules {cfg.rules}")
    cap = REGISTERED_MAX_EVICTIONS.get(name, cfg.max_evictions)
    return TeacherScheduler(name, replace(cfg, max_evictions=cap), cfg.rules.index(rule))


def register_teachers() -> None:
    """Register every teacher as an ordinary scheduler (called once, from :mod:`engine.rl`)."""
    from engine.schedulers.registry import SchedulerSpec, register

    for name in TEACHERS:
        register(SchedulerSpec(name, partial(TeacherScheduler, name), SUMMARIES[name], preemptive=name in EVICTING))
