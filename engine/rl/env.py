"""The Gymnasium environment ``engine/GpuScheduling-v0`` (registered when this module is imported).

``GpuSchedulingEnv`` drives the engine's own :class:`~engine.sim.simulator.Simulation`; it adds no dynamics. It is
``Simulation`` plus the three functions of :mod:`engine.rl.encoding` (``encode``, ``action_mask``, ``decode``),
which the ``rl:<name>`` scheduler uses too.

Datasheet
---------
Action space
    ``Discrete(window * max_types * len(rules) + 1)``: a joint choice of a job from the queue window, a GPU
    type slot and a packing rule (or, where the encoding lists it, the rule ``"evict"``: preempt running jobs of
    that type, latest estimated end first, to make room), or *wait* (the last action). See
    :mod:`engine.rl.encoding`.
Observation space
    ``Dict(jobs=Box(0, 4, (window, 12 + k * max_types + d)), groups=Box(0, 4, (max_types, 10 + h)),
    global=Box(0, 4, (8 + p,)), action_mask=MultiBinary(n_actions))``: 12 features per job plus k = 4 per (job, GPU
    type slot) (its speed, expected run time, can start now, can start now on one node of that type), k = 6 with
    ``"evict"`` (can start by evicting, the victims' remaining work), k = 7 with ``evict_cost`` too (the work
    evicting would cost the victims under the episode's preemption model); h = 0, or 3 with ``node_health``
    (per GPU type: nodes down, time since repair, failures so far); d = 0, or 5 with ``deadlines`` (per job:
    has a deadline, slack, lateness at best speed, how far it can shrink and grow); p = 0, or 4 with
    ``preemption_history`` (how many waiting and running jobs were preempted, and how often); every feature is
    documented in :mod:`engine.rl.encoding`.
Transitions
    A step applies one action: a start (after its preemptions, for ``"evict"``) or *wait*. If another start is still feasible at the same simulated time, the next
    observation is at that same time; otherwise (and after *wait*) the simulation runs to the next decision
    point where some start is feasible (no empty ticks). *Wait* is feasible whenever a job runs. With the
    encoding's ``elastic_start``, optimus's sizing runs around the agent's starts as in ``rl:<name>``: grown
    elastic jobs shrink for a waiting one when a decision point begins, spare GPUs go out when it ends.
Masks
    ``action_masks()`` (for sb3-contrib's MaskablePPO) and ``obs["action_mask"]`` are exact: every allowed
    action is feasible. A masked-out action passed to ``step`` is replaced by *wait* (or, when nothing runs,
    by the first allowed action) and reported as ``info["invalid_action"] = True``.
Reward
    ``-objective(result, reward_weights)`` of :mod:`engine.rl.reward`, paid as the wait and JCT that accrued
    during each step (dense), the deadline share of each job whose deadline passed during the step without it
    completing, and the remaining terms at the last step; the episode return equals minus the objective. With
    ``reference`` (:class:`EnvConfig`), each step also gets back the dense cost a reference scheduler's run of
    the same episode accrued over the same time, so the return is that run's dense cost minus the objective.
Episode end
    ``terminated`` when every job has finished (or can never run on the cluster). Episodes always end: each
    step starts a job or moves time to the next event, the workload is finite, and ``"evict"`` never preempts a
    job that started at the current time. Never truncated.
Run options
    Each episode runs under run options (:class:`~engine.sim.options.RunOptions`: preemption model, failures,
    admission, ...) drawn from the config's ``options``, as any run would; failures are drawn from the episode's
    seed. A job a node failure stops returns to the queue and waits again; its new wait is charged like any other.
Reset
    ``reset(seed=...)`` draws run options, a cluster, a load and a workload seed from the sampling lists
    (:class:`EnvConfig`; workload seeds are drawn at or above ``TRAIN_SEED_MIN`` = 2**20, so evaluations on
    seeds below it never meet a training workload); ``options={"cluster": ..., "jobs": [...]}`` runs a given workload instead, and
    ``options={"cluster": ..., "load": ..., "n_jobs": ..., "workload_seed": ...}`` a given generated one, and
    ``options={"run_options": RunOptions(...)}`` given run options. A config with ``presets`` also draws teaching
    presets' episodes: the preset's cluster and its workload generated with a training seed (as above, so never a
    seed the model cards evaluate it on), under the drawn run options, as the cards run it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from engine.analysis.presets import PRESETS
from engine.analysis.scenario import ScenarioError, WorkloadSpec
from engine.analysis.workload import TRAIN_SEED_MIN
from engine.errors import EngineError, reject_unknown_keys
from engine.rl.encoding import EncodingConfig, RulePlacements, Snapshot, decode, elastic_sizer, encode, snapshot
from engine.rl.reward import RewardWeights, terminal_cost
from engine.rl.selector import (
    SELECT_BASE_FEATURES,
    PolicySwitch,
    check_policies,
    is_job_decision,
    selector_obs,
)
from engine.schedulers.registry import make_scheduler
from engine.sim.cluster import Cluster, parse_cluster
from engine.sim.job import Job
from engine.sim.options import FailureModel, OptionsError, PreemptionModel, RunOptions
from engine.sim.simulator import Result, Simulation, simulate
from engine.sim.state import Decision, Preempt

ENV_ID = "engine/GpuScheduling-v0"

#: The keys configs written before ``options`` gave their run options with (:func:`_older_options`).
_OLDER_OPTION_KEYS = ("preemptions", "preemption", "failures")


@dataclass(frozen=True)
class EnvConfig:
    """What episodes look like: a distribution over scenarios.

    An episode's scenario is a cluster of ``clusters``, the generated workload (:meth:`workload_spec`) of
    ``n_jobs`` jobs with the generator arguments ``workload`` at a load of ``loads`` with a training seed, and
    run options of ``options``, each drawn uniformly; or, with ``presets``, a teaching preset's cluster and
    workload (its kind drawn uniformly among the workload kinds and the presets).

    Attributes:
        clusters: cluster specs (shorthand, JSON path) an episode draws from, uniformly.
        loads: offered loads an episode draws from, uniformly.
        n_jobs: jobs per generated episode, or a list of job counts an episode draws from, uniformly (short
            episodes teach how a burst on an empty cluster is served; long ones, a cluster's steady queue).
        workload: extra keyword arguments of the workload generator (``mix``, ``users``, ``arrival``, ...; see
            :meth:`engine.analysis.scenario.WorkloadSpec.from_generator_args`, whose bounds they meet).
        encoding: observation/action layout.
        reward: objective weights.
        options: run options (:class:`~engine.sim.options.RunOptions`: what a preempted job loses, nodes that
            break and jobs that crash, admission, ...); an episode draws one, uniformly. The default is
            ``RunOptions()`` only: free preemption, nothing fails. Train with the options the scheduler will meet:
            under free preemption alone an agent learns that evicting costs nothing; with both free and costly
            preemption, and ``encoding.evict_cost``, it sees what each eviction costs and can learn when one pays;
            with failures and ``encoding.node_health`` it sees each GPU type's node health. Configs written before
            this field give ``preemptions`` (or one ``preemption``) and ``failures``: :meth:`from_dict` reads them
            as each preemption model with the failures.
        workloads: kinds of workload, each generator arguments over ``workload``'s; an episode draws one.
        selector: the hand-written policies a selector chooses among (:class:`SelectorEnv`); empty otherwise.
        presets: teaching presets (names in ``presets/``), each a further kind an episode draws: the preset's own
            cluster and workload, generated with the episode's training seed, under the drawn ``options``.
        reference: a registered scheduler run alone on each episode's own workload, cluster and options; the
            dense wait and JCT payments are then made relative to its run's (:class:`ReferenceCost`), so a burst of
            arrivals, which costs every scheduler alike, no longer swings the rewards (a control variate for the
            noise the future workload puts in them: Mao et al., "Variance Reduction for Reinforcement Learning
            in Input-Driven Environments", ICLR 2019). The episode return becomes the reference's dense cost
            minus the objective; the undiscounted policy gradient is unchanged in expectation (the reference's
            run does not depend on the agent's actions). Empty (the default): none.
        selector_last: with ``selector``, whether the observation's ``select`` part ends with a one-hot of the
            policy that decided last (:func:`~engine.rl.selector.selector_obs`); false leaves it at zeros (the
            observation keeps its shape). Why false: a selector cloned from the best policy alone drives its first
            round with that policy, whose one-hot is then the label, so the network can learn to keep whatever
            decided last (fair-comm's first round: 99.9 % accuracy; without it 84.4 %, models/HISTORY.md).
    """

    clusters: tuple[str, ...] = ("4x8:V100-32",)
    loads: tuple[float, ...] = (0.9,)
    n_jobs: int | tuple[int, ...] = 100
    workload: Mapping[str, Any] = field(default_factory=dict)
    encoding: EncodingConfig = field(default_factory=EncodingConfig)
    reward: RewardWeights = field(default_factory=RewardWeights)
    options: tuple[RunOptions, ...] = (RunOptions(),)
    workloads: tuple[Mapping[str, Any], ...] = ()
    selector: tuple[str, ...] = ()
    presets: tuple[str, ...] = ()
    reference: str = ""
    selector_last: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "clusters", tuple(self.clusters))
        object.__setattr__(self, "loads", tuple(float(x) for x in self.loads))
        if not self.clusters or not self.loads:
            raise EngineError("env config needs at least one cluster and one load")
        if isinstance(self.n_jobs, (list, tuple)):
            object.__setattr__(self, "n_jobs", tuple(self.n_jobs))
        if not all(isinstance(n, int) and n >= 1 for n in self.job_counts) or not 1 <= len(self.job_counts) <= 16:
            raise EngineError(f"env n_jobs must be an integer >= 1 or a list of 1 to 16, got {str(self.n_jobs)[:60]}")
        if not isinstance(self.workload, Mapping):
            raise EngineError("env workload must be an object of generator arguments")
        object.__setattr__(self, "workloads", tuple(self.workloads))
        if not all(isinstance(w, Mapping) for w in self.workloads):
            raise EngineError("env workloads must be a list of objects of generator arguments")
        for load in self.loads:  # every workload the distribution holds is a valid scenario workload
            for kind in range(self.generated_kinds):
                for n in self.job_counts:
                    self.workload_spec(load, 0, n, kind)
        # an empty list reads as no selector, equal to the default
        object.__setattr__(self, "selector", check_policies(self.selector, "env.selector") if self.selector else ())
        if self.selector and self.encoding.elastic_start:
            raise EngineError("env.encoding.elastic_start sizes the jobs an agent starts; a selector starts none")
        object.__setattr__(self, "presets", tuple(self.presets))
        for name in self.presets:
            if not isinstance(name, str) or name not in PRESETS:
                raise EngineError(f"env.presets: unknown preset {str(name)[:60]!r}; valid: {', '.join(PRESETS)}")
        if len(set(self.presets)) != len(self.presets):
            raise EngineError("env.presets: each preset at most once")
        if self.reference:
            check_policies((self.reference,), "env.reference")
        if not isinstance(self.selector_last, bool) or not (self.selector_last or self.selector):
            raise EngineError(
                f"env.selector_last: true or false, and false with a selector only, got {self.selector_last!r}"
            )
        object.__setattr__(self, "options", tuple(self.options))
        if not self.options or not all(isinstance(o, RunOptions) for o in self.options):
            raise EngineError("env options must be one or more RunOptions")

    @property
    def job_counts(self) -> tuple[int, ...]:
        """The job counts a generated episode draws from (``n_jobs`` as a tuple)."""
        return self.n_jobs if isinstance(self.n_jobs, tuple) else (self.n_jobs,)

    @property
    def generated_kinds(self) -> int:
        """How many kinds of generated workload an episode draws from (``workloads``, or ``workload`` alone)."""
        return max(len(self.workloads), 1)

    def workload_spec(self, load: float, seed: int, n_jobs: int | None = None, kind: int = 0) -> WorkloadSpec:
        """The generated workload of an episode at ``load`` with workload seed ``seed`` (``n_jobs`` replaces
        the config's first job count), of workload kind ``kind`` (an index into ``workloads``, whose arguments go over
        ``workload``'s); ``EngineError`` naming ``env.workload.KEY`` when an argument is out of bounds."""
        n = self.job_counts[0] if n_jobs is None else n_jobs
        args = {**self.workload, **(self.workloads[kind] if self.workloads else {})}
        try:
            return WorkloadSpec.from_generator_args(n, load, seed, **args)
        except ScenarioError as exc:
            where = f"env.workloads[{kind}]" if self.workloads else "env.workload"
            raise EngineError(str(exc).replace("scenario.workload", where)) from None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "clusters": list(self.clusters),
            "loads": list(self.loads),
            "n_jobs": list(self.n_jobs) if isinstance(self.n_jobs, tuple) else self.n_jobs,
            "workload": dict(self.workload),
            "encoding": self.encoding.to_dict(),
            "reward": self.reward.to_dict(),
            "options": [o.to_dict() for o in self.options],
        }
        if self.workloads:
            out["workloads"] = [dict(w) for w in self.workloads]
        if self.selector:
            out["selector"] = list(self.selector)
        if self.presets:
            out["presets"] = list(self.presets)
        if self.reference:  # configs and cards written before it stay as they were
            out["reference"] = self.reference
        if not self.selector_last:
            out["selector_last"] = False
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EnvConfig:
        # the fields read as they are (the records below are parsed)
        plain = (
            "clusters",
            "loads",
            "n_jobs",
            "workload",
            "workloads",
            "selector",
            "presets",
            "reference",
            "selector_last",
        )
        reject_unknown_keys(data, {*plain, "encoding", "reward", "options", *_OLDER_OPTION_KEYS}, "env")
        kw: dict[str, Any] = {k: data[k] for k in plain if k in data}
        for k in ("workloads", "selector", "presets"):
            if k in kw and not isinstance(kw[k], list):
                raise EngineError(f"env.{k} must be a list")
        if "encoding" in data:
            kw["encoding"] = EncodingConfig.from_dict(data["encoding"])
        if "reward" in data:
            kw["reward"] = RewardWeights.from_dict(data["reward"])
        kw["options"] = env_options_from_dict(data)
        return cls(**kw)


def env_options_from_dict(data: Mapping[str, Any]) -> tuple[RunOptions, ...]:
    """The run options of env config JSON ``data`` (what :meth:`EnvConfig.from_dict` reads): its ``options``,
    else those of a config written before them, else ``(RunOptions(),)``; ``EngineError`` naming the key."""
    older = [k for k in _OLDER_OPTION_KEYS if k in data]
    if "options" in data and older:
        raise EngineError(f"env: give options or the older {' and '.join(older)}, not both")
    if older:
        return _older_options(data)
    opts = data.get("options", [{}])
    if not isinstance(opts, list) or not opts:
        raise EngineError("env.options must be a non-empty list of run options")
    return tuple(RunOptions.from_dict(o, f"env.options[{i}]") for i, o in enumerate(opts))


def _older_options(data: Mapping[str, Any]) -> tuple[RunOptions, ...]:
    """The run options of a config written before ``options``: each preemption model of ``preemptions`` (or
    the one of ``preemption``, older still; neither: free preemption) with the failures of ``failures`` (none
    when absent), in that order, so that an episode draws the options it drew the model of before."""
    if "preemption" in data and "preemptions" in data:
        raise EngineError("env: give preemptions (a list) or the older preemption (one object), not both")
    models = [PreemptionModel()]
    if "preemption" in data:
        models = [PreemptionModel.from_dict(data["preemption"], "env.preemption")]
    if "preemptions" in data:
        ps = data["preemptions"]
        if not isinstance(ps, list) or not ps:
            raise EngineError("env.preemptions must be a non-empty list of preemption models")
        models = [PreemptionModel.from_dict(p, f"env.preemptions[{i}]") for i, p in enumerate(ps)]
    failures = FailureModel.from_dict(data["failures"], "env.failures") if "failures" in data else FailureModel()
    try:  # e.g. a checkpoint cost needs every preemption model's interval
        return tuple(RunOptions(preemption=p, failures=failures) for p in models)
    except OptionsError as exc:
        raise EngineError(f"env: {exc}") from None


def observation_space(enc: EncodingConfig) -> tuple[spaces.Dict, spaces.Discrete]:
    """The (observation, action) spaces of an encoding (the datasheet above)."""
    box = lambda *shape: spaces.Box(0.0, 4.0, shape=shape, dtype=np.float32)  # noqa: E731
    obs = spaces.Dict(
        {
            "jobs": box(enc.window, enc.job_features),
            "groups": box(enc.max_types, enc.group_features),
            "global": box(enc.global_features),
            "action_mask": spaces.MultiBinary(enc.n_actions),
        }
    )
    return obs, spaces.Discrete(enc.n_actions)


class GpuSchedulingEnv(gym.Env):
    """Schedule a GPU cluster one decision at a time (see the module docstring for the datasheet)."""

    metadata = {"render_modes": []}

    def __init__(self, config: EnvConfig | Mapping[str, Any] | None = None) -> None:
        super().__init__()
        if config is None:
            config = EnvConfig()
        elif not isinstance(config, EnvConfig):
            config = EnvConfig.from_dict(config)
        self.config = config
        enc = config.encoding
        self._clusters = [parse_cluster(c) for c in config.clusters]
        self._check_types(self._clusters)
        self._presets = [(PRESETS[n].build_cluster(), PRESETS[n].scenario.workload) for n in config.presets]
        self._check_types([c for c, _ in self._presets])
        self.observation_space, self.action_space = observation_space(enc)
        self._sim: Simulation | None = None
        self._placements = RulePlacements()  # the episode's placement rules (encoding.RulePlacements)
        self._snap: Snapshot | None = None
        self._result: Result | None = None
        # The episode's kind (cluster, load, job count, workload kind or preset): jobs from another workload seed.
        self._same_kind: Callable[[int], tuple[Job, ...]] | None = None

    # ----------------------------------------------------------------- sampling
    def set_sampling(
        self, clusters: Sequence[str] | None = None, loads: Sequence[float] | None = None, n_jobs: int | None = None
    ) -> None:
        """Change what later episodes draw from (a curriculum calls this between stages)."""
        cfg = replace(
            self.config,
            **{k: v for k, v in (("clusters", clusters), ("loads", loads), ("n_jobs", n_jobs)) if v is not None},
        )
        clusters_ = [parse_cluster(c) for c in cfg.clusters]
        self._check_types(clusters_)
        self.config, self._clusters = cfg, clusters_

    def _check_types(self, clusters: Sequence[Cluster]) -> None:
        for c in clusters:
            if len(c.layout.type_names) > self.config.encoding.max_types:
                raise EngineError(
                    f"cluster {c.to_shorthand()} has {len(c.layout.type_names)} GPU types; "
                    f"encoding.max_types is {self.config.encoding.max_types}"
                )

    def _episode(self, options: Mapping[str, Any]) -> tuple[Cluster, tuple[Job, ...], RunOptions]:
        rng = self.np_random
        choices = self.config.options
        run_options = choices[_draw(rng, len(choices))]  # drawn first
        run_options = options.get("run_options", run_options)
        if not isinstance(run_options, RunOptions):
            raise EngineError("reset option run_options must be RunOptions")
        if "cluster" in options:
            cluster = parse_cluster(options["cluster"])
        else:
            cluster = self._clusters[int(rng.integers(len(self._clusters)))]
        self._same_kind = None
        if "jobs" in options:
            return cluster, tuple(options["jobs"]), run_options
        load = float(options.get("load", self.config.loads[int(rng.integers(len(self.config.loads)))]))
        counts = self.config.job_counts
        n_jobs = int(options.get("n_jobs", counts[_draw(rng, len(counts))]))
        seed = int(options.get("workload_seed", rng.integers(TRAIN_SEED_MIN, 2**31 - 1)))
        generated = self.config.generated_kinds
        # A given cluster, load or job count asks for a generated workload: presets bring their own.
        asked = any(k in options for k in ("cluster", "load", "n_jobs"))
        kinds = generated + (0 if asked else len(self._presets))
        kind = _draw(rng, kinds)
        if kind >= generated:
            cluster, workload = self._presets[kind - generated]
            self._same_kind = lambda s: workload.build_jobs(cluster, s)
        else:
            self._same_kind = lambda s: self.config.workload_spec(load, s, n_jobs, kind).build_jobs(cluster)
        return cluster, self._same_kind(seed), run_options

    # ----------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        super().reset(seed=seed)
        cluster, jobs, run_options = self._episode(options or {})
        sim = Simulation(
            cluster,
            jobs,
            options=run_options,
            seed=0 if seed is None else seed,
            scheduler_name="rl-env",
        )
        self._sim = sim
        self._result = None
        self._placements = RulePlacements()
        state = sim.reset()
        self._sizer = elastic_sizer(self.config.encoding, state)  # optimus's sizing around the agent's starts
        self._point_starts: list[int] = []  # jobs the agent started at this decision point (for the sizer)
        if self._sizer is not None:
            self._apply(self._sizer.make_room(state), keep=_nothing)
        self._started_wait_s = 0.0  # waits of queue stays that have ended
        self._queued_since: dict[int, float] = {}  # preempted jobs: job -> when they re-entered the queue
        self._run_start: dict[int, float] = {}  # running, not yet seen finished: job -> segment start
        self._finished_run_s = 0.0  # run time of ended segments
        self._preempted_run_s: dict[int, float] = {}  # job -> run time of its preempted segments
        type_total = np.bincount(cluster.layout.gpu_type, minlength=len(cluster.layout.type_names))
        n_ok = 0
        for job in jobs:
            elig = state.eligible_types(job)
            n_ok += bool(elig.any() and job.gpus <= type_total[elig].max())
        self._n_schedulable = max(n_ok, 1)
        self._potential = 0.0
        self._reference = self._reference_cost(cluster, jobs, run_options, 0 if seed is None else seed)
        self._reference_paid = 0.0
        self._ended_s: dict[int, float] = {}  # jobs seen ended: job -> end time
        self._deadlines = sorted((job.deadline_s, job.job_id) for job in jobs if job.has_deadline)
        self._deadlines_seen = 0  # how many of them have passed (and were booked if missed)
        self._deadline_paid = 0.0
        self._run_to_choice()
        self._terminal_paid = False
        return self._obs(), self._info(False)

    def step(self, action):
        self._check_running()
        sim, cfg, snap = self._sim, self.config, self._snap
        action = int(action)
        invalid = not (0 <= action < cfg.encoding.n_actions and snap.mask[action])
        if invalid:
            allowed = np.flatnonzero(snap.mask)
            action = cfg.encoding.wait_action if snap.mask[-1] else int(allowed[0])
        before = self._potential
        started = self._account(self._apply(decode(sim.state, action, cfg.encoding, snap, self._placements)))
        if started is None:
            if self._next_point():
                self._run_to_choice()
        else:
            self._point_starts.append(started)
            self._run_to_choice()
        reward, terminated = self._settle(before)
        info = self._info(invalid)
        if started is not None:
            info["started"] = started
        return self._obs(), reward, terminated, False, info

    def _check_running(self) -> None:
        """``EngineError`` unless an episode is under way (``step`` needs one)."""
        if self._sim is None:
            raise EngineError("call reset() before step()")
        if self._sim.done:
            raise EngineError("the episode is over; call reset()")

    def _apply(self, decisions: Iterable[Decision], keep: Callable[[Decision], bool] | None = None) -> list[Decision]:
        """Apply ``decisions`` to the simulation (it pulls them one by one: each sees the state the previous one
        left); return the applied ones ``keep`` accepts (all without ``keep``), for :meth:`_account`."""
        applied: list[Decision] = []

        def recorded(decisions):
            for d in decisions:
                if keep is None or keep(d):
                    applied.append(d)
                yield d

        self._sim.apply(recorded(decisions))
        return applied

    def _settle(self, before: float) -> tuple[float, bool]:
        """The step's reward (the cost accrued since the potential was ``before``, and the remaining terms at the
        end) and whether the episode ended."""
        sim, w = self._sim, self.config.reward
        self._potential = self._cost_potential()
        reward = -(self._potential - before) / (self._n_schedulable * w.wait_scale_s) - self._book_deadlines()
        terminated = sim.done
        if terminated:
            self._result = sim.result()
            reward -= terminal_cost(self._result, w) - self._deadline_paid
        if self._reference is not None:
            paid = self._reference.total if terminated else self._reference.at(sim.now_s)
            reward += (paid - self._reference_paid) / (self._n_schedulable * w.wait_scale_s)
            self._reference_paid = paid
        return float(reward), terminated

    def _reference_cost(
        self, cluster: Cluster, jobs: Sequence[Job], options: RunOptions, seed: int
    ) -> ReferenceCost | None:
        """The dense cost of ``config.reference`` run alone on this episode (``None`` without a reference)."""
        if not self.config.reference:
            return None
        result = simulate(cluster, jobs, make_scheduler(self.config.reference), seed=seed, options=options)
        return ReferenceCost(result, self.config.reward)

    def _book_deadlines(self) -> float:
        """The deadline cost of the jobs whose deadline passed since the last step (strictly before now) that
        had not completed by it: each its ``reward.deadline`` share of the jobs with a deadline. The terminal cost
        pays the rest (:mod:`engine.rl.reward`)."""
        deadlines, now, ended = self._deadlines, self._sim.now_s, self._ended_s
        first = i = self._deadlines_seen
        missed = 0
        while i < len(deadlines) and deadlines[i][0] < now:
            deadline_s, j = deadlines[i]
            missed += not ended.get(j, math.inf) <= deadline_s
            i += 1
        self._deadlines_seen = i
        if i == first or not self.config.reward.deadline:
            return 0.0
        cost = self.config.reward.deadline * missed / len(deadlines)
        self._deadline_paid += cost
        return cost

    def action_masks(self) -> np.ndarray:
        """The exact mask of feasible actions (sb3-contrib's MaskablePPO calls this)."""
        if self._snap is None:
            raise EngineError("call reset() before action_masks()")
        return self._snap.mask.copy()

    # ----------------------------------------------------------------- helpers
    @property
    def simulation(self) -> Simulation | None:
        """The engine's simulation this episode drives."""
        return self._sim

    def same_kind_jobs(self, workload_seed: int) -> tuple[Job, ...]:
        """The jobs of an episode of the current episode's kind (its cluster, load, job count and workload kind,
        or its teaching preset) generated with ``workload_seed`` instead: for labels that hold for the kind."""
        if self._same_kind is None:
            raise EngineError("same_kind_jobs needs an episode reset with a generated workload, not given jobs")
        return self._same_kind(workload_seed)

    @property
    def snapshot(self) -> Snapshot | None:
        """The current decision point's window, fits and mask (what a teacher policy reads)."""
        return self._snap

    @property
    def result(self) -> Result | None:
        """The finished episode's :class:`~engine.Result` (``None`` until the episode ends)."""
        return self._result

    def _run_to_choice(self) -> None:
        """Advance the simulation until some start is feasible (or the run ends); update the snapshot."""
        sim, enc = self._sim, self.config.encoding
        while not sim.done:
            snap = snapshot(sim.state, enc)
            if snap.mask[:-1].any():
                self._snap = snap
                return
            if self._sizer is None:
                sim.apply([])  # a decision point where nothing can start: the agent has nothing to choose
            self._next_point()
        self._snap = Snapshot([], [], np.zeros(enc.n_actions, dtype=bool))

    def _next_point(self) -> bool:
        """End the decision point (with ``elastic_start``, the sizer's hand-out after the agent's starts) and run to
        the next one (then the sizer makes room before the agent acts); False when the run ended."""
        sizer, sim = self._sizer, self._sim
        if sizer is None:
            return sim.advance()
        self._apply(sizer.hand_out(sim.state, self._point_starts), keep=_nothing)
        self._point_starts = []
        if not sim.advance():
            return False
        self._apply(sizer.make_room(sim.state), keep=_nothing)
        return True

    def _account(self, applied: Sequence[Decision]) -> int | None:
        """Book the queue stays and run segments that ``applied`` ended; returns the started job, if any."""
        now, jobs = self._sim.now_s, self._sim.jobs
        started = None
        for d in applied:
            j = d.job_id
            if type(d) is Preempt:
                self._queued_since[j] = now
                run_s = now - self._run_start.pop(j)
                self._finished_run_s += run_s
                self._preempted_run_s[j] = self._preempted_run_s.get(j, 0.0) + run_s
            else:
                started = j
                self._started_wait_s += now - self._queued_since.pop(j, jobs[j].submit_s)
                self._run_start[j] = now
        return started

    def _cost_potential(self) -> float:
        """The dense cost accrued so far: ``wait x (wait so far) + jct x (time in the system so far)``.

        Wait so far = the ended queue stays plus the running stays of queued jobs (since submission, or since
        the preemption that sent them back). Time in the system adds the run time: ended segments, plus up to
        now for running ones; a finished job's last segment is its attained GPU-seconds over its GPU demand
        minus its preempted segments. At the end these are exactly the sums of waits and of JCTs.
        """
        sim, w = self._sim, self.config.reward
        state, jobs, now = sim.state, sim.jobs, sim.now_s
        self._book_ended_segments()
        since = self._queued_since
        wait = self._started_wait_s + sum(now - since.get(j, jobs[j].submit_s) for j in state.queue)
        if not w.jct:
            return w.wait * wait
        run = self._finished_run_s + sum(now - s for s in self._run_start.values())
        return w.wait * wait + w.jct * (wait + run)

    def _book_ended_segments(self) -> None:
        """Book the run segments that ended since the last step without a decision of the agent: a job that
        finished (or ended failed), or one a node failure or a crash with a retry left sent back to the queue
        (its segment ended ``run time`` after it started; it waits again from then). A segment's run time is the
        job's attained GPU-seconds over its GPU demand minus its earlier segments."""
        state, jobs = self._sim.state, self._sim.jobs
        running = state.running
        for j in [j for j in self._run_start if j not in running]:
            start_s = self._run_start.pop(j)
            before_s = self._preempted_run_s.pop(j, 0.0)
            total_s = state.attained_gpu_s(j) / (jobs[j].gpus * jobs[j].gpu_fraction)
            self._finished_run_s += total_s - before_s
            if state.is_waiting(j):
                self._queued_since[j] = start_s + total_s - before_s
                self._preempted_run_s[j] = total_s
            else:
                self._ended_s[j] = start_s + total_s - before_s

    def _obs(self) -> dict[str, np.ndarray]:
        if self._sim.done:
            return {k: np.zeros(s.shape, dtype=s.dtype) for k, s in self.observation_space.spaces.items()}
        return encode(self._sim.state, self.config.encoding, self._snap)

    def _info(self, invalid: bool) -> dict[str, Any]:
        return {"now_s": float(self._sim.now_s), "invalid_action": invalid}


class ReferenceCost:
    """The dense cost a reference run accrued (``wait x`` the queued jobs' waiting time ``+ jct x`` the time jobs
    spent in the system, as :meth:`GpuSchedulingEnv._cost_potential` counts the agent's) as a function of time.

    The run's series hold the queue and running counts after each change, so the cost grows linearly between
    changes; past the last change it stays at ``total`` (the run is over).
    """

    def __init__(self, result: Result, weights: RewardWeights) -> None:
        t = np.asarray(result.series_t, dtype=float)
        queued = np.asarray(result.series_queue, dtype=float)
        rate = weights.wait * queued + weights.jct * (queued + np.asarray(result.series_running, dtype=float))
        self._t, self._rate = t, rate
        self._cum = np.concatenate(([0.0], np.cumsum(rate[:-1] * np.diff(t)))) if t.size else np.zeros(1)
        self.total = float(self._cum[-1])

    def at(self, now_s: float) -> float:
        """The cost accrued by time ``now_s``."""
        i = int(np.searchsorted(self._t, now_s, side="right")) - 1
        if i < 0:
            return 0.0
        if i >= self._t.size - 1:
            return self.total
        return float(self._cum[i] + self._rate[i] * (now_s - self._t[i]))


def selector_spaces(enc: EncodingConfig, n_policies: int) -> tuple[spaces.Dict, spaces.Discrete]:
    """The (observation, action) spaces of a selector over ``n_policies`` policies (:mod:`engine.rl.selector`)."""
    parts = dict(observation_space(enc)[0].spaces)
    del parts["action_mask"]
    parts["select"] = spaces.Box(0.0, 4.0, shape=(SELECT_BASE_FEATURES + n_policies,), dtype=np.float32)
    return spaces.Dict(parts), spaces.Discrete(n_policies)


class SelectorEnv(GpuSchedulingEnv):
    """The selector mode (``EnvConfig.selector``): each step picks the hand-written policy that makes this
    decision point's ``decide`` call, then time runs to the next decision point (:mod:`engine.rl.selector`).
    Driven with one policy index throughout, it reproduces that policy's ``simulate`` run."""

    def __init__(self, config: EnvConfig | Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        if not self.config.selector:
            raise EngineError("SelectorEnv needs env.selector: the hand-written policies it chooses from")
        self._switch = PolicySwitch(self.config.selector)
        self.observation_space, self.action_space = selector_spaces(self.config.encoding, len(self.config.selector))

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        self._switch.reset()
        return super().reset(seed=seed, options=options)

    def step(self, action):
        self._check_running()
        k = int(action)
        invalid = not 0 <= k < len(self._switch.names)
        before = self._potential
        self._decide(self._switch.default() if invalid else k)
        self._sim.advance()
        self._run_to_choice()
        reward, terminated = self._settle(before)
        return self._obs(), reward, terminated, False, self._info(invalid)

    def action_masks(self) -> np.ndarray:
        """Every policy may always decide."""
        return np.ones(len(self._switch.names), dtype=bool)

    def _decide(self, k: int) -> None:
        """Apply policy ``k``'s decisions at this decision point and book the starts and preemptions."""
        self._account(self._apply(self._switch.decide(self._sim.state, k), keep=is_job_decision))

    def _run_to_choice(self) -> None:
        """Advance until a decision point with a waiting job (or the end); others go to the current policy."""
        sim = self._sim
        while not sim.done and not sim.state.queue:
            self._decide(self._switch.default())
            sim.advance()

    def _obs(self) -> dict[str, np.ndarray]:
        if self._sim.done:
            return {k: np.zeros(s.shape, dtype=s.dtype) for k, s in self.observation_space.spaces.items()}
        sw = self._switch
        current = sw.current if self.config.selector_last else -1
        return selector_obs(self._sim.state, self.config.encoding, len(sw.names), current)


def _nothing(decision: Decision) -> bool:
    """No decision of the elastic sizer is booked by :meth:`GpuSchedulingEnv._account` (resizes start nothing)."""
    return False


def _draw(rng: np.random.Generator, n: int) -> int:
    """An index in ``0..n-1`` drawn from ``rng``, only when there is a choice (``n > 1``): a config that gives one
    choice (one run option, job count or kind of workload) keeps the episodes it had before the choice existed."""
    return int(rng.integers(n)) if n > 1 else 0


def make_env(config: EnvConfig) -> GpuSchedulingEnv:
    """The environment ``config`` describes: a :class:`SelectorEnv` with ``selector``, else a
    :class:`GpuSchedulingEnv`."""
    return SelectorEnv(config) if config.selector else GpuSchedulingEnv(config)


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="engine.rl.env:GpuSchedulingEnv")
