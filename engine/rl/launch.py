"""Training runs started from the app: a config for the page, a process of its own, live curves, stop, resume.

A run is ``python -m engine train --config runs/<name>/app_config.json --models-dir DIR --quiet`` in a new
process (the page stays responsive and a crash cannot take the server with it); the model is exported to
``DIR`` (the app passes :func:`engine.rl.agent.user_models_dir`, never the shipped ``models/``). *Stop* writes
``runs/<name>/STOP``: training ends at its next check and exports what it learned, so a stopped run is a usable
``rl:<name>`` agent. *Resume* trains the same name again from its exported weights (``init_from``) for the steps
still missing; the card then counts all steps. Each segment logs to its own TensorBoard folder
(``tb/ppo_1``, ``ppo_2``, ...); :func:`curves` puts them end to end on one step axis.

Imports neither torch nor gymnasium (the child process does).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

from engine.errors import EngineError
from engine.io import atomic_write_json
from engine.rl.train import STOP_FILE, TrainConfig, load_config

REPO = Path(__file__).resolve().parents[2]
_SEGMENTS = "segments.json"  # step offset of each segment, in order (0, steps before the first resume, ...)


def page_config(config: str, name: str, steps: int, seed: int, *, quick: bool, runs_dir: Path) -> TrainConfig:
    """Training config ``config`` (a name in ``engine/rl/configs/``) renamed ``name``, for ``steps`` steps with
    ``seed``, logging under ``runs_dir``.

    ``quick``: a run that shows curves within seconds: one environment of 30-job episodes from the config's
    first stage, short rollouts, no behaviour cloning and no curriculum; the network and the encoding stay the
    config's. Otherwise the config as it is (behaviour cloning first when it has a ``clone`` section).
    """
    cfg = load_config(config)
    steps = int(steps)
    cfg = replace(
        cfg,
        name=name,
        total_timesteps=steps,
        seed=int(seed),
        progress_bar=False,
        runs_dir=str(runs_dir),
        eval_freq=min(cfg.eval_freq, max(steps // 5, 1)),
        checkpoint_freq=max(cfg.checkpoint_freq, steps),
    )
    if quick:
        cfg = replace(
            cfg,
            env=replace(cfg.env, n_jobs=30),
            curriculum=(),
            clone=None,
            n_envs=1,
            n_steps=64,
            batch_size=64,
            n_epochs=2,
            eval_episodes=2,
            eval_freq=max(min(steps // 4, 2_048), 128),
        )
    return cfg


def run_dir(cfg: TrainConfig) -> Path:
    return Path(cfg.runs_dir) / cfg.name


def start(cfg: TrainConfig, models_dir: Path, *, offset_steps: int = 0) -> subprocess.Popen:
    """Start training ``cfg`` in a new process that exports to ``models_dir``; its output goes to
    ``runs/<name>/app.log``. ``offset_steps``: steps trained before this segment (a resume)."""
    where = run_dir(cfg)
    where.mkdir(parents=True, exist_ok=True)
    (where / STOP_FILE).unlink(missing_ok=True)
    if not offset_steps:  # a fresh run: an earlier run's logs of the same name are not its curves
        shutil.rmtree(where / "tb", ignore_errors=True)
    segments = _segments(where) if offset_steps else []
    atomic_write_json(where / _SEGMENTS, [*segments, int(offset_steps)], indent=None)
    path = where / "app_config.json"
    atomic_write_json(path, cfg.to_dict())
    with open(where / "app.log", "ab") as log:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "engine",
                "train",
                "--config",
                str(path),
                "--models-dir",
                str(models_dir),
                "--quiet",
            ],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def request_stop(cfg: TrainConfig) -> None:
    """Ask the run to stop at its next check and export what it has learned."""
    (run_dir(cfg) / STOP_FILE).touch()


def trained_steps(name: str, models_dir: Path) -> int:
    """Steps the exported model ``name`` in ``models_dir`` has trained in all (0 when none is exported)."""
    path = Path(models_dir) / f"{name}.json"
    if not path.is_file():
        return 0
    try:
        return int(json.loads(path.read_text())["training"]["timesteps"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def resume_config(cfg: TrainConfig, target_steps: int, models_dir: Path) -> tuple[TrainConfig, int]:
    """The config that continues the exported model ``cfg.name`` up to ``target_steps`` in all, and the steps it
    already has; ``EngineError`` when nothing is exported yet or the target is reached."""
    done = trained_steps(cfg.name, models_dir)
    if done == 0:
        raise EngineError(f"{cfg.name} has no exported model to resume from yet")
    if done >= target_steps:
        raise EngineError(f"{cfg.name} has trained {done:,} of {target_steps:,} steps already; nothing to resume")
    return replace(cfg, init_from=cfg.name, total_timesteps=target_steps - done), done


def curves(cfg: TrainConfig) -> pd.DataFrame:
    """The run's logged returns so far (``tag, step, value`` as :func:`engine.viz.training.training_curves`), every
    segment's steps shifted by the steps trained before it."""
    from engine.viz.training import training_curves

    where = run_dir(cfg)
    offsets = _segments(where)
    logs = sorted((where / "tb").glob("ppo_*"), key=lambda p: int(p.name.rpartition("_")[2] or 0))
    parts = []
    for i, log in enumerate(logs):
        part = training_curves(log)
        part["step"] += offsets[i] if i < len(offsets) else (offsets[-1] if offsets else 0)
        parts.append(part)
    if not parts:
        return training_curves(where / "tb")
    return pd.concat(parts, ignore_index=True).sort_values(["tag", "step"], ignore_index=True)


def _segments(where: Path) -> list[int]:
    try:
        return [int(x) for x in json.loads((where / _SEGMENTS).read_text())]
    except (OSError, ValueError, TypeError):
        return [0]
