"""Print the README's table of trained agents, generated from their cards (``models/*.json``).

    python scripts/agent_table.py           # prints the table
    python scripts/agent_table.py --write   # replaces the table between the README's agents markers

Each row says what the card says: the objective (its reward weights), what the agent was trained on, and where
it is significantly better or worse than the best hand-written policy of each evaluated setting (paired
differences, 95 % confidence intervals). ``tests/test_docs.py`` checks that the README holds exactly this table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.rl.cards import percent_change  # noqa: E402
from engine.rl.env import env_options_from_dict  # noqa: E402

README = REPO / "README.md"
BEGIN, END = "<!-- agents:begin -->", "<!-- agents:end -->"

#: Reward terms in the words the README uses (a weight other than 1 is written before its term).
TERMS = {
    "wait": "mean wait",
    "jct": "mean JCT",
    "bounded_slowdown": "bounded slowdown",
    "utilization_band": "utilization band",
    "fairness": "Gini of user waits",
    "comm": "communication",
}
POLICIES = {"mlp": "MLP", "attention": "attention over the queue"}
HEADER = (
    "| agent | policy | objective | trained on | better than the best hand-written policy (95 % CI) | worse "
    "| card |\n|---|---|---|---|---|---|---|"
)


def objective(reward: dict) -> str:
    """``{"wait": 1.0, "bounded_slowdown": 0.5}`` -> ``"wait + 0.5 bounded slowdown"``."""
    terms = [(TERMS[k], reward[k]) for k in TERMS if reward.get(k)]
    return " + ".join(name if w == 1 else f"{w:g} {name}" for name, w in terms)


def _span(values: list) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}"


def trained_on(env: dict, curriculum: list) -> str:
    """The clusters (with their GPU families), loads, job counts and preemption of the training episodes, and the
    teaching presets they drew (on training seeds)."""
    stages = [env, *curriculum]
    clusters = list(dict.fromkeys(c for s in stages for c in s.get("clusters") or ()))
    families = dict.fromkeys(part.split(":")[1].split("-")[0] for c in clusters for part in c.split(","))
    loads = [x for s in stages for x in s.get("loads") or ()]
    counts = [s.get("n_jobs") or [] for s in stages]  # a stage's count, or the list an episode draws from
    jobs = [n for c in counts for n in (c if isinstance(c, list) else [c])]
    costly = [
        "costly" if o.preemption.checkpoint_interval_s is not None or o.preemption.restart_overhead_s else "free"
        for o in env_options_from_dict(env)
    ]
    return (
        f"{len(clusters)} cluster{'s' * (len(clusters) > 1)} ({', '.join(families)}), load {_span(loads)}, "
        f"{_span(jobs)} jobs, {' or '.join(dict.fromkeys(costly))} preemption"
        + (f", and the {len(env['presets'])} teaching presets (other seeds)" if env.get("presets") else "")
    )


def where(card: dict, verdict: str) -> str:
    """The settings where the card's agent is ``verdict`` ("better"/"worse") than the best hand-written policy:
    ``"3 of 18: hpc-64 -5 to -17 % (vs `short-whole-evict`); ..."``, or ``"nowhere"``."""
    scenarios = card["evaluation"]["scenarios"]
    settings = [(sc, st, t) for sc, by in scenarios.items() for st, t in by.items() if "error" not in t]
    parts = []
    for sc, by in scenarios.items():
        hits = [(st, t) for st, t in by.items() if "error" not in t and t["vs_best"]["verdict"] == verdict]
        if not hits:
            continue
        baselines = dict.fromkeys(t["best_baseline"] for _, t in hits)
        if len(baselines) > 1:  # a different best policy per setting: each its own number
            parts.append(
                f"{sc} "
                + ", ".join(f"{st} {percent_change(t['vs_best'])} (vs `{t['best_baseline']}`)" for st, t in hits)
            )
            continue
        changes = sorted({percent_change(t["vs_best"]) for _, t in hits}, key=lambda c: abs(float(c.split()[0])))
        label = sc if len(hits) == len(by) else f"{sc} {'/'.join(st for st, _ in hits)}"
        if all(c.endswith(" %") for c in changes):  # "-5 to -17 %"
            changes = [c.removesuffix(" %") for c in changes[:-1]] + changes[-1:]
        parts.append(f"{label} {' to '.join(changes)} (vs `{next(iter(baselines))}`)")
    count = sum(t["vs_best"]["verdict"] == verdict for _, _, t in settings)
    return f"{count} of {len(settings)}: {'; '.join(parts)}" if parts else "nowhere"


def agent_table(models_dir: Path = REPO / "models") -> str:
    """The Markdown table of every card in ``models_dir``, one row per agent, sorted by name."""
    rows = [HEADER]
    for path in sorted(models_dir.glob("*.json")):
        card = json.loads(path.read_text())
        config = card["training"]["config"]
        name, md = card["name"], path.with_suffix(".md").relative_to(REPO).as_posix()
        policy = POLICIES.get(card["policy"]["kind"], card["policy"]["kind"])
        if card.get("selector"):  # engine/rl/selector.py: the action is which hand-written policy decides
            policy = f"{policy} selector over {len(card['selector'])} hand-written policies"
        rows.append(
            f"| `rl:{name}` | {policy} | {objective(card['reward'])} "
            f"| {trained_on(config['env'], config.get('curriculum') or [])} | {where(card, 'better')} "
            f"| {where(card, 'worse')} | [{md}]({md}) |"
        )
    return "\n".join(rows)


def readme_table(text: str) -> str:
    """The table between the README's agents markers."""
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise SystemExit(f"README.md needs exactly one {BEGIN} and one {END}")
    return text.split(BEGIN)[1].split(END)[0].strip("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the README's table with this one")
    args = parser.parse_args(argv)
    table = agent_table()
    if not args.write:
        print(table)
        return 0
    text = README.read_text()
    README.write_text(text.replace(readme_table(text), table, 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
