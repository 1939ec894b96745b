"""Model cards: evaluate a trained model against every heuristic and write the results into its card.

``python -m engine.rl.cards NAME [NAME ...] [--seeds 10]`` runs, for each model, ``rl:NAME`` and every
registered non-oracle heuristic on the model's evaluation scenarios (:data:`PLANS`, or ``--train``/``--larger``/
``--philly``), workload seeds ``0..n-1`` (training never uses seeds below 2**20), and writes:

* ``models/NAME.json`` key ``evaluation``: per scenario and scheduler the mean and 95 % CI of mean wait, mean
  JCT, bounded slowdown, Gini of user waits, communication overhead and the model's own objective; and the
  issue's targets, each with its numbers and whether it was met;
* ``models/NAME.md``: the same as a readable card.

The weights are not touched, so the card's SHA-256 stays valid.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import replace
from typing import Any, Sequence

from engine.analysis.evaluate import Evaluation, evaluate, parse_scenario
from engine.rl.agent import MODELS_DIR, read_card
from engine.rl.encoding import EVICT
from engine.rl.reward import RewardWeights, objective_terms, weighted
from engine.schedulers import SCHEDULERS

#: Evaluation scenarios of the shipped models: those of their training distribution, one on a cluster at
#: least twice as large as any in training, and a window of the real Philly trace.
PLANS: dict[str, dict[str, Any]] = {
    "wait-mlp": {"train": ["v100-32", "mixed-32", "v100-64"], "larger": "v100-128", "philly": "philly-64",
                 "compare": "wait-attn"},
    "wait-attn": {"train": ["v100-32", "mixed-32", "v100-64"], "larger": "v100-128", "philly": "philly-64",
                  "compare": "wait-mlp"},
    "fair-comm": {"train": ["mixed-32", "v100-32", "v100-64"], "larger": "mixed-128", "philly": "philly-64"},
    "hpc-backfill": {"train": ["hpc-64", "hpc-32"], "larger": "hpc-128", "philly": "philly-64"},
}

SHOWN = ("mean_wait_s", "mean_jct_s", "mean_bounded_slowdown", "gini_user_wait", "comm_overhead_gpu_h", "preemptions",
         "objective")
TERMS = ("wait", "jct", "bounded_slowdown", "utilization_band", "fairness", "comm")


def heuristics() -> list[str]:
    """Every registered scheduler that does not read true durations."""
    return [n for n, s in SCHEDULERS.items() if not s.oracle]


def _term_metrics() -> dict[str, Any]:
    return {f"term_{k}": (lambda r, k=k: objective_terms(r)[k]) for k in TERMS}


def _objective(row: dict[str, Any], w: RewardWeights) -> float:
    return weighted({k: row[f"term_{k}"] for k in TERMS}, w)


_HEURISTIC_RUNS: dict[tuple[str, int], Evaluation] = {}


def evaluate_model(name: str, scenario: str, seeds: int) -> Evaluation:
    """``rl:name`` (from ``models/``) and every heuristic on ``scenario``; runs carry the model's ``objective``."""
    card = read_card(name)
    weights = RewardWeights.from_dict(card["reward"])
    key = (scenario, seeds)
    if key not in _HEURISTIC_RUNS:
        _HEURISTIC_RUNS[key] = evaluate(heuristics(), scenario, seeds, baseline="first-fit", extra=_term_metrics())
    base = _HEURISTIC_RUNS[key]
    agent = evaluate([f"rl:{name}"], scenario, seeds, extra=_term_metrics())
    runs = {f"rl:{name}": agent.runs[f"rl:{name}"], **base.runs}
    runs = {s: [{**row, "objective": _objective(row, weights)} for row in rows] for s, rows in runs.items()}
    return Evaluation(base.scenario, base.seeds, runs, "first-fit")


def _cut(agent: float, other: float) -> float:
    return 1.0 - agent / other if other > 0 else math.nan


def card_evaluation(name: str, plan: dict[str, Any], seeds: int) -> dict[str, Any]:
    """The ``evaluation`` section of a card (tables and targets)."""
    me = f"rl:{name}"
    tables: dict[str, Any] = {}
    for sc in [*plan["train"], plan["larger"], plan["philly"]]:
        try:
            ev = evaluate_model(name, sc, seeds)
        except Exception as exc:  # e.g. the Philly trace is absent on this machine: say so in the card
            tables[sc] = {"error": str(exc)}
            continue
        stats = ev.stats()
        vs_agent = replace(ev, baseline=me).paired()["objective"]
        tables[sc] = {
            "scenario": ev.scenario.to_dict(),
            "mean_ci95": {s: {m: [_clean(stats[m][s][0]), _clean(stats[m][s][1])] for m in SHOWN} for s in ev.schedulers},
            "paired_vs_first_fit": {m: {s: [_clean(v) for v in ev.paired()[m][s]] for s in (me,)} for m in SHOWN},
            # heuristic minus agent, same workloads: > 0 where the agent's objective is lower
            "objective_paired_vs_agent": {s: [_clean(v) for v in vs_agent[s][:2]] for s in vs_agent},
        }
    return {"seeds": f"0..{seeds - 1} (training workloads use seeds >= 2**20; validation 900000+)",
            "baseline": "first-fit", "plan": plan, "scenarios": tables, "targets": targets(me, plan, tables)}


