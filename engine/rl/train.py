"""Train a learned scheduler with MaskablePPO, CleanRL-style: one config, one file, top to bottom.

``python -m engine train --config FILE`` (or ``--config NAME`` for a config in ``engine/rl/configs/``) runs:

1. build ``n_envs`` copies of :class:`engine.rl.env.GpuSchedulingEnv` (``DummyVecEnv``, ``Monitor``-wrapped);
2. build the policy network in code from the config (:mod:`engine.rl.policies`);
3. train with sb3-contrib's ``MaskablePPO``: TensorBoard logs, a progress bar, plain-weight checkpoints, a
   maskable evaluation callback that keeps the best policy, and a curriculum that changes the clusters,
   loads and episode lengths the environments draw from as training goes on;
4. export ``models/<name>.npz`` (the policy's ``state_dict`` as float32 NumPy arrays; no pickle) and
   the card ``models/<name>.json`` with the config, time steps, wall time, library versions and SHA-256.

Everything written during training goes under ``runs/<name>/`` (git-ignored).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from engine.errors import EngineError, check_int, reject_unknown_keys
from engine.rl.agent import (
    MODELS_DIR,
    WEIGHTS_FORMAT,
    ModelError,
    export_model,
    load_model_weights,
    model_spec,
    read_card,
    write_weights,
)
from engine.rl.clone import BEST_TEACHER, SELECTOR_TEACHERS, CloneConfig, clone
from engine.rl.encoding import EVICT, EncodingConfig
from engine.rl.env import EnvConfig, SelectorEnv, make_env
from engine.rl.policies import PolicySpec, policy_kwargs, state_arrays
from engine.rl.selector import check_margin, check_vote

#: The shipped training configs, one ``<name>.json`` each (``--config NAME``).
CONFIGS_DIR = Path(__file__).resolve().parent / "configs"
#: Key of a config file's ``env``: the name of a shipped config whose ``env`` this one takes, its own ``env`` keys
#: replacing that env's (several agents train on one episode distribution, written once); expanded on load, so a
#: card's ``training.config`` holds the whole env.
ENV_FROM = "from"
#: Most environment steps a config may ask for: weeks of training on a small machine (a bound, not a budget).
MAX_TIMESTEPS = 10**9
#: Bounds of the config's counts, so that a config from a stranger cannot ask for a run without end or a machine's
#: memory: each far above what any config here uses (2-4 environments, 1,024 steps each, 12 evaluation episodes).
LIMITS = {
    "total_timesteps": MAX_TIMESTEPS,
    "n_envs": 256,
    "n_steps": 1_000_000,
    "batch_size": 1_000_000,
    "n_epochs": 1_000,
    "eval_freq": MAX_TIMESTEPS,
    "eval_episodes": 10_000,
    "checkpoint_freq": MAX_TIMESTEPS,
    "torch_threads": 1_024,
}
#: Most rollout steps (``n_steps`` x ``n_envs``) held in memory at once.
MAX_ROLLOUT = 1_000_000
#: A file of this name in ``runs/<name>/`` asks a running training to stop and export what it has.
STOP_FILE = "STOP"
VEC_ENVS = ("dummy", "subproc")
#: The checkpoints training writes (``runs/<name>/checkpoint_<step>.npz``), the only files a run resumes from.
RESUME_NAME = re.compile(r"^checkpoint_([0-9]{1,12})\.npz$")


@dataclass(frozen=True)
class Stage:
    """One curriculum stage: from ``start_step`` on, episodes draw from these lists.

    Attributes:
        start_step: total environment steps after which this stage begins.
        clusters: cluster specs of this stage (``None`` keeps the previous ones).
        loads: offered loads of this stage (``None`` keeps the previous ones).
        n_jobs: jobs per episode in this stage (``None`` keeps the previous value).
    """

    start_step: int
    clusters: tuple[str, ...] | None = None
    loads: tuple[float, ...] | None = None
    n_jobs: int | None = None


#: Encoding options a card may run with that its training did not (``TrainConfig.deploy_encoding``): each changes
#: which actions are feasible (``whole_node``, ``max_evictions``), where an eviction makes room (``evict_scope``) or
#: how an elastic job is sized (``elastic_start``), never the observation and action layout.
DEPLOY_OPTIONS = ("whole_node", "max_evictions", "elastic_start", "evict_scope")


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a training run (a model card stores it verbatim).

    Attributes:
        name: model name; the weights go to ``models/<name>.npz`` and the card to ``models/<name>.json``.
        description: one sentence for the model card: what the agent is for.
        env: the episodes (clusters, loads, jobs, encoding, reward) of the first stage and of evaluation.
        policy: the network (``mlp`` or ``attention``).
        curriculum: later stages, each changing what episodes draw from at a given step.
        total_timesteps: environment steps to train for, all environments together.
        n_envs: parallel environments (``DummyVecEnv``).
        n_steps: steps per environment per PPO rollout.
        batch_size: minibatch size of PPO updates.
        n_epochs: passes over each rollout.
        learning_rate: Adam step size.
        gamma: discount factor (close to 1: the objective is an undiscounted episode sum).
        gae_lambda: GAE smoothing.
        ent_coef: entropy bonus (exploration).
        clip_range: PPO clipping.
        vf_coef: weight of the value loss.
        seed: seeds the environments, the network initialisation and PPO's sampling.
        eval_freq: evaluate the deterministic policy every this many steps (all environments together).
        eval_episodes: episodes per evaluation, on fixed validation workloads (seeds from
            ``VALIDATION_SEED_BASE``); the policy with the best mean return is kept.
        checkpoint_freq: save plain weights every this many steps.
        torch_threads: CPU threads torch may use.
        progress_bar: show a tqdm/rich progress bar.
        runs_dir: where logs and checkpoints go (``runs/<name>/``).
        clone: behaviour cloning before PPO (:class:`~engine.rl.clone.CloneConfig`): the policy first imitates
            a teacher heuristic on episodes of the last curriculum stage; ``None``: no cloning. The cloned
            policy is evaluated like a checkpoint and stays the kept one unless PPO beats it on validation.
        init_from: name of a model in ``models/`` whose weights start this run instead of a fresh
            initialisation (continued training); empty: start fresh. Its card must have the same policy spec
            and encoding; its weights are read with the SHA-256-checked loader of :mod:`engine.rl.agent`. The
            new card counts the parent's steps and wall time in its totals and keeps the parent's
            ``training`` section under ``training.init_from``.
        vec_env: ``"dummy"`` (the environments step in this process, one after another) or ``"subproc"`` (each in
            its own process: ``SubprocVecEnv``, for machines with a core per environment).
        selector_prior: with ``env.selector``, before training each policy is run alone on the validation
            episodes and the action bias of the best one is raised by this much, so the untrained selector
            already picks it (the first candidate the kept-policy evaluation sees); 0: no prior.
        selector_vote: with ``env.selector``, how the exported ``rl:<name>`` turns the network's picks into the
            policy that decides (:data:`engine.rl.selector.VOTES`): ``"step"``, its pick at each decision point;
            ``"run"``, the policy it has picked most often in the run so far. Applied at inference only (training
            and its evaluations take each step's pick); the card records it as ``selector_vote``.
        selector_margin: with ``env.selector`` and the vote ``"step"``, how much higher (in logits) the network's
            pick must score than the policy that decided last for the exported ``rl:<name>`` to switch to it
            (:class:`engine.rl.selector.SelectorScheduler`); 0: it switches whenever its pick changes. Applied at
            inference only; the card records it as ``selector_margin``.
        resume_from: a checkpoint of this run (``checkpoint_<step>.npz`` in ``runs/<name>/``, plain weights)
            whose weights start the run and whose steps count in the card's totals (the optimiser state is not
            kept); empty: start fresh.
        deploy_encoding: encoding options the exported card runs with, over ``env.encoding``: constraints on
            which actions the trained policy may take (a shield), applied at inference only; training, cloning
            and the kept-policy evaluation use ``env.encoding``. Only options in :data:`DEPLOY_OPTIONS`, which
            leave the observation and action layout as they are (e.g. ``{"whole_node": true}``: a job that
            one node could hold never starts spread, the policy's next choice is taken instead;
            ``{"max_evictions": 40}``: a job preempted 40 times is never a victim again; ``{"evict_scope":
            "node"}``: a job one node could hold makes room on one node; ``{"elastic_start": true}``: elastic jobs
            start on their fewest GPUs and are sized as optimus sizes them); empty: the card runs with
            ``env.encoding``.
    """

    name: str
    description: str = ""
    env: EnvConfig = field(default_factory=EnvConfig)
    policy: PolicySpec = field(default_factory=PolicySpec)
    curriculum: tuple[Stage, ...] = ()
    total_timesteps: int = 100_000
    n_envs: int = 4
    n_steps: int = 256
    batch_size: int = 256
    n_epochs: int = 4
    learning_rate: float = 3e-4
    gamma: float = 0.995
    gae_lambda: float = 0.95
    ent_coef: float = 0.01
    clip_range: float = 0.2
    vf_coef: float = 0.5
    seed: int = 0
    eval_freq: int = 10_000
    eval_episodes: int = 5
    checkpoint_freq: int = 25_000
    torch_threads: int = 1
    progress_bar: bool = True
    runs_dir: str = "runs"
    clone: CloneConfig | None = None
    init_from: str = ""
    deploy_encoding: Mapping[str, Any] = field(default_factory=dict)
    vec_env: str = "dummy"
    selector_prior: float = 0.0
    selector_vote: str = "step"
    selector_margin: float = 0.0
    resume_from: str = ""

    def __post_init__(self) -> None:
        if not self.name or not all(c.isalnum() or c in "-_." for c in self.name):
            raise EngineError(f"train config: name {self.name!r} must use letters, digits, '-', '_' or '.'")
        for k, most in LIMITS.items():
            check_int(getattr(self, k), f"train config: {k}", 1, most)
        if self.n_steps * self.n_envs > MAX_ROLLOUT:
            raise EngineError(
                f"train config: n_steps x n_envs is {self.n_steps * self.n_envs:,} steps of rollout held in memory; "
                f"the limit is {MAX_ROLLOUT:,}"
            )
        check_int(self.seed, "train config: seed", 0, 2**31 - 1)
        if not isinstance(self.deploy_encoding, Mapping) or set(self.deploy_encoding) - set(DEPLOY_OPTIONS):
            raise EngineError(
                f"train config: deploy_encoding {self.deploy_encoding!r} must be an object with "
                f"keys from {list(DEPLOY_OPTIONS)}"
            )
        object.__setattr__(self, "deploy_encoding", dict(self.deploy_encoding))
        self.deployed_encoding()  # validates the options against env.encoding
        if self.env.selector and self.deploy_encoding.get("elastic_start"):
            raise EngineError(
                "train config: deploy_encoding.elastic_start sizes the jobs an agent starts; a selector starts none"
            )
        if self.vec_env not in VEC_ENVS:
            raise EngineError(f"train config: vec_env {self.vec_env!r}: expected one of {list(VEC_ENVS)}")
        if isinstance(self.selector_prior, bool) or not (
            isinstance(self.selector_prior, (int, float)) and 0 <= self.selector_prior <= 20
        ):
            raise EngineError(
                f"train config: selector_prior must be a number from 0 to 20, got {self.selector_prior!r}"
            )
        check_vote(self.selector_vote, "train config: selector_vote")
        check_margin(self.selector_margin, self.selector_vote, "train config: selector_margin")
        if (self.selector_vote != "step" or self.selector_margin) and not self.env.selector:
            raise EngineError("train config: selector_vote and selector_margin apply to a selector (env.selector) only")
        if self.env.selector and self.policy.kind != "mlp":
            raise EngineError("train config: a selector (env.selector) trains an mlp policy")
        if self.clone is not None and (self.clone.teacher in SELECTOR_TEACHERS) != bool(self.env.selector):
            raise EngineError(
                f"train config: a selector (env.selector) clones a clone.teacher of {list(SELECTOR_TEACHERS)}, "
                "and only a selector does"
            )
        if self.clone is not None and self.clone.teacher == BEST_TEACHER:
            self.clone.within_encoding(self.env)
        if self.resume_from and not RESUME_NAME.match(self.resume_from):
            raise EngineError(
                f"train config: resume_from {self.resume_from[:100]!r} must be a checkpoint_<step>.npz of runs/<name>/"
            )

    def deployed_encoding(self) -> EncodingConfig:
        """The encoding the exported card runs with: ``env.encoding`` with ``deploy_encoding`` applied."""
        return EncodingConfig.from_dict(self.env.encoding.to_dict() | self.deploy_encoding)

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["env"] = self.env.to_dict()
        d["policy"] = self.policy.to_dict()
        d["clone"] = self.clone.to_dict() if self.clone else None
        d["deploy_encoding"] = dict(self.deploy_encoding)
        if self.selector_vote == "step":  # the defaults are not written, so earlier cards' configs read the same
            del d["selector_vote"]
        if not self.selector_margin:
            del d["selector_margin"]
        d["curriculum"] = [
            {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(s).items() if v is not None}
            for s in self.curriculum
        ]
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "train config") -> TrainConfig:
        valid = set(cls.__dataclass_fields__)
        reject_unknown_keys(data, valid, where)
        kw = dict(data)
        try:
            if "env" in kw:
                kw["env"] = EnvConfig.from_dict(kw["env"])
            if "policy" in kw:
                kw["policy"] = PolicySpec.from_dict(kw["policy"])
            if kw.get("clone") is not None:
                kw["clone"] = CloneConfig.from_dict(kw["clone"])
            kw["curriculum"] = tuple(
                Stage(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in s.items()})
                for s in kw.get("curriculum", ())
            )
            return cls(**kw)
        except TypeError as exc:
            raise EngineError(f"{where}: {exc}") from None


