"""The ``cards`` subcommand of ``python -m engine`` (registered in :mod:`engine.cli`): evaluate trained models
against every hand-written policy and write the results into their cards (:mod:`engine.rl.cards`).

    python -m engine cards wait-mlp --seeds 30 --general-seeds 30 --workers 2 --cache runs/cards
    python -m engine cards my-model --train v100-32,mixed-32 --only v100-32
    python -m engine cards wait-mlp fair-comm --add-baselines --workers 2   # a newly registered scheduler, a selector's picks
"""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.cli.common import int_in
from engine.errors import EngineError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="+", help="model names in models/")
    parser.add_argument(
        "--seeds", type=int_in(1, 10_000), default=30, metavar="K", help="workload seeds on the training scenarios"
    )
    parser.add_argument(
        "--general-seeds",
        type=int_in(1, 10_000),
        default=30,
        metavar="K",
        help="seeds on the larger cluster, the Philly window, the held-out heterogeneous workloads and the teaching presets",
    )
    parser.add_argument(
        "--workers", type=int_in(1, 1_024), default=1, metavar="N", help="processes running (scenario, setting) tasks"
    )
    parser.add_argument(
        "--cache", type=Path, metavar="DIR", help="folder keeping each finished (scenario, setting) task, to resume"
    )
    parser.add_argument(
        "--cached-only",
        action="store_true",
        help="write the cards from the tasks in --cache only (the others: not run)",
    )
    parser.add_argument("--rerender", action="store_true", help="only recompute the summary and Markdown from the card")
    parser.add_argument(
        "--add-baselines",
        action="store_true",
        help="run only the registered schedulers missing from each stored table and add them, the winners within the agents' own actions, and a selector's picks where it loses, where a card needs them (stored numbers kept)",
    )
    parser.add_argument(
        "--only", metavar="A,B", help="comma-separated scenarios to (re)run; the card's other tables are kept"
    )
    parser.add_argument(
        "--train", metavar="A,B", help="comma-separated training scenarios, for a model without a plan in PLANS"
    )
    parser.add_argument(
        "--larger", default="v100-128", metavar="SCENARIO", help="with --train: a cluster twice as large as in training"
    )
    parser.add_argument(
        "--philly", default="philly-64", metavar="SCENARIO", help="with --train: a Philly-trace scenario"
    )
    parser.add_argument(
        "--baselines-from",
        metavar="MODEL",
        help="take the hand-written policies' numbers from MODEL's card where it evaluated the same workloads "
        "with the same reward weights (only the agents run; each table says so)",
    )


def run(args: argparse.Namespace) -> int:
    from engine.rl.cards import add_baselines, plan_of, rerender, write_cards

    if args.add_baselines:
        mixed = [f for f, v in (("--only", args.only), ("--train", args.train), ("--rerender", args.rerender)) if v]
        if mixed:
            raise EngineError(f"--add-baselines adds runs to every stored table; leave out {', '.join(mixed)}")
        for name, card in add_baselines(args.names, args.workers).items():
            print(name, card["verdict"])
        return 0
    if args.rerender:
        for name in args.names:
            rerender(name)
        return 0
    train = [s.strip() for s in (args.train or "").split(",") if s.strip()]
    plans = {n: plan_of(n, train, args.larger, args.philly) for n in args.names}
    only = None if args.only is None else frozenset(filter(None, (s.strip() for s in args.only.split(","))))
    if args.cache is not None:
        args.cache.mkdir(parents=True, exist_ok=True)
    for name, card in write_cards(
        plans, args.seeds, args.general_seeds, args.workers, args.cache, args.cached_only, only, args.baselines_from
    ).items():
        print(name, card["verdict"])
    return 0