def targets(me: str, plan: dict[str, Any], tables: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets, each with its numbers and whether it was met, from the evaluation tables."""
    def mean(sc: str, s: str, m: str) -> float:
        v = tables[sc]["mean_ci95"][s][m][0]
        return math.nan if v is None else v

    out: dict[str, Any] = {}
    train = [sc for sc in plan["train"] if "error" not in tables[sc]]
    for other in ("first-fit", "least-loaded"):
        cuts = {sc: _cut(mean(sc, me, "mean_wait_s"), mean(sc, other, "mean_wait_s")) for sc in train}
        out[f"wait_cut_vs_{other}"] = {
            "target": ">= 30 % lower mean wait on every training scenario",
            "cut": {sc: _clean(round(c, 4)) for sc, c in cuts.items()},
            "met": bool(cuts) and all(c >= 0.30 for c in cuts.values()),
        }
    preemptive = {f"{n}" for n, spec in SCHEDULERS.items() if spec.preemptive}
    for key, label, keep in (
            ("beats_best_heuristic_on_objective", "the best heuristic", lambda s: True),
            ("beats_best_non_preemptive_heuristic_on_objective",
             "the best heuristic that never preempts", lambda s: s not in preemptive)):
        best: dict[str, Any] = {}
        for sc in train:
            heur = {s: mean(sc, s, "objective") for s in tables[sc]["mean_ci95"] if s != me and keep(s)}
            b = min(heur, key=heur.get)
            best[sc] = {"best_heuristic": b, "heuristic_objective": _clean(heur[b]),
                        "agent_objective": _clean(mean(sc, me, "objective")),
                        "improvement": _clean(round(_cut(mean(sc, me, "objective"), heur[b]), 4))}
            paired = tables[sc].get("objective_paired_vs_agent", {}).get(b)
            if paired is not None and None not in paired:  # cards written before it existed have no paired runs
                best[sc]["paired_diff_ci95"] = [round(paired[0], 4), round(paired[1], 4)]
                best[sc]["significant_at_95"] = abs(paired[0]) > paired[1]
        out[key] = {
            "target": f"lower objective than {label} on each training scenario (aim: 10 % lower)",
            "per_scenario": best,
            "met": bool(best) and all((v["improvement"] or -1) > 0 for v in best.values()),
            "met_10_percent": bool(best) and all((v["improvement"] or -1) >= 0.10 for v in best.values()),
        }
    for label in ("larger", "philly"):
        sc = plan[label]
        if "error" not in tables[sc]:
            a, f = mean(sc, me, "mean_wait_s"), mean(sc, "first-fit", "mean_wait_s")
            out[f"beats_first_fit_on_{label}"] = {"scenario": sc, "agent_mean_wait_s": _clean(a),
                                                  "first_fit_mean_wait_s": _clean(f), "met": a < f}
        else:
            out[f"beats_first_fit_on_{label}"] = {"scenario": sc, "met": None, "note": tables[sc]["error"]}
    return out


def _clean(v: float) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def _fmt(v: float | None, m: str) -> str:
    if v is None:
        return "-"
    if m.endswith("_s"):
        return f"{v:,.0f}"
    if m == "preemptions":
        return f"{v:,.1f}"
    return f"{v:.3f}"


def _provenance(card: dict[str, Any]) -> list[str]:
    """How the weights came to be: one fresh run, or a run continued from another model's weights."""
    tr = card["training"]
    parent = tr.get("init_from")
    lines = []
    if tr.get("clone"):
        c, last = tr["clone"], tr["clone"]["rounds"][-1]
        lines.append(
            f"- warm start: behaviour cloning of the teacher `{c['config']['teacher']}` (placing with "
            f"`{c['config']['rule']}`, `engine/rl/teacher.py`) over {len(c['rounds'])} rounds "
            f"({c['config']['episodes']} episodes each, DAgger after the first), {c['samples']:,} labelled "
            f"decisions, {c['wall_time_s']:,.0f} s (counted in the wall time); accuracy on those decisions "
            f"{last['accuracy']:.1%}; validation return of the cloned policy {c['eval_mean_return']:.4f}, "
            "then MaskablePPO fine-tuning")
    if not parent:
        return [*lines, "- the exact config is `training.config` in the JSON card; retrain with "
                f"`python -m engine train --config {card['name']}`"]
    run, ptr = tr["this_run"], parent["training"]
    return [*lines,
            f"- continued training: this run {run['timesteps']:,} steps in {run['wall_time_s']:,.0f} s, started from "
            f"the weights of `rl:{parent['model']}` (SHA-256 `{parent['sha256'][:16]}...`), which had trained "
            f"{ptr['timesteps']:,} steps in {ptr['wall_time_s']:,.0f} s; the totals above count both",
            "- the exact configs are `training.config` (this run; `init_from` names the parent) and "
            "`training.init_from.training.config` (the parent's) in the JSON card; reproduce by training the "
            "parent's config, then this one"]


def render_markdown(card: dict[str, Any]) -> str:
    """The human-readable card."""
    tr, ev = card["training"], card.get("evaluation", {})
    w = card["reward"]
    terms = " + ".join(f"{w[k]:g} x {k}" for k in TERMS if w.get(k))
    lines = [
        f"# `rl:{card['name']}`", "", card.get("description", ""), "",
        "## What it optimises", "",
        f"Objective (lower is better; the training return is its negative): {terms}, with wait in units of "
        f"{w['wait_scale_s']:g} s (definitions: `engine/rl/reward.py`).", "",
        "## Network and inputs", "",
        f"- policy: `{card['policy']['kind']}` ({json.dumps(card['policy'])})",
        f"- encoding: {json.dumps(card['encoding'])} (see `engine/rl/encoding.py`)",
        f"- weights: `{card['weights']}`, SHA-256 `{card['sha256']}` (checked before loading; plain tensors, "
        "loaded with `torch.load(weights_only=True)`)", "",
        "## Training", "",
        f"- {tr['timesteps']:,} environment steps in {tr['wall_time_s']:,.0f} s wall time on {tr['machine']}; "
        f"kept: {tr['kept']}",
        f"- libraries: {', '.join(f'{k} {v}' for k, v in tr['libraries'].items())}",
        f"- episodes: clusters {tr['config']['env']['clusters']}, loads {tr['config']['env']['loads']}, "
        f"{tr['config']['env']['n_jobs']} jobs; curriculum {json.dumps(tr['config']['curriculum'])}",
        *_provenance(card), "",
    ]
    if ev:
        preemptive = ", ".join(sorted(n for n, sp in SCHEDULERS.items() if sp.preemptive)) or "none"
        evicts = EVICT in card["encoding"].get("rules", ())
        lines += ["## Evaluation", "",
                  f"Workload seeds {ev['seeds']}. Mean over seeds, 95 % CI in the JSON card. "
                  "Objective = this model's objective. "
                  + ("The agent preempts only through its `evict` rule (running jobs of one GPU type that would "
                     "outlast the job it starts; under these scenarios' preemption model a preempted job loses "
                     f"nothing); `preemptions` counts them per run. Preemptive heuristics: {preemptive}."
                     if evicts else f"The agent never preempts; preemptive heuristics ({preemptive}) can do "
                     "what its action space cannot."), ""]
        for sc, t in ev["scenarios"].items():
            if "error" in t:
                lines += [f"### {sc}", "", f"not evaluated: {t['error']}", ""]
                continue
            s = t["scenario"]
            lines += [f"### {sc}: `{s['cluster']}`, {s['n_jobs']} jobs, load {s['load']}"
                      + (f", trace {s['trace']}" if s.get("trace") else ""), "",
                      "| scheduler | " + " | ".join(SHOWN) + " |", "|---" * (len(SHOWN) + 1) + "|"]
            rows = sorted(t["mean_ci95"].items(), key=lambda kv: (kv[1]["objective"][0] is None, kv[1]["objective"][0]))
            for name, vals in rows:
                label = f"**{name}**" if name.startswith("rl:") else name
                lines.append(f"| {label} | " + " | ".join(_fmt(vals[m][0], m) for m in SHOWN) + " |")
            lines.append("")
        lines += ["## Targets (issue #4), honestly", ""]
        for k, t in ev["targets"].items():
            met = {True: "met", False: "NOT met", None: "not evaluated"}[t["met"]]
            detail = {kk: vv for kk, vv in t.items() if kk not in ("met", "target")}
            lines.append(f"- **{k}**: {met}. {t.get('target', '')} {json.dumps(detail)}")
        lines.append("")
    other = ev.get("plan", {}).get("compare") if ev else None
    if other and (MODELS_DIR / f"{other}.json").is_file():
        lines += _comparison(card, json.loads((MODELS_DIR / f"{other}.json").read_text()))
    scenario = ((ev or {}).get("plan", {}).get("train") or ["v100-32"])[0]  # one of its own training scenarios
    lines += ["## Use", "", f"`python -m engine evaluate --schedulers first-fit,sjf,rl:{card['name']} "
              f"--scenario {scenario} --seeds 10`, or pick it in the app like any scheduler.", ""]
    return "\n".join(lines)


def _comparison(card: dict[str, Any], other: dict[str, Any]) -> list[str]:
    """A table comparing two models trained on the same episodes with different networks."""
    lines = [f"## {card['policy']['kind']} vs {other['policy']['kind']} (`rl:{other['name']}`, same episodes and "
             "objective)", "", "| | " + f"rl:{card['name']} | rl:{other['name']} |", "|---|---|---|"]
    size = [f"{(MODELS_DIR / c['weights']).stat().st_size / 1024:.0f} KiB weights" for c in (card, other)]
    speed = [f"{c['training']['timesteps'] / c['training']['wall_time_s']:.0f} steps/s" for c in (card, other)]
    lines.append(f"| network | {card['policy']['kind']}, {size[0]} | {other['policy']['kind']}, {size[1]} |")
    window = [f"{c['encoding']['window']} jobs ({c['encoding']['window_order']}), teacher "
              f"{(c['training']['config'].get('clone') or {}).get('teacher', 'none')}" for c in (card, other)]
    lines.append(f"| window, teacher | {window[0]} | {window[1]} |")
    lines.append(f"| training | {card['training']['timesteps']:,} steps, {speed[0]} | "
                 f"{other['training']['timesteps']:,} steps, {speed[1]} |")
    for sc, t in card.get("evaluation", {}).get("scenarios", {}).items():
        o = other.get("evaluation", {}).get("scenarios", {}).get(sc, {})
        if "mean_ci95" not in t or "mean_ci95" not in o:
            continue
        a, b = t["mean_ci95"][f"rl:{card['name']}"], o["mean_ci95"][f"rl:{other['name']}"]
        lines.append(f"| {sc}: mean wait s / objective | {_fmt(a['mean_wait_s'][0], 'mean_wait_s')} / "
                     f"{_fmt(a['objective'][0], 'objective')} | {_fmt(b['mean_wait_s'][0], 'mean_wait_s')} / "
                     f"{_fmt(b['objective'][0], 'objective')} |")
    return [*lines, ""]


def write_card(name: str, seeds: int = 10, plan: dict[str, Any] | None = None) -> dict[str, Any]:
    path = MODELS_DIR / f"{name}.json"
    card = json.loads(path.read_text())
    card["evaluation"] = card_evaluation(name, plan or PLANS[name], seeds)
    path.write_text(json.dumps(card, indent=2) + "\n")
    (MODELS_DIR / f"{name}.md").write_text(render_markdown(card))
    return card


def rerender(name: str) -> dict[str, Any]:
    """Recompute the targets from the card's stored tables and rewrite the card and its Markdown (no runs)."""
    path = MODELS_DIR / f"{name}.json"
    card = json.loads(path.read_text())
    ev = card["evaluation"]
    ev["plan"] = plan = {**PLANS.get(name, {}), **ev.get("plan", {})}
    ev["targets"] = targets(f"rl:{name}", plan, ev["scenarios"])
    path.write_text(json.dumps(card, indent=2) + "\n")
    (MODELS_DIR / f"{name}.md").write_text(render_markdown(card))
    return card


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m engine.rl.cards", description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="+", help="model names in models/")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--train", help="comma-separated training scenarios (default: PLANS)")
    p.add_argument("--larger", help="scenario on a cluster twice as large as in training")
    p.add_argument("--philly", default="philly-64", help="a Philly-trace scenario")
    p.add_argument("--rerender", action="store_true", help="only recompute targets and Markdown from the card")
    args = p.parse_args(argv)
    for name in args.names:
        if args.rerender:
            rerender(name)
            continue
        plan = PLANS.get(name) if not args.train else {
            "train": args.train.split(","), "larger": args.larger, "philly": args.philly}
        for sc in [*plan["train"], plan["larger"], plan["philly"]]:
            parse_scenario(sc)
        card = write_card(name, args.seeds, plan)
        print(name, json.dumps({k: v["met"] for k, v in card["evaluation"]["targets"].items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
