"""What a learned selector could gain at most by keeping one of its policies for a whole run, on seeds no card uses.

    python scripts/hindsight.py select-wait --scenario hetero-1500 --seeds 100 --preemption costly

Runs each policy the selector picks from (its card's ``selector``) and the selector itself on seeds
``TRAIN_SEED_MIN + 500,000 + k`` of a named scenario or teaching preset (training-range seeds, so the cards' test
seeds stay unseen), scores each run with the card's objective, and prints each one's mean, then two paired
differences against the pool's best single policy (lowest mean): the best policy of each run picked in hindsight
(the lowest objective on that seed, which no scheduler can know in advance) and the selector. Where even the
hindsight pick is not significantly better, keeping one policy a run cannot be relied on to beat the best policy
there. The cards state the same measurement on their own test runs (``hindsight_vs_best`` in
``engine/rl/cards.py``).

``--policies`` replaces the card's pool (same objective), and ``--lookahead-period S`` also runs the pool's
lookahead selector (:class:`engine.rl.lookahead.LookaheadSelector`, re-choosing every S simulated seconds by rollouts
on estimates; the first policy decides where the rollouts tie), which switches within a run, as no hindsight pick
does. ``--first-seed K`` starts at ``k = K``, so the seeds that chose a setting stay apart from those that measure it:

    python scripts/hindsight.py select-wait --seeds 100 --first-seed 100 --lookahead-period 600 --policies \
        short-spare-evict-est-cap,short-whole,short-whole-evict,short-fast-evict-est,short-spare-evict,short-fast,sjf,tiresias,fgd,topo-pack,optimus
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.analysis.evaluate import parse_scenario, run_scheduler  # noqa: E402
from engine.analysis.workload import TRAIN_SEED_MIN  # noqa: E402
from engine.errors import EngineError  # noqa: E402
from engine.rl.agent import read_card  # noqa: E402
from engine.rl.cards import PREEMPTION, ci_percent, hindsight_vs_best, paired_difference, percent_change  # noqa: E402
from engine.rl.lookahead import LookaheadSelector  # noqa: E402
from engine.rl.reward import RewardWeights, objective  # noqa: E402
from engine.rl.selector import check_policies  # noqa: E402
from engine.schedulers.registry import SCHEDULERS  # noqa: E402
from engine.sim.options import RunOptions  # noqa: E402
from engine.sim.simulator import simulate  # noqa: E402

#: This script's seeds start here, inside the training range and far from where any run has begun drawing.
SEED_OFFSET = 500_000
#: At most this many seeds: a measurement, not a campaign.
MAX_SEEDS = 1000


def runs(
    model: str,
    scenario: str,
    seeds: int,
    preemption: str,
    policies: str = "",
    lookahead_s: float | None = None,
    first: int = 0,
) -> dict[str, list[float]]:
    """The objective of every policy of ``model``'s pool (or of ``policies``, comma-separated), of ``rl:model``
    and, with ``lookahead_s``, of the pool's lookahead selector, on each seed from ``first`` on, in seed order."""
    card = read_card(model)
    pool = check_policies(policies.split(","), "--policies") if policies else card.get("selector")
    if not pool:
        raise EngineError(f"model {model!r} is not a selector: it picks no policies")
    weights = RewardWeights.from_dict(card["reward"])
    options = RunOptions(preemption=PREEMPTION[preemption])
    names = [*pool, f"rl:{model}"]
    out: dict[str, list[float]] = {n: [] for n in names}
    ahead = None if lookahead_s is None else LookaheadSelector(pool, weights, lookahead_s)
    if ahead is not None:
        out[ahead.name] = []
    base = parse_scenario(scenario)
    for k in range(first, first + seeds):
        sc = base.with_seed(TRAIN_SEED_MIN + SEED_OFFSET + k)
        cluster = sc.build_cluster()
        jobs = sc.build_jobs(cluster)
        for n in names:
            out[n].append(objective(run_scheduler(n, cluster, jobs, sc.seed, options), weights))
        if ahead is not None:
            out[ahead.name].append(objective(simulate(cluster, jobs, ahead, seed=sc.seed, options=options), weights))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a shipped selector's name (models/NAME.json)")
    p.add_argument("--scenario", default="hetero-1500", help="a named scenario or teaching preset")
    p.add_argument("--seeds", type=int, default=30)
    p.add_argument("--preemption", choices=sorted(PREEMPTION), default="costly")
    p.add_argument("--policies", default="", help="comma-separated pool instead of the card's (same objective)")
    p.add_argument("--lookahead-period", type=float, metavar="S", help="also run the pool's lookahead selector")
    p.add_argument("--first-seed", type=int, default=0, metavar="K", help="start at this script's seed K")
    args = p.parse_args(argv)
    if not 2 <= args.seeds <= MAX_SEEDS:
        p.error(f"--seeds must be 2-{MAX_SEEDS}")
    if not 0 <= args.first_seed <= MAX_SEEDS:
        p.error(f"--first-seed must be 0-{MAX_SEEDS}")
    try:
        objectives = runs(
            args.model,
            args.scenario,
            args.seeds,
            args.preemption,
            args.policies,
            args.lookahead_period,
            args.first_seed,
        )
    except EngineError as exc:
        sys.exit(f"hindsight: {exc}")
    pool = [n for n in objectives if n in SCHEDULERS]
    deciders = [n for n in objectives if n not in pool]  # the agent and the lookahead selector
    best = min(pool, key=lambda n: sum(objectives[n]))
    for n, values in objectives.items():
        print(f"{n:28s} objective {sum(values) / len(values):.4f}")
    table = {"best_baseline": best, "objective_runs": objectives}
    for label, d in (
        ("hindsight pick", hindsight_vs_best(pool, table)),
        *((n, paired_difference(objectives[n], objectives[best])) for n in deciders),
    ):
        pct = f"{percent_change(d, tenths=True)} +- {ci_percent(d, table)}"
        print(f"{label} minus {best}: {d['diff']:+.4f} +- {d['ci95']:.4f} ({pct}): {d['verdict']}")


if __name__ == "__main__":
    main()
