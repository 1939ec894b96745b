"""A learned selector: at each decision point, an agent chooses which hand-written policy decides.

The action is an index into a list of registered schedulers (``EnvConfig.selector``, e.g. ``sjf``, ``fgd``,
``topo-pack``, ``drf``, ``tiresias``, ``easy-backfill``); the chosen one makes this decision point's whole
``decide`` call (its starts, preemptions and wake-ups), and time runs to the next decision point. A selector that
always takes policy ``k`` *is* policy ``k`` (the same decisions, bit for bit; tested), so a well-trained selector is
never worse than the best of its policies, and can be better by switching where their strengths differ.

:class:`PolicySwitch` keeps the policies honest when they take turns: only the chosen policy hears a decision
point, so one that was not chosen at the previous point has missed calls; it is reset when it is chosen again and
told that every waiting job has just entered the queue (``state.entered``), which is what a policy whose every
structure is rebuilt from the current state needs. Decision points with no waiting job (wake-ups) go to the
current policy without asking the agent.

Observation (a dict of float32 arrays; :func:`selector_obs`)
    ``jobs``, ``groups``, ``global``: the encoding's features (:mod:`engine.rl.encoding`), without its action
    mask; ``select``: :data:`SELECT_BASE_FEATURES` cheap features of users, the queue's head and the
    preemption model (:func:`select_features`), then a one-hot of the policy that decided last (zeros with
    ``env.selector_last`` false, the card's ``selector_last``).
Action space
    ``Discrete(len(selector))``; every action is always allowed (``action_masks`` is all true).
Reward, episodes, reset
    As :class:`~engine.rl.env.GpuSchedulingEnv` (the same reward terms, sampling and seeds).
"""

from __future__ import annotations

import math
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from engine.errors import EngineError
from engine.rl.encoding import EncodingConfig, encode, snapshot
from engine.schedulers.registry import SCHEDULERS, make_scheduler
from engine.sim.state import ClusterState, Decision, Preempt, Start

#: Features of the ``select`` part before the one-hot of the last policy (see :func:`select_features`).
SELECT_BASE_FEATURES = 8
#: Waiting jobs at the head of the queue that :func:`select_features` reads (bounded: a long queue costs the same).
SELECT_HEAD = 32
#: Most policies a selector may choose from.
MAX_POLICIES = 32
#: How a trained selector turns its network's choices into the policy that decides (``selector_vote`` of its
#: card): ``"step"``, the network's choice at this decision point; ``"run"``, the policy the network has chosen
#: most often at this run's decision points so far, this one included (ties: the one it chose first).
VOTES = ("step", "run")
#: Largest ``selector_margin`` a card may give (logits of a trained selector differ by a few units).
MAX_MARGIN = 20.0


def check_policies(names: Sequence[str], where: str) -> tuple[str, ...]:
    """``names`` as a tuple if they are 1 to :data:`MAX_POLICIES` distinct registered, non-oracle schedulers;
    ``EngineError`` naming ``where`` otherwise."""
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence) or not names:
        raise EngineError(f"{where} must be a non-empty list of registered scheduler names")
    names = tuple(names)
    if len(names) > MAX_POLICIES or len(set(names)) != len(names):
        raise EngineError(f"{where}: 1 to {MAX_POLICIES} distinct scheduler names, got {len(names)}")
    for n in names:
        spec = SCHEDULERS.get(n) if isinstance(n, str) else None
        if spec is None:
            raise EngineError(f"{where}: unknown scheduler {str(n)[:60]!r}; registered: {', '.join(SCHEDULERS)}")
        if spec.oracle:
            raise EngineError(f"{where}: {n!r} reads true durations (an oracle); it may not be used here")
    return names


