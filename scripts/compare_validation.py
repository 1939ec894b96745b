"""Compare agents and hand-written policies on a training config's validation episodes, paired.

    python scripts/compare_validation.py select-wait --episodes 48 select-wait=models select-wait=runs/new sjf
    python scripts/compare_validation.py hpc-backfill --episodes 48 --start 12 hpc-backfill=models short-whole-evict

Episode ``k`` is the one the config's env draws with workload seed ``VALIDATION_SEED_BASE + start + k`` (cluster,
workload and run options; the seeds training keeps for choosing its checkpoint start at 0, so ``--start`` past
``eval_episodes`` gives episodes no choice has seen). Each entry is ``NAME=FOLDER`` (agent ``rl:NAME`` from that
folder's card and weights, hash-checked) or a registered policy's name. For each entry it prints the mean objective
(the config's reward weights; lower is better) and the paired difference against the first entry with the half-width
of its 95 % confidence interval: this is how a retrained agent is checked against the one it would replace.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine import make_scheduler, simulate  # noqa: E402
from engine.analysis.evaluate import mean_ci  # noqa: E402
from engine.errors import EngineError  # noqa: E402
from engine.rl.agent import load_agent  # noqa: E402
from engine.rl.env import GpuSchedulingEnv  # noqa: E402
from engine.rl.reward import objective  # noqa: E402
from engine.rl.train import VALIDATION_SEED_BASE, load_config  # noqa: E402

#: At most this many episodes: a validation comparison, not an evaluation campaign.
MAX_EPISODES = 1000


def scheduler_of(entry: str):
    """The scheduler an entry names: ``NAME=FOLDER`` an agent from that folder, else a registered policy."""
    if "=" in entry:
        name, folder = entry.split("=", 1)
        return load_agent(name, Path(folder))
    return make_scheduler(entry)


def compare(config: str, entries: list[str], episodes: int, start: int = 0) -> dict[str, list[float]]:
    """Each entry's objective on episodes ``start .. start + episodes - 1`` of ``config``'s validation draws."""
    cfg = load_config(config)
    env = GpuSchedulingEnv(cfg.env)  # draws the episodes only; the entries run them with ``simulate``
    schedulers = {e: scheduler_of(e) for e in entries}
    out: dict[str, list[float]] = {e: [] for e in entries}
    for k in range(start, start + episodes):
        seed = VALIDATION_SEED_BASE + k
        env.reset(seed=seed, options={"workload_seed": seed})
        sim = env.simulation
        for e, scheduler in schedulers.items():
            result = simulate(sim.cluster, sim.jobs, scheduler, options=sim.options)
            out[e].append(objective(result, cfg.env.reward))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("config", help="a shipped training config's name or a config file")
    p.add_argument("entries", nargs="+", help="NAME=FOLDER (an agent) or a registered policy; the first is the base")
    p.add_argument("--episodes", type=int, default=48)
    p.add_argument("--start", type=int, default=0, help="first validation episode (0 = the first training chose on)")
    args = p.parse_args(argv)
    if not 2 <= args.episodes <= MAX_EPISODES or not 0 <= args.start <= MAX_EPISODES:
        p.error(f"--episodes must be 2-{MAX_EPISODES} and --start 0-{MAX_EPISODES}")
    if len(set(args.entries)) < len(args.entries):  # one row per entry: a repeated one would hide in it
        p.error("each entry may be given once")
    try:
        runs = compare(args.config, args.entries, args.episodes, args.start)
    except EngineError as exc:
        sys.exit(f"compare_validation: {exc}")
    base = runs[args.entries[0]]
    for e, values in runs.items():
        diff, half = mean_ci([a - b for a, b in zip(values, base)])
        print(f"{e:40s} objective {mean_ci(values)[0]:.4f}   minus {args.entries[0]}: {diff:+.4f} +- {half:.4f}")


if __name__ == "__main__":
    main()