def config_names() -> list[str]:
    """The names of the shipped training configs (``engine/rl/configs/<name>.json``)."""
    return sorted(p.stem for p in CONFIGS_DIR.glob("*.json"))


def load_config(name_or_path: str) -> TrainConfig:
    """A training config from a JSON file, or from a shipped config's name (``engine/rl/configs/<name>.json``);
    an ``env`` with :data:`ENV_FROM` is expanded (:func:`_expand_env`), so the config holds the whole env."""
    path = Path(name_or_path)
    if not path.is_file():
        shipped = _shipped(name_or_path)
        if not shipped.is_file():
            raise EngineError(
                f"train config {name_or_path!r}: no such file and no such shipped config; "
                f"configs: {', '.join(config_names())}"
            )
        path = shipped
    where = f"train config {path}"
    return TrainConfig.from_dict(_expand_env(_read_json(path), where, ()), where=where)


def _shipped(name: str) -> Path:
    """Where the shipped config ``name`` is (``engine/rl/configs/<name>.json``)."""
    return CONFIGS_DIR / f"{name}.json"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EngineError(f"train config {path}: not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise EngineError(f"train config {path}: expected a JSON object")
    return data


def _expand_env(data: dict[str, Any], where: str, seen: tuple[str, ...]) -> dict[str, Any]:
    """``data`` with its ``env`` expanded: where ``env`` names a shipped config in :data:`ENV_FROM`, that config's
    (expanded) ``env`` with the keys ``env`` gives replacing its own; ``seen``: the configs already on the way here,
    so that a cycle raises instead of recursing."""
    env = data.get("env")
    if not isinstance(env, Mapping) or ENV_FROM not in env:
        return data
    base = env[ENV_FROM]
    if base not in config_names():
        raise EngineError(f"{where}: env.{ENV_FROM} {str(base)[:100]!r} is not a shipped config's name")
    if base in seen:
        raise EngineError(f"{where}: env.{ENV_FROM} goes round in a circle through {base!r}")
    parent = _expand_env(_read_json(_shipped(base)), where, (*seen, base))
    if not isinstance(parent.get("env"), Mapping):
        raise EngineError(f"{where}: env.{ENV_FROM} {base!r} has no env")
    return {**data, "env": {**parent["env"], **{k: v for k, v in env.items() if k != ENV_FROM}}}


def library_versions() -> dict[str, str]:
    import gymnasium
    import numpy
    import sb3_contrib
    import stable_baselines3
    import torch

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "gymnasium": gymnasium.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "sb3_contrib": sb3_contrib.__version__,
    }


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