class PolicySwitch:
    """Hand-written policies taking turns at decision points (see the module docstring)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = check_policies(names, "selector")
        self.policies = [make_scheduler(n) for n in self.names]
        self.current = -1  # the policy that heard the last decision point (-1: none yet this run)

    def reset(self) -> None:
        """A new run: every policy is reset when first chosen."""
        self.current = -1

    def decide(self, state: ClusterState, k: int) -> Iterator[Decision]:
        """Policy ``k``'s decisions at this decision point (after resetting it, if it missed the last one)."""
        policy = self.policies[k]
        if k == self.current:
            yield from policy.decide(state)
            return
        self.current = k
        policy.reset(state)
        told = state.entered
        fresh = list(state.queue)  # to a policy just reset, every waiting job has just entered
        n_fresh = len(fresh)
        state.entered = fresh
        try:
            yield from policy.decide(state)
        finally:  # jobs its preemptions sent back were appended to ``fresh``: the engine's list hears of them
            told.extend(fresh[n_fresh:])
            state.entered = told

    def default(self) -> int:
        """The policy that hears a decision point with no waiting job: the current one (the first, before any)."""
        return max(self.current, 0)


def select_features(state: ClusterState) -> list[float]:
    """The :data:`SELECT_BASE_FEATURES` selector features of ``state``, in order (each in [0, 1]):

    the largest user's share of the cluster's GPUs, users holding GPUs / 16 (clipped), and over the first
    :data:`SELECT_HEAD` waiting jobs: the share that are fractional, the share that need more than one GPU, their
    mean log2(gpus)/6, distinct users / jobs; then the preemption model: 1 if a preempted job loses work (a
    checkpoint interval or a restart overhead), log1p(restart overhead / 60 s)/5 (clipped).
    """
    user_gpus, n_gpus = state.user_gpus, state.layout.n_gpus
    shares = [g for g in user_gpus.values() if g > 0]
    head = [state.jobs[j] for j, _ in zip(state.queue, range(SELECT_HEAD))]
    n = max(len(head), 1)
    pre = state.preemption
    costly = pre.checkpoint_interval_s is not None or pre.restart_overhead_s > 0
    return [
        min(max(shares, default=0.0) / n_gpus, 1.0),
        min(len(shares) / 16.0, 1.0),
        sum(job.gpu_fraction < 1.0 for job in head) / n,
        sum(job.gpus > 1 for job in head) / n,
        sum(math.log2(job.gpus) for job in head) / n / 6.0,
        len({job.user for job in head}) / n,
        float(costly),
        min(math.log1p(pre.restart_overhead_s / 60.0) / 5.0, 1.0),
    ]


def selector_obs(state: ClusterState, enc: EncodingConfig, n_policies: int, current: int) -> dict[str, np.ndarray]:
    """The selector's observation of ``state`` (the module docstring): the encoding's parts without its mask,
    and ``select``."""
    obs = encode(state, enc, snapshot(state, enc))
    del obs["action_mask"]
    select = np.zeros(SELECT_BASE_FEATURES + n_policies, dtype=np.float32)
    select[:SELECT_BASE_FEATURES] = select_features(state)
    if current >= 0:
        select[SELECT_BASE_FEATURES + current] = 1.0
    obs["select"] = select
    return obs


def selector_input_dim(enc: EncodingConfig, n_policies: int) -> int:
    """Width of the flattened selector observation (what the MLP's first layer reads)."""
    return (
        enc.window * enc.job_features
        + enc.max_types * enc.group_features
        + enc.global_features
        + SELECT_BASE_FEATURES
        + n_policies
    )


def check_vote(vote: Any, where: str) -> str:
    """``vote`` if it is one of :data:`VOTES`; ``EngineError`` naming ``where`` otherwise."""
    if vote not in VOTES:
        raise EngineError(f"{where}: {str(vote)[:40]!r} is not one of {list(VOTES)}")
    return str(vote)


def check_margin(margin: Any, vote: str, where: str) -> float:
    """``margin`` as a float if it is a number from 0 to :data:`MAX_MARGIN` (above 0 only with the vote
    ``"step"``); ``EngineError`` naming ``where`` otherwise."""
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin <= MAX_MARGIN:
        raise EngineError(f"{where}: expected a number from 0 to {MAX_MARGIN:g}, got {str(margin)[:40]!r}")
    if margin and vote != "step":
        raise EngineError(f"{where} applies with the selector_vote 'step' only")
    return float(margin)


