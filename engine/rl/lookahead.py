"""A lookahead expert for expert iteration: the teachers' choices, improved by rollouts on what is known.

At a decision point, every teacher of :attr:`LookaheadConfig.candidates` proposes its action (plus *wait*,
where it is allowed). When they disagree, each proposal is tried on a *believed* copy of the present: a fresh
:class:`~engine.sim.simulator.Simulation` holding only the jobs in the system now, every one of them
believed to run exactly as long as its estimate says (a running job for the rest of its estimated run, a
preempted one for that plus what the preemption costs it under the run's preemption model). Nothing in it
reads a true duration, and no future arrival is in it. The proposal's start (with its preemptions) is applied
there first, then :attr:`LookaheadConfig.rollout` schedules the rest to the end, and the proposal whose
rollout has the smallest objective (the agent's own, :func:`engine.rl.reward.objective`) wins; ties go to the
earlier candidate. This is rollout-based policy improvement (Bertsekas' rollout algorithm): in the believed
world, the winner is at least as good as each candidate teacher followed by the rollout policy.

The expert is a labeller for :mod:`engine.rl.clone` (``clone.expert``); a decision costs one simulation per
distinct proposal, so it is slow next to the agent it teaches. ``expert:<model>``
(:func:`engine.rl.expert_scheduler`) runs the expert of a model cloned from one as a scheduler, to measure what the
agent learned from: e.g. ``python -m engine evaluate --schedulers expert:NAME,rl:NAME,short-spare-evict-est --scenario
v100-32 --seeds 30``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Iterator, Mapping, Sequence

from engine.errors import EngineError, reject_unknown_keys
from engine.rl.encoding import EVICT, EncodingConfig, Snapshot, decode, snapshot
from engine.rl.eviction import EVICT_PLACEMENT
from engine.rl.reward import RewardWeights, objective
from engine.rl.selector import PolicySwitch
from engine.rl.teacher import TEACHERS, teacher_action
from engine.schedulers.placement import PLACEMENTS
from engine.schedulers.registry import make_scheduler
from engine.sim.job import Job
from engine.sim.options import RunOptions
from engine.sim.simulator import simulate
from engine.sim.state import ClusterState, Decision, Start

#: Seconds a running job is still believed to need when its estimate has already run out.
OVERDUE_S = 60.0
#: Queued jobs a believed run holds at most, by default (:attr:`LookaheadConfig.max_jobs`, :class:`LookaheadSelector`).
MAX_JOBS = 64
#: :class:`LookaheadSelector`'s default period: chosen on training seeds 0-39 of hetero-1500 (300-3,600 s tried;
#: models/HISTORY.md, "Switching within a run by rollouts").
PERIOD_S = 600.0
#: Objectives closer than this are a tie for :class:`LookaheadSelector` (rounding, not a better schedule).
TIE = 1e-12


@dataclass(frozen=True)
class LookaheadConfig:
    """The expert's proposals and how it judges them.

    Attributes:
        candidates: teachers whose choices are compared (:data:`engine.rl.teacher.TEACHERS`); the first is the
            default when the rollouts cannot tell them apart.
        rollout: the registered scheduler that finishes each believed run; ``None``: each proposal is finished
            by the teachers that proposed it (the best of them counts), *wait* by the first candidate, so in the
            believed world the winner is at least as good as every candidate teacher on its own.
        consider_wait: also compare *wait* (start nothing until the next event), where it is allowed.
        max_jobs: the believed run holds the running jobs and at most this many queued jobs (oldest first), so
            a decision costs a bounded amount of simulation.
    """

    candidates: tuple[str, ...] = (
        "short-spare-evict-est",
        "short-spare-evict",
        "short-spare",
        "short-fast",
        "short-whole",
    )
    rollout: str | None = None
    consider_wait: bool = True
    max_jobs: int = MAX_JOBS

    def __post_init__(self) -> None:
        object.__setattr__(self, "candidates", tuple(self.candidates))
        if not self.candidates:
            raise EngineError("expert.candidates needs at least one teacher")
        for name in self.candidates:
            if name not in TEACHERS:
                raise EngineError(f"expert candidate {name!r}: expected one of {list(TEACHERS)}")
        if not (isinstance(self.max_jobs, int) and self.max_jobs >= 1):
            raise EngineError(f"expert.max_jobs must be an integer >= 1, got {self.max_jobs!r}")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "candidates": list(self.candidates)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LookaheadConfig:
        reject_unknown_keys(data, set(cls.__dataclass_fields__), "expert")
        return cls(**data)


class Lookahead:
    """The expert for one encoding and objective (see the module docstring); its believed runs use the preemption
    model of the run it decides in."""

    def __init__(self, cfg: LookaheadConfig, enc: EncodingConfig, reward: RewardWeights, rule: int = 0) -> None:
        self.cfg, self.enc, self.reward, self.rule = cfg, enc, reward, rule
        if cfg.rollout is not None:
            make_scheduler(cfg.rollout)  # an unknown name fails here, with the registry's list of names
        self.rollouts = 0  # believed runs simulated so far (what the expert cost)

    def action(self, state: ClusterState, snap: Snapshot) -> int:
        """The expert's action in ``state`` (``snap``: its snapshot); the first candidate's when all agree."""
        enc, cfg = self.enc, self.cfg
        proposals: dict[int, list[str]] = {}  # action -> the teachers that propose it
        for name in cfg.candidates:
            proposals.setdefault(teacher_action(name, state, enc, snap, self.rule), []).append(name)
        if cfg.consider_wait and snap.mask[enc.wait_action]:
            proposals.setdefault(enc.wait_action, [cfg.candidates[0]])
        if len(proposals) == 1:
            return next(iter(proposals))
        best, best_cost = enc.wait_action, float("inf")
        for a, names in proposals.items():
            finishers = names if cfg.rollout is None else [cfg.rollout]
            cost = min(self._cost(state, snap, a, f) for f in finishers)
            if cost < best_cost:
                best, best_cost = a, cost
        return best

    def _cost(self, state: ClusterState, snap: Snapshot, action: int, finisher: str) -> float:
        """The objective of the believed run that starts with ``action`` and goes on with ``finisher``."""
        enc = self.enc
        start: tuple[int, int, str] | None = None  # (job, type slot, placement rule)
        victims: tuple[int, ...] = ()
        if action != enc.wait_action:
            slot, t, rule_index = enc.unpack(int(action))
            rule = enc.rules[rule_index]
            if rule == EVICT:
                victims = snap.victims.get((slot, t), ())
                rule = EVICT_PLACEMENT
            start = (snap.window[slot], t, rule)
        job = None if start is None else start[0]
        jobs, placed, first_id = believed_present(state, self.cfg.max_jobs, job, victims)
        first = None if start is None else (first_id, start[1], start[2])
        self.rollouts += 1
        sched = _Forced(placed, first, make_scheduler(finisher))
        result = simulate(state.cluster, jobs, sched, options=RunOptions(preemption=state.preemption))
        return objective(result, self.reward)


def believed_present(
    state: ClusterState, max_jobs: int, start: int | None = None, victims: tuple[int, ...] = ()
) -> tuple[list[Job], list[tuple[int, tuple[int, ...]]], int]:
    """The present as a workload submitted at time 0, believed to run as its estimates say (module docstring).

    Returns the jobs (renumbered from 0: the running ones but ``victims``, then ``start``, then at most
    ``max_jobs`` other queued jobs, oldest first, then the victims with what their preemption costs them), the
    running ones' (believed id, GPUs), and ``start``'s believed id (``-1`` without one)."""
    now = state.now_s
    jobs: list[Job] = []

    def add(job: Job, work_s: float) -> int:
        jobs.append(replace(job, job_id=len(jobs), submit_s=0.0, duration_s=work_s, estimate_s=work_s))
        return len(jobs) - 1

    placed = [
        (add(r.job, max(r.est_end_s - now, OVERDUE_S) * r.rate), r.gpu_ids)
        for j, r in state.running.items()
        if j not in victims
    ]
    first = -1 if start is None else add(state.jobs[start], state.jobs[start].estimate_s)
    for j in [j for j in state.queue if j != start][:max_jobs]:
        add(state.jobs[j], state.jobs[j].estimate_s)
    for v in victims:
        r = state.running[v]
        add(r.job, max(r.est_end_s - now, OVERDUE_S) * r.rate + state.preemption_cost_s(v))
    return jobs, placed, first


class _Forced:
    """Rebuilds the present in a believed run (the running jobs on their GPUs, then the proposal's start),
    then hands over to the rollout scheduler; with no start (*wait*) nothing else starts at time 0, unless
    ``hand_over`` (a policy finishing the present on its own) lets the rollout scheduler decide at once."""

    name = "lookahead-rollout"

    def __init__(
        self,
        placed: list[tuple[int, tuple[int, ...]]],
        first: tuple[int, int, str] | None,
        then: Any,
        hand_over: bool = False,
    ) -> None:
        self._placed, self._first, self._then, self._fresh = placed, first, then, True
        self._hand_over = hand_over

    def reset(self, state: ClusterState) -> None:
        self._then.reset(state)
        self._fresh = True

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        if not self._fresh:
            yield from self._then.decide(state)
            return
        self._fresh = False
        for j, gpus in self._placed:
            yield Start(j, gpus)
        if self._first is None:
            if self._hand_over:
                yield from self._then.decide(state)
            return
        j, t, rule = self._first
        gpus = PLACEMENTS[rule]()(state.of_type(t), state.jobs[j])
        if gpus is None:
            raise EngineError(f"lookahead: job {j} no longer fits GPU type slot {t} in its believed run")
        yield Start(j, gpus)
        yield from self._then.decide(state)


class LookaheadScheduler:
    """The expert as an engine scheduler, to measure it against the teachers and the agent it taught."""

    def __init__(
        self, cfg: LookaheadConfig, enc: EncodingConfig, reward: RewardWeights, rule: int = 0, name: str = "expert"
    ) -> None:
        self.name = name
        self.expert = Lookahead(cfg, enc, reward, rule)

    def reset(self, state: ClusterState) -> None:
        pass

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        enc = self.expert.enc
        while True:
            snap = snapshot(state, enc)
            if not snap.mask[:-1].any():
                return
            action = self.expert.action(state, snap)
            if action == enc.wait_action:
                return
            yield from decode(state, action, enc, snap)


def check_period_s(value: Any, where: str) -> float:
    """``value`` as a float if it is a finite number >= 0 (not a bool); ``EngineError`` naming ``where`` otherwise."""
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
        raise EngineError(f"{where} must be a finite number >= 0, got {value!r}")
    return float(value)


class LookaheadSelector:
    """A selector's lookahead expert: which of its hand-written policies decides, chosen by rollouts on what is known.

    At the first decision point with a waiting job, and then at the first one at least ``period_s`` of simulated
    time after the last choice, each policy of ``names`` finishes a believed copy of the present on its own (as
    :class:`Lookahead`'s: the running jobs for the rest of their estimates, at most ``max_jobs`` queued jobs at
    their estimates, no future arrival, no true duration), and the one whose believed run has the smallest
    objective decides until the next choice. The deciding policy (``names[0]`` before the first choice) keeps
    deciding unless another one is better by more than :data:`TIE`, so ``names[0]`` should be the policy to trust
    where the rollouts cannot tell them apart. Policies take turns as in a trained selector
    (:class:`~engine.rl.selector.PolicySwitch`). It reads estimates only, so it is no oracle, but it is slow next to
    an agent: a choice costs ``len(names)`` believed runs (``rollouts`` counts them). What it gains:
    models/HISTORY.md."""

    def __init__(
        self,
        names: Sequence[str],
        reward: RewardWeights,
        period_s: float = PERIOD_S,
        max_jobs: int = MAX_JOBS,
        name: str = "lookahead-select",
    ) -> None:
        if isinstance(max_jobs, bool) or not (isinstance(max_jobs, int) and max_jobs >= 1):
            raise EngineError(f"lookahead selector: max_jobs must be an integer >= 1, got {max_jobs!r}")
        self.name, self.reward, self.max_jobs = name, reward, max_jobs
        self.period_s = check_period_s(period_s, "lookahead selector: period_s")
        self.switch = PolicySwitch(names)
        self.rollouts = 0
        self._current, self._next_s = 0, -math.inf

    def reset(self, state: ClusterState) -> None:
        self.switch.reset()
        self._current, self._next_s = 0, -math.inf

    def cost(self, state: ClusterState, k: int) -> float:
        """The objective of the believed run that policy ``k`` finishes from the present."""
        return self._finish(state, believed_present(state, self.max_jobs), k)

    def _finish(
        self, state: ClusterState, present: tuple[list[Job], list[tuple[int, tuple[int, ...]]], int], k: int
    ) -> float:
        """The objective of policy ``k`` finishing ``present`` (:func:`believed_present` of ``state``; built once a
        choice, since every policy finishes the same one)."""
        jobs, placed, _ = present
        self.rollouts += 1
        sched = _Forced(placed, None, make_scheduler(self.switch.names[k]), hand_over=True)
        return objective(
            simulate(state.cluster, jobs, sched, options=RunOptions(preemption=state.preemption)), self.reward
        )

    def choose(self, state: ClusterState) -> int:
        """The index of the policy that decides at this decision point: chosen again by rollouts when a job waits
        and ``period_s`` has passed since the last choice, else the current one. It is also a selector's cloning
        label (``clone.teacher`` ``"lookahead"``, :mod:`engine.rl.clone`)."""
        if state.queue and state.now_s >= self._next_s:
            self._next_s = state.now_s + self.period_s
            present = believed_present(state, self.max_jobs)
            costs = [self._finish(state, present, k) for k in range(len(self.switch.names))]
            if min(costs) < costs[self._current] - TIE:
                self._current = costs.index(min(costs))
        return self._current

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        yield from self.switch.decide(state, self.choose(state))