#: Workload seeds of the evaluation episodes during training (validation): below ``TRAIN_SEED_MIN`` like test
#: seeds, but far above the ``0..n-1`` that ``engine.analysis.evaluate`` uses, so selecting the best model never sees
#: a test workload.
VALIDATION_SEED_BASE = 900_000


def _make_env(cfg: EnvConfig, seed: int, validation_episodes: int = 0):
    import gymnasium as gym
    from stable_baselines3.common.monitor import Monitor

    class FixedEpisodes(gym.Wrapper):
        """Every evaluation sees the same episodes: reset ``k`` uses workload seed ``seeds[k % len]``.

        An evaluation resets once before its first episode and once after each (the vector env's auto-reset),
        so the cycle is one longer than the number of episodes, the last entry being the unused extra reset.
        """

        def __init__(self, env: gym.Env, n: int) -> None:
            super().__init__(env)
            self.seeds = [VALIDATION_SEED_BASE + k for k in range(n)] + [VALIDATION_SEED_BASE]
            self.k = 0

        def reset(self, *, seed=None, options=None):
            ws = self.seeds[self.k % len(self.seeds)]
            self.k += 1
            return self.env.reset(seed=ws, options={"workload_seed": ws})

    def thunk():
        env = make_env(cfg)
        if validation_episodes:
            env = FixedEpisodes(env, validation_episodes)
        env = Monitor(env)
        env.reset(seed=seed)
        return env

    return thunk


