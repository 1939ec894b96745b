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
from engine.rl.reward import RewardWeights, objective  # noqa: E402
from engine.sim.options import RunOptions  # noqa: E402

#: This script's seeds start here, inside the training range and far from where any run has begun drawing.
SEED_OFFSET = 500_000
#: At most this many seeds: a measurement, not a campaign.
MAX_SEEDS = 1000


def runs(model: str, scenario: str, seeds: int, preemption: str) -> dict[str, list[float]]:
    """The objective of every policy of ``model``'s pool and of ``rl:model`` on each seed, in seed order."""
    card = read_card(model)
    pool = card.get("selector")
    if not pool:
        raise EngineError(f"model {model!r} is not a selector: it picks no policies")
    weights = RewardWeights.from_dict(card["reward"])
    options = RunOptions(preemption=PREEMPTION[preemption])
    names = [*pool, f"rl:{model}"]
    out: dict[str, list[float]] = {n: [] for n in names}
    base = parse_scenario(scenario)
    for k in range(seeds):
        sc = base.with_seed(TRAIN_SEED_MIN + SEED_OFFSET + k)
        cluster = sc.build_cluster()
        jobs = sc.build_jobs(cluster)
        for n in names:
            out[n].append(objective(run_scheduler(n, cluster, jobs, sc.seed, options), weights))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a shipped selector's name (models/NAME.json)")
    p.add_argument("--scenario", default="hetero-1500", help="a named scenario or teaching preset")
    p.add_argument("--seeds", type=int, default=30)
    p.add_argument("--preemption", choices=sorted(PREEMPTION), default="costly")
    args = p.parse_args(argv)
    if not 2 <= args.seeds <= MAX_SEEDS:
        p.error(f"--seeds must be 2-{MAX_SEEDS}")
    try:
        objectives = runs(args.model, args.scenario, args.seeds, args.preemption)
    except EngineError as exc:
        sys.exit(f"hindsight: {exc}")
    agent = f"rl:{args.model}"
    pool = [n for n in objectives if n != agent]
    best = min(pool, key=lambda n: sum(objectives[n]))
    for n, values in objectives.items():
        print(f"{n:28s} objective {sum(values) / len(values):.4f}")
    table = {"best_baseline": best, "objective_runs": objectives}
    for label, d in (
        ("hindsight pick", hindsight_vs_best(pool, table)),
        (agent, paired_difference(objectives[agent], objectives[best])),
    ):
        pct = f"{percent_change(d, tenths=True)} +- {ci_percent(d, table)}"
        print(f"{label} minus {best}: {d['diff']:+.4f} +- {d['ci95']:.4f} ({pct}): {d['verdict']}")


if __name__ == "__main__":
    main()
