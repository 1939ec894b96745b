"""The ``train`` subcommand of ``python -m engine`` (registered in :mod:`engine.cli`): train an agent with
MaskablePPO from a training config (:mod:`engine.rl.train`), export its weights and card.

    python -m engine train --config wait-mlp                     # a shipped config (engine/rl/configs/)
    python -m engine train --config my.json --timesteps 4096 --name my-agent --models-dir /tmp/models
    python -m engine train --config select-wait --resume checkpoint_65536.npz   # continue a stopped run
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.rl.agent import MODELS_DIR
from engine.rl.train import config_names, load_config, train


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        required=True,
        metavar="FILE|NAME",
        help=f"a JSON training config or a shipped config's name: {', '.join(config_names())}",
    )
    parser.add_argument("--timesteps", type=int, metavar="N", help="override total_timesteps")
    parser.add_argument("--name", help="override the model name")
    parser.add_argument(
        "--models-dir",
        default=str(MODELS_DIR),
        metavar="DIR",
        help="where to write <name>.npz and <name>.json (default: models/)",
    )
    parser.add_argument(
        "--resume",
        metavar="CHECKPOINT",
        help="start from this run's checkpoint_<step>.npz in runs/<name>/ (its steps count; optimiser state is new)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    over: dict[str, Any] = {}
    if args.timesteps is not None:
        over["total_timesteps"] = args.timesteps
    if args.name:
        over["name"] = args.name
    if args.quiet:
        over["progress_bar"] = False
    if args.resume:
        over["resume_from"] = args.resume
    cfg = replace(cfg, **over)
    card = train(cfg, models_dir=Path(args.models_dir))
    print(
        f"trained {card['name']}: {card['training']['timesteps']} steps in {card['training']['wall_time_s']} s; "
        f"weights {Path(args.models_dir) / card['weights']} (sha256 {card['sha256'][:12]}...)"
    )
    return 0