def train(cfg: TrainConfig, *, models_dir: Path | None = None, export: bool = True) -> dict[str, Any]:
    """Run the training ``cfg`` describes; returns the card written to ``models_dir`` (default ``models/``)."""
    import torch
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback
    from stable_baselines3.common.callbacks import BaseCallback, CallbackList
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    torch.set_num_threads(cfg.torch_threads)
    run_dir = Path(cfg.runs_dir) / cfg.name
    run_dir.mkdir(parents=True, exist_ok=True)

    # 0. the parent of a continued run, read before anything is exported (the export may replace it).
    parent, parent_state = _parent(cfg, models_dir) if cfg.init_from else (None, None)

    # 1. environments: training copies seeded seed..seed+n-1; evaluation on fixed validation workloads.
    vec = SubprocVecEnv if cfg.vec_env == "subproc" else DummyVecEnv
    venv = vec([_make_env(cfg.env, cfg.seed + i) for i in range(cfg.n_envs)])
    final_env = _stage_env(cfg)
    eval_env = DummyVecEnv([_make_env(final_env, cfg.seed, validation_episodes=cfg.eval_episodes)])

    # 2. the agent.
    model = MaskablePPO(
        "MultiInputPolicy",
        venv,
        n_steps=cfg.n_steps,
        batch_size=cfg.batch_size,
        n_epochs=cfg.n_epochs,
        learning_rate=cfg.learning_rate,
        gamma=cfg.gamma,
        gae_lambda=cfg.gae_lambda,
        ent_coef=cfg.ent_coef,
        clip_range=cfg.clip_range,
        vf_coef=cfg.vf_coef,
        seed=cfg.seed,
        policy_kwargs=policy_kwargs(cfg.policy),
        tensorboard_log=str(run_dir / "tb"),
        device="cpu",
        verbose=0,
    )
    if parent_state is not None:
        model.policy.load_state_dict({k: torch.as_tensor(np.array(v)) for k, v in parent_state.items()})
    resumed_steps = 0
    if cfg.resume_from:
        resumed_steps = int(RESUME_NAME.match(cfg.resume_from).group(1))  # type: ignore[union-attr]
        with np.load(run_dir / cfg.resume_from, allow_pickle=False) as z:
            model.policy.load_state_dict({k: torch.as_tensor(z[k]) for k in z.files})

    # 3. callbacks: curriculum, plain-weight checkpoints, best-model evaluation.
    class Curriculum(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next = 0

        def _on_step(self) -> bool:
            stages = cfg.curriculum
            while self.next < len(stages) and self.num_timesteps >= stages[self.next].start_step:
                s = stages[self.next]
                self.training_env.env_method("set_sampling", s.clusters, s.loads, s.n_jobs)
                self.logger.record("curriculum/stage", self.next + 1)
                self.next += 1
            return True

    class SaveWeights(BaseCallback):
        """Saves the policy's weights as plain arrays (``.npz``; never a pickled SB3 zip) to ``path``."""

        def __init__(self, path_fmt: str, every: int = 0) -> None:
            super().__init__()
            self.path_fmt, self.every = path_fmt, every

        def _on_step(self) -> bool:
            if self.every == 0 or self.num_timesteps % self.every < cfg.n_envs:
                write_weights(state_arrays(self.model.policy), Path(self.path_fmt.format(step=self.num_timesteps)))
            return True

    best_path = run_dir / "best_policy.npz"
    best_path.unlink(missing_ok=True)  # a previous run's best is no candidate of this one
    evaluator = MaskableEvalCallback(
        eval_env,
        n_eval_episodes=cfg.eval_episodes,
        eval_freq=max(cfg.eval_freq // cfg.n_envs, 1),
        deterministic=True,
        log_path=str(run_dir / "eval"),
        best_model_save_path=None,
        callback_on_new_best=SaveWeights(str(best_path)),
        verbose=0,
    )

    class StopFile(BaseCallback):
        """Ends training at the next step once ``runs/<name>/STOP`` exists (how the app stops a run and keeps
        what it learned: the export below still happens)."""

        def _on_step(self) -> bool:
            return bool(self.n_calls % 16) or not stop_path.exists()

    stop_path = run_dir / STOP_FILE
    stop_path.unlink(missing_ok=True)  # a stop asked of an earlier run does not stop this one
    callbacks = CallbackList(
        [Curriculum(), SaveWeights(str(run_dir / "checkpoint_{step}.npz"), cfg.checkpoint_freq), evaluator, StopFile()]
    )

    t0 = time.perf_counter()
    priors = None
    if cfg.env.selector and not cfg.resume_from and parent is None:  # a trained selector has learned its own
        priors = _selector_prior(model, final_env, cfg)
        write_weights(state_arrays(model.policy), run_dir / "prior_policy.npz")
        if cfg.selector_prior > 0:  # the prior policy picks the best one alone: the first kept candidate
            evaluator.best_mean_reward = priors["validation_mean_return"][priors["best"]]
            write_weights(state_arrays(model.policy), best_path)
    cloned = None
    if cfg.clone is not None:
        cloned = clone(model.policy, final_env, cfg.clone, cfg.gamma, cfg.seed)
        write_weights(state_arrays(model.policy), run_dir / "cloned_policy.npz")
    start = None  # (what PPO starts from, its validation return) when that is a trained policy
    if cloned is not None or parent is not None or cfg.resume_from:
        from sb3_contrib.common.maskable.evaluation import evaluate_policy

        # The policy PPO starts from is the first candidate: PPO's evaluations are kept only if they beat it, so
        # a cloned, continued or resumed run never ships a policy worse on validation than where it started.
        returns, _ = evaluate_policy(
            model, eval_env, n_eval_episodes=cfg.eval_episodes, deterministic=True, return_episode_rewards=True
        )
        what = (
            "the cloned policy"
            if cloned is not None
            else f"the policy it started from ({cfg.init_from or cfg.resume_from})"
        )
        start = (what, float(sum(returns) / len(returns)))
        evaluator.best_mean_reward = start[1]
        write_weights(state_arrays(model.policy), best_path)
        if cloned is not None:
            cloned["eval_mean_return"] = start[1]
    model.learn(
        total_timesteps=max(cfg.total_timesteps - resumed_steps, 1),
        callback=callbacks,
        progress_bar=cfg.progress_bar,
        tb_log_name="ppo",
    )
    wall_s = time.perf_counter() - t0
    final_path = run_dir / "final_policy.npz"
    write_weights(state_arrays(model.policy), final_path)

    chosen = best_path if best_path.exists() else final_path
    steps = int(model.num_timesteps) + resumed_steps
    prior_steps = int(parent["training"]["timesteps"]) if parent else 0
    prior_wall_s = float(parent["training"]["wall_time_s"]) if parent else 0.0
    card = {
        "name": cfg.name,
        "description": cfg.description,
        "format": WEIGHTS_FORMAT,
        "weights": f"{cfg.name}.npz",
        "policy": cfg.policy.to_dict(),
        "encoding": cfg.deployed_encoding().to_dict(),
        "reward": cfg.env.to_dict()["reward"],
        "training": {
            "config": cfg.to_dict(),
            "timesteps": prior_steps + steps,
            "wall_time_s": round(prior_wall_s + wall_s, 1),
            "kept": _kept(chosen == best_path, start, evaluator.best_mean_reward, priors),
            "best_eval_mean_return": float(evaluator.best_mean_reward) if best_path.exists() else None,
            "libraries": library_versions(),
            "machine": f"{platform.machine()} CPU, torch threads {cfg.torch_threads}",
            "cores": os.cpu_count(),
            "validation_curve": [
                [int(t) + resumed_steps, float(np.mean(r))]
                for t, r in zip(evaluator.evaluations_timesteps, evaluator.evaluations_results)
            ],
        },
    }
    if cfg.env.selector:
        card["selector"] = list(cfg.env.selector)
        card["selector_vote"] = cfg.selector_vote
        if cfg.selector_margin:
            card["selector_margin"] = cfg.selector_margin
        if not cfg.env.selector_last:
            card["selector_last"] = False
    if priors is not None:
        card["training"]["selector_prior"] = priors
    if stop_path.exists():
        card["training"]["stopped_at"] = steps  # asked to stop (STOP_FILE) before total_timesteps
    if cloned:
        card["training"]["clone"] = cloned
    if parent:
        card["training"]["this_run"] = {"timesteps": steps, "wall_time_s": round(wall_s, 1)}
        card["training"]["init_from"] = {
            "model": cfg.init_from,
            "sha256": parent["sha256"],
            "training": parent["training"],
        }
        if parent["encoding"]["rules"] != list(cfg.deployed_encoding().rules):
            card["training"]["init_from"]["rules"] = parent["encoding"]["rules"]  # widened: _widened
    if export:
        out = Path(models_dir or MODELS_DIR)
        out.mkdir(parents=True, exist_ok=True)
        card = export_model(out, cfg.name, chosen.read_bytes(), card)
    venv.close()
    eval_env.close()
    return card


def _selector_prior(model, env: EnvConfig, cfg: TrainConfig) -> dict[str, Any]:
    """Run each of the selector's policies alone on the validation episodes; raise the action bias of the best
    (highest mean return) by ``cfg.selector_prior``. Returns each policy's mean validation return and the best."""
    import torch

    sel = SelectorEnv(env)
    returns: dict[str, float] = {}
    for k, name in enumerate(env.selector):
        total = 0.0
        for e in range(cfg.eval_episodes):
            ws = VALIDATION_SEED_BASE + e
            sel.reset(seed=ws, options={"workload_seed": ws})
            done = False
            while not done:
                _, r, done, _, _ = sel.step(k)
                total += r
        returns[name] = total / cfg.eval_episodes
    best = max(returns, key=returns.__getitem__)
    with torch.no_grad():
        model.policy.action_net.bias[env.selector.index(best)] += float(cfg.selector_prior)
    return {"validation_mean_return": returns, "best": best, "bias": cfg.selector_prior}


def _kept(best: bool, start: tuple[str, float] | None, best_return: float, priors: dict[str, Any] | None = None) -> str:
    if not best:
        return "final"
    if start is not None and best_return == start[1]:
        return f"{start[0]} (no PPO evaluation beat its validation return)"
    if priors is not None and priors["bias"] > 0 and best_return == priors["validation_mean_return"][priors["best"]]:
        return f"the prior policy, always {priors['best']} (no PPO evaluation beat its validation return)"
    return "best evaluation"


def _parent(cfg: TrainConfig, models_dir: Path | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Card and SHA-256-checked plain weights of model ``cfg.init_from`` in ``models_dir`` (where this run
    exports: a stopped run resumes from there), else in ``models/``; same network required."""
    home = Path(models_dir) if models_dir and (Path(models_dir) / f"{cfg.init_from}.json").is_file() else MODELS_DIR
    card = read_card(cfg.init_from, home)
    # A card holds the encoding its agent is deployed with (a shield such as whole_node included).
    enc = cfg.deployed_encoding()
    _, parent_enc, shapes = model_spec(cfg.init_from, card)
    widens = _widens(parent_enc, enc)
    mine = enc.to_dict() | ({"rules": list(parent_enc.rules)} if widens else {})
    for key, want in (("policy", cfg.policy.to_dict()), ("encoding", mine)):
        if card[key] != want:
            raise ModelError(
                f"train config {cfg.name}: init_from model {cfg.init_from!r} has {key} "
                f"{json.dumps(card[key])}, this config {json.dumps(want)}; they must be equal"
                + (" (the config's encoding may add packing rules)" if key == "encoding" else "")
            )
    if "training" not in card:
        raise ModelError(f"model card {cfg.init_from}: missing key 'training' (needed to count its steps)")
    weights = load_model_weights(cfg.init_from, card, home, shapes)
    return card, _widened(weights, parent_enc, enc, cfg.policy) if widens else weights


def _widens(parent: EncodingConfig, enc: EncodingConfig) -> bool:
    """Whether ``enc`` offers every rule of ``parent`` and packing rules more (the observation stays the same but
    for the mask: only ``"evict"`` adds inputs, so it is never one of the added rules)."""
    added = set(enc.rules) - set(parent.rules)
    return set(parent.rules) < set(enc.rules) and EVICT not in added and parent.rules != (EVICT,)


#: How much less likely (in logits) an added rule starts than the parent's first packing rule it copies: a lower
#: logit never wins the argmax, so the widened policy decides as its parent did, while sampling still tries it
#: almost as often. Measured (issue 38): with a gap of 1.0, the previous wait-mlp and fair-comm continued for 1M PPO
#: steps still never chose fgd (wait-mlp: 2 of 4,710 starts on hetero-1500 seeds 0-2); with 0.1 wait-mlp learned to
#: place by fgd and topo-pack (4,190 of 4,702 starts there).
NEW_RULE_LOGIT_GAP = 0.1


def _widened(
    weights: Mapping[str, np.ndarray], parent: EncodingConfig, enc: EncodingConfig, spec: PolicySpec
) -> dict[str, np.ndarray]:
    """The parent's weights for ``enc``, which adds packing rules (:func:`_widens`): every action the parent had keeps
    its row of the action head and, for an MLP, its column of the mask input; an added rule's action copies the row
    of the parent's first packing rule at the same job and type slot, its bias lower by ``NEW_RULE_LOGIT_GAP``, and
    reads nothing from its mask input. Deterministic decisions stay the parent's."""
    stand_in = next(i for i, r in enumerate(parent.rules) if r != EVICT)
    src = np.full(enc.n_actions, parent.wait_action)
    added = np.zeros(enc.n_actions, dtype=bool)
    for a in range(enc.wait_action):
        slot, t, r = enc.unpack(a)
        added[a] = enc.rules[r] not in parent.rules
        src[a] = parent.action(slot, t, stand_in if added[a] else parent.rules.index(enc.rules[r]))
    out = dict(weights)
    bias = weights["action_net.bias"]
    out["action_net.weight"] = weights["action_net.weight"][src]
    out["action_net.bias"] = (bias[src] - NEW_RULE_LOGIT_GAP * added).astype(bias.dtype)
    if spec.kind == "mlp":  # the flattened observation starts with the mask (its keys in sorted order)
        for net in ("policy_net", "value_net"):
            w = weights[f"mlp_extractor.{net}.0.weight"]
            mask_in = np.where(added, 0.0, w[:, src]).astype(w.dtype)
            out[f"mlp_extractor.{net}.0.weight"] = np.concatenate([mask_in, w[:, parent.n_actions :]], axis=1)
    return out


def _stage_env(cfg: TrainConfig) -> EnvConfig:
    """The episode distribution of the last curriculum stage (what evaluation during training uses)."""
    env = cfg.env
    for s in cfg.curriculum:
        env = replace(
            env,
            **{k: v for k, v in (("clusters", s.clusters), ("loads", s.loads), ("n_jobs", s.n_jobs)) if v is not None},
        )
    return env
