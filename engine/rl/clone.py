"""Behaviour cloning: a warm start for MaskablePPO that imitates a teacher (:mod:`engine.rl.teacher`).

Reinforcement learning from scratch spends most of a small CPU budget rediscovering what a good heuristic
already knows (shortest jobs first, fast GPUs for the jobs that gain). Cloning starts the policy there:

1. roll out the teacher through the training environment and record every (observation, mask, teacher
   action, discounted return-to-go); with ``expert`` set, the labeller is the lookahead expert of
   :mod:`engine.rl.lookahead` instead (the teachers' choices improved by rollouts on estimates: expert
   iteration), whose first candidate is ``teacher``;
2. DAgger rounds (Ross et al., 2011): roll out the *student* (its most likely allowed action), still labelled
   with the teacher's choice in each state it reaches, and add those samples, so the student learns to
   recover from its own mistakes;
3. fit the policy by cross-entropy of its masked action distribution against the teacher's actions, and its
   value head to the returns (so PPO's first advantages are not noise), with Adam.

An agent that is not a selector may clone :data:`BEST_TEACHER`: every state of an episode is labelled with the
action of the teacher of ``clone.teachers`` that, choosing alone within the agent's own encoding
(:func:`~engine.rl.teacher.within`), has the lowest objective on that episode, so one agent learns which teacher
suits which cluster and workload, and makes that teacher's choices itself.

A selector (``env.selector``, :mod:`engine.rl.selector`) clones one of :data:`SELECTOR_TEACHERS` instead of a
teacher. With :data:`BEST_ALONE` every state of an episode is labelled with the policy that, deciding alone, has
the lowest objective on that episode (its own run, the same as the selector's when it always picks it), so the
selector first learns which policy suits which cluster and workload, and PPO then learns where switching pays.
With :data:`LOOKAHEAD` each state is labelled with the choice of the selector's lookahead expert
(:class:`~engine.rl.lookahead.LookaheadSelector`: every ``label_period_s`` of simulated time, the policy whose
believed run from the present is best), a label that switches within a run, as a whole episode's cannot.

The config (:class:`CloneConfig`) is part of the training config, so it travels with the model card.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from engine.analysis.workload import TRAIN_SEED_MIN
from engine.errors import EngineError, check_int, reject_unknown_keys
from engine.rl.encoding import EVICT, RULES, EncodingConfig
from engine.rl.env import EnvConfig, GpuSchedulingEnv, make_env
from engine.rl.lookahead import PERIOD_S, Lookahead, LookaheadConfig, LookaheadSelector, check_period_s
from engine.rl.reward import objective
from engine.rl.teacher import TEACHERS, teacher_action, within
from engine.schedulers.registry import make_scheduler
from engine.sim.simulator import simulate
from engine.sim.state import Scheduler

#: ``clone.teacher`` of a selector: each episode's states are labelled with the selector's policy that alone has
#: the lowest objective on that episode (:func:`best_alone`).
BEST_ALONE = "best-alone"
#: ``clone.teacher`` of a selector: each state is labelled with the choice of the selector's lookahead expert
#: (:class:`~engine.rl.lookahead.LookaheadSelector`, choosing again every ``clone.label_period_s``).
LOOKAHEAD = "lookahead"
#: What a selector clones (and only a selector).
SELECTOR_TEACHERS = (BEST_ALONE, LOOKAHEAD)
#: ``clone.teacher`` of an agent that is not a selector: each episode's states are labelled with the actions of
#: the teacher of ``clone.teachers`` that alone, within the agent's encoding, has the lowest objective on it.
BEST_TEACHER = "best-teacher"
#: Bounds of the config's counts, so that a config from a stranger cannot ask for a run without end: episodes and
#: rounds far above any training here (900 cloning episodes, 6 rounds), at most 16 workloads per selector label
#: (each a run of every policy of the selector).
LIMITS = {"episodes": 10_000, "rounds": 100, "epochs": 1_000, "batch_size": 1_000_000, "label_seeds": 16}


@dataclass(frozen=True)
class CloneConfig:
    """How to clone a teacher before PPO.

    Attributes:
        teacher: a name from :data:`engine.rl.teacher.TEACHERS`; for a selector one of :data:`SELECTOR_TEACHERS`.
        rule: the packing rule the teacher places with (one of the encoding's rules; a selector ignores it).
        episodes: episodes per round.
        rounds: rounds of data collection: the first rolls out the teacher, later ones the student (DAgger).
        epochs: passes over all samples collected so far, after each round.
        batch_size: samples per gradient step.
        learning_rate: Adam step size.
        value_coef: weight of the value loss (mean squared error to the discounted return-to-go).
        expert: label with the lookahead expert (:class:`~engine.rl.lookahead.LookaheadConfig`) instead of
            ``teacher``; ``None``: the teacher labels.
        label_seeds: for :data:`BEST_ALONE` and :data:`BEST_TEACHER`, how many workloads of the episode's kind
            pick its label: the episode's own and ``label_seeds - 1`` more generated with other training seeds
            (:func:`best_alone`); 1: the episode alone.
        teachers: for :data:`BEST_TEACHER` (and only for it), the teachers of
            :data:`~engine.rl.teacher.TEACHERS` one of which labels each episode (2 or more, distinct).
        placements: for :data:`BEST_TEACHER`, the encoding's rules each of ``teachers`` is run with (each pair a
            candidate label); empty: ``rule`` alone.
        label_period_s: for :data:`LOOKAHEAD`, simulated seconds between the expert's choices (by default
            :data:`~engine.rl.lookahead.PERIOD_S`, the period chosen on training seeds).
    """

    teacher: str = "sjf-fast"
    rule: str = "best-fit"
    episodes: int = 40
    rounds: int = 3
    epochs: int = 8
    batch_size: int = 256
    learning_rate: float = 1e-3
    value_coef: float = 0.5
    expert: LookaheadConfig | None = None
    label_seeds: int = 1
    label_period_s: float = PERIOD_S
    teachers: tuple[str, ...] = ()
    placements: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        valid = [*TEACHERS, *SELECTOR_TEACHERS, BEST_TEACHER]
        if self.teacher not in valid:
            raise EngineError(f"clone.teacher {self.teacher!r}: expected one of {valid}")
        for k in ("teachers", "placements"):
            names = getattr(self, k)
            if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
                raise EngineError(f"clone.{k} must be a list of names")
            object.__setattr__(self, k, tuple(names))
        placing = [r for r in RULES if r != EVICT]  # evict only makes room; a teacher places with one of these
        if self.placements and (
            self.teacher != BEST_TEACHER
            or len(set(self.placements)) != len(self.placements)
            or not set(self.placements) <= set(placing)
        ):
            raise EngineError(f"clone.placements: distinct rules of {placing}, for clone.teacher {BEST_TEACHER!r} only")
        if (self.teacher == BEST_TEACHER) != bool(self.teachers):
            raise EngineError(f"clone.teachers lists the teachers of clone.teacher {BEST_TEACHER!r}, and only of it")
        unknown = [n for n in self.teachers if n not in TEACHERS][:3]
        if unknown or len(set(self.teachers)) != len(self.teachers) or len(self.teachers) == 1:
            raise EngineError(
                f"clone.teachers: 2 or more distinct names of {list(TEACHERS)}; got {unknown or 'repeats'}"
            )
        for k, most in LIMITS.items():
            check_int(getattr(self, k), f"clone.{k}", 1, most)
        if not (self.learning_rate > 0 and self.value_coef >= 0):
            raise EngineError("clone.learning_rate must be > 0 and clone.value_coef >= 0")
        if self.label_seeds > 1 and self.teacher not in (BEST_ALONE, BEST_TEACHER):
            raise EngineError(
                f"clone.label_seeds > 1 needs clone.teacher {BEST_ALONE!r} or {BEST_TEACHER!r}: a teacher labels states"
            )
        object.__setattr__(self, "label_period_s", check_period_s(self.label_period_s, "clone.label_period_s"))
        if self.label_period_s != PERIOD_S and self.teacher != LOOKAHEAD:
            raise EngineError(f"clone.label_period_s applies to clone.teacher {LOOKAHEAD!r} only")
        if self.expert is not None and self.teacher in SELECTOR_TEACHERS:
            raise EngineError(f"clone.expert cannot label for {self.teacher!r}, a selector's teacher")
        if self.expert is not None and self.expert.candidates[0] != self.teacher:
            raise EngineError(f"clone.expert.candidates must start with clone.teacher {self.teacher!r}")

    def to_dict(self) -> dict[str, Any]:
        expert = None if self.expert is None else self.expert.to_dict()
        return {**asdict(self), "expert": expert, "teachers": list(self.teachers), "placements": list(self.placements)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CloneConfig:
        valid = set(cls.__dataclass_fields__)
        reject_unknown_keys(data, valid, "clone")
        kw = dict(data)
        if kw.get("expert") is not None:
            if not isinstance(kw["expert"], Mapping):
                raise EngineError("clone.expert must be an object (engine.rl.lookahead.LookaheadConfig)")
            kw["expert"] = LookaheadConfig.from_dict(kw["expert"])
        return cls(**kw)

    def labeller(self, env: GpuSchedulingEnv) -> Callable[[], int]:
        """What labels the states of the episode ``env`` has just been reset to: called at each of its steps, it
        returns the label of the state ``env`` is in (the teacher's action, the lookahead expert's, or for a
        selector the episode's :func:`best_alone` policy or its lookahead expert's choice)."""
        cfg = env.config
        if self.teacher == BEST_ALONE:
            best = best_alone(env, self.label_seeds)
            return lambda: best
        if self.teacher == BEST_TEACHER:
            enc, pairs = self.within_encoding(cfg), self.candidates()
            name, placing = pairs[best_alone(env, self.label_seeds, [partial(within, n, enc, r) for n, r in pairs])]
            index = enc.rules.index(placing)
            return lambda: teacher_action(name, env.simulation.state, enc, env.snapshot, index)
        if self.teacher == LOOKAHEAD:
            if not cfg.selector:
                raise EngineError(f"clone.teacher {LOOKAHEAD!r} labels the states of a selector environment")
            expert = LookaheadSelector(cfg.selector, cfg.reward, self.label_period_s)
            return lambda: expert.choose(env.simulation.state)
        enc = cfg.encoding
        if self.rule not in enc.rules:
            raise EngineError(f"clone.rule {self.rule!r} is not one of the encoding's rules {list(enc.rules)}")
        rule = enc.rules.index(self.rule)
        if self.expert is not None:
            action = Lookahead(self.expert, enc, cfg.reward, rule).action
            return lambda: action(env.simulation.state, env.snapshot)
        return lambda: teacher_action(self.teacher, env.simulation.state, enc, env.snapshot, rule)

    def candidates(self) -> list[tuple[str, str]]:
        """For :data:`BEST_TEACHER`: the (teacher, rule) pairs one of which labels each episode."""
        return [(n, r) for n in self.teachers for r in self.placements or (self.rule,)]

    def within_encoding(self, env: EnvConfig) -> EncodingConfig:
        """For :data:`BEST_TEACHER`: the encoding of ``env``, in which each of the :meth:`candidates` makes exactly
        the choices it makes within it (:func:`~engine.rl.teacher.within`), so that its actions label the env's
        states; ``EngineError`` for a selector's env, or where a teacher needs another encoding (a registered
        eviction cap that the encoding lacks, or a rule the encoding does not have)."""
        if env.selector:
            raise EngineError(f"clone.teacher {BEST_TEACHER!r} labels an agent that is not a selector")
        enc = env.encoding
        for n, r in self.candidates():
            if within(n, enc, r).cfg != enc:
                raise EngineError(f"clone.teachers: {n} chooses with another encoding (its eviction cap) than env's")
        return enc


def collect(
    env: GpuSchedulingEnv, cfg: CloneConfig, gamma: float, seeds: range, student: Any = None
) -> dict[str, np.ndarray]:
    """Samples from one episode per seed: observations, masks, teacher actions and discounted returns.

    ``student`` (a callable ``(obs, mask) -> action``) drives the episodes when given; the labeller
    (:meth:`CloneConfig.labeller`) drives them otherwise. It labels every state either way.
    """
    obs_parts: dict[str, list[np.ndarray]] = {}
    masks, actions, returns = [], [], []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        label_of = cfg.labeller(env)
        rewards: list[float] = []
        done = False
        while not done:
            mask = env.action_masks()
            label = label_of()
            for k, v in obs.items():
                obs_parts.setdefault(k, []).append(v)
            masks.append(mask)
            actions.append(label)
            act = label if student is None else student(obs, mask)
            obs, r, done, _, _ = env.step(act)
            rewards.append(r)
        g, ret = 0.0, []
        for r in reversed(rewards):
            g = r + gamma * g
            ret.append(g)
        returns.extend(reversed(ret))
    return {
        "obs": {k: np.stack(v) for k, v in obs_parts.items()},
        "mask": np.stack(masks),
        "action": np.array(actions, dtype=np.int64),
        "return": np.array(returns, dtype=np.float32),
    }


def best_alone(
    env: GpuSchedulingEnv, label_seeds: int = 1, policies: Sequence[Callable[[], Scheduler]] | None = None
) -> int:
    """Index of the policy that, run alone on the episode ``env`` was just reset to, has the lowest objective (the
    first of equals): of ``policies`` (factories), by default the selector's (``env.config.selector``); with
    ``label_seeds`` > 1, the lowest mean objective over that episode and ``label_seeds - 1`` more workloads of its
    kind (:meth:`GpuSchedulingEnv.same_kind_jobs`, training seeds drawn from the episode's seed), so that one lucky
    arrival order does not pick the label."""
    sim, cfg = env.simulation, env.config
    if policies is None:
        if not cfg.selector:
            raise EngineError(f"{BEST_ALONE!r} labels an episode of a selector environment")
        policies = [partial(make_scheduler, n) for n in cfg.selector]
    if sim is None:
        raise EngineError("best_alone labels an episode: reset the environment first")
    more = np.random.default_rng(sim.seed).integers(TRAIN_SEED_MIN, 2**31 - 1, size=label_seeds - 1)
    workloads = [sim.jobs, *(env.same_kind_jobs(int(s)) for s in more)]
    costs = [
        np.mean(
            [
                objective(simulate(sim.cluster, jobs, make(), seed=sim.seed, options=sim.options), cfg.reward)
                for jobs in workloads
            ]
        )
        for make in policies
    ]
    return int(np.argmin(costs))


def _concat(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    if a is None:
        return b
    return {
        "obs": {k: np.concatenate([a["obs"][k], b["obs"][k]]) for k in a["obs"]},
        **{k: np.concatenate([a[k], b[k]]) for k in ("mask", "action", "return")},
    }


def fit(policy: Any, data: dict[str, Any], cfg: CloneConfig, rng: np.random.Generator) -> dict[str, float]:
    """``cfg.epochs`` passes of cross-entropy (+ value loss) over ``data``; returns the last epoch's means."""
    import torch

    opt = torch.optim.Adam(policy.parameters(), lr=cfg.learning_rate)
    n = len(data["action"])
    obs_t = {k: torch.as_tensor(v) for k, v in data["obs"].items()}
    mask_t = torch.as_tensor(data["mask"])
    act_t = torch.as_tensor(data["action"])
    ret_t = torch.as_tensor(data["return"])
    policy.train()
    stats: dict[str, float] = {}
    for _ in range(cfg.epochs):
        order = torch.as_tensor(rng.permutation(n))
        tot = {"ce": 0.0, "value_mse": 0.0, "accuracy": 0.0}
        for lo in range(0, n, cfg.batch_size):
            idx = order[lo : lo + cfg.batch_size]
            obs = {k: v[idx] for k, v in obs_t.items()}
            values, log_prob, _ = policy.evaluate_actions(obs, act_t[idx], action_masks=mask_t[idx])
            ce = -log_prob.mean()
            v_loss = torch.nn.functional.mse_loss(values.flatten(), ret_t[idx])
            loss = ce + cfg.value_coef * v_loss
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            opt.step()
            with torch.no_grad():
                greedy = policy.get_distribution(obs, action_masks=mask_t[idx]).mode()
            k = len(idx)
            tot["ce"] += ce.item() * k
            tot["value_mse"] += v_loss.item() * k
            tot["accuracy"] += float((greedy == act_t[idx]).float().sum())
        stats = {k: v / n for k, v in tot.items()}
    policy.set_training_mode(False)
    return stats


def clone(policy: Any, env_cfg: EnvConfig, cfg: CloneConfig, gamma: float, seed: int) -> dict[str, Any]:
    """Train ``policy`` (an sb3-contrib maskable policy) to imitate the teacher; returns what the card records.

    Episodes are drawn like training episodes from ``env_cfg`` (workload seeds >= 2**20), round ``r`` using
    environment seeds ``seed * 100_000 + r * episodes + k``.
    """
    import torch

    t0 = time.perf_counter()
    env = make_env(env_cfg)
    rng = np.random.default_rng(seed)

    def student(obs: dict[str, np.ndarray], mask: np.ndarray) -> int:
        with torch.no_grad():
            t = {k: torch.as_tensor(v).unsqueeze(0) for k, v in obs.items()}
            return int(policy.get_distribution(t, action_masks=mask[None]).mode()[0])

    data, rounds = None, []
    for r in range(cfg.rounds):
        seeds = range(seed * 100_000 + r * cfg.episodes, seed * 100_000 + (r + 1) * cfg.episodes)
        data = _concat(data, collect(env, cfg, gamma, seeds, None if r == 0 else student))
        stats = fit(policy, data, cfg, rng)
        rounds.append({"samples": int(len(data["action"])), **{k: round(v, 4) for k, v in stats.items()}})
    return {
        "config": cfg.to_dict(),
        "rounds": rounds,
        "samples": rounds[-1]["samples"],
        "wall_time_s": round(time.perf_counter() - t0, 1),
    }