def check_last(last: Any, where: str) -> bool:
    """``last`` (the card's ``selector_last``) if it is a bool; ``EngineError`` naming ``where`` otherwise."""
    if not isinstance(last, bool):
        raise EngineError(f"{where}: expected true or false, got {str(last)[:40]!r}")
    return last


def card_options(card: Mapping[str, Any]) -> tuple[str, float, bool]:
    """A selector card's ``selector_vote``, ``selector_margin`` and ``selector_last`` (defaults where absent:
    ``"step"``, 0, true), each checked; ``EngineError`` naming the field otherwise."""
    vote = check_vote(card.get("selector_vote", "step"), "selector_vote")
    margin = check_margin(card.get("selector_margin", 0.0), vote, "selector_margin")
    return vote, margin, check_last(card.get("selector_last", True), "selector_last")


class SelectorScheduler:
    """A trained selector as a :class:`~engine.sim.state.Scheduler` (``rl:<name>`` for a card with a
    ``selector`` list): at each decision point with a waiting job the policy network picks the hand-written
    policy that decides (deterministic: the most likely one), or, with the card's ``selector_vote`` ``"run"``
    (:data:`VOTES`), the one it has picked most often in this run. With the card's ``selector_margin`` ``m`` above
    0, the policy that decided the last decision point keeps deciding unless the network's pick scores at least
    ``m`` above it (its logit): a switch needs conviction.

    Why a vote: a selector is cloned from each episode's best policy alone (:mod:`engine.rl.clone`), a label of
    the whole run; one decision point's observation often cannot tell the kinds of workload apart, so the
    network's picks flicker between policies, and a switch costs (the policy taking over rebuilds its plan, an
    evicting one preempts what a plain one started). The count over the run's decision points settles on the
    policy the evidence favours and keeps it while the workload looks the same; a margin keeps the policy in
    charge through the flicker and still lets a clear preference take over."""

    def __init__(self, name: str, card: Mapping[str, Any], policy: Any, encoding: EncodingConfig, names) -> None:
        self.name = f"rl:{name}"
        self.card = card
        self.policy = policy
        self.encoding = encoding
        self.switch = PolicySwitch(names)
        self.vote, self.margin, self.last = card_options(card)
        self._all = np.ones(len(self.switch.names), dtype=bool)
        self._picks: dict[int, int] = {}  # the network's picks this run (dicts keep the order first chosen)
        #: This run's decision points with a waiting job that each policy decided (by index into its policies).
        self.decided: dict[int, int] = {}

    def reset(self, state: ClusterState) -> None:
        self.switch.reset()
        self._picks, self.decided = {}, {}

    def act(self, obs: Mapping[str, np.ndarray], mask: np.ndarray) -> int:
        """The network's choice for one observation: its most likely policy, or with a margin, the policy that
        decided last unless the most likely one scores at least the margin above it."""
        current = self.switch.current
        if not self.margin or current < 0:
            return self.policy.act(obs, mask)
        logits = np.where(mask, np.asarray(self.policy.logits(obs), dtype=np.float64), -np.inf)
        k = int(logits.argmax())
        return current if k != current and logits[k] - logits[current] < self.margin else k

    def choose(self, state: ClusterState) -> int:
        """The policy that decides at this decision point."""
        if not state.queue:
            return self.switch.default()
        sw = self.switch
        k = self.act(selector_obs(state, self.encoding, len(sw.names), sw.current if self.last else -1), self._all)
        if self.vote == "run":
            self._picks[k] = self._picks.get(k, 0) + 1
            k = max(self._picks, key=self._picks.__getitem__)
        self.decided[k] = self.decided.get(k, 0) + 1
        return k

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        yield from self.switch.decide(state, self.choose(state))


def is_job_decision(d: Decision) -> bool:
    """Whether ``d`` starts or preempts a job (not a wake-up request)."""
    return type(d) is Start or type(d) is Preempt
