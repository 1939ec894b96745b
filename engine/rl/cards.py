"""Model cards: evaluate a trained model against every hand-written policy and write the results into its card.

``python -m engine cards NAME [NAME ...] [--seeds 30] [--general-seeds 10]`` (:mod:`engine.cli.cards`) runs, for
each model, ``rl:NAME`` and every registered scheduler (every hand-written policy: the heuristics, the teachers of
:mod:`engine.rl.teacher` and the oracles, which read true durations and are marked and never counted as the best)
on the model's evaluation scenarios (:data:`PLANS`): its training scenarios on workload seeds ``0..seeds-1``; a
cluster at least twice as large, a window of the real Philly trace and every teaching preset (:data:`TEACHING`) on
seeds ``0..general_seeds-1`` (training never uses seeds below 2**20), each twice: with free preemption and with
costly preemption (:data:`PREEMPTION`: checkpoint every 1800 s of work, 60 s restart). ``--only SCENARIO,...`` runs
just those scenarios and keeps the card's other stored tables. It writes:

* ``models/NAME.json`` key ``evaluation``: per scenario and preemption setting, the mean and 95 % CI of mean
  wait, mean JCT, bounded slowdown, Gini of user waits, communication overhead, preemptions and the model's own
  objective for every scheduler; the per-seed objectives; and the agent's **paired** difference in objective
  (agent minus policy, same workloads) to every hand-written policy and to the best of them, with its 95 % CI;
* the card's top-level ``beats_best_baseline`` (true only if the agent's objective is lower than the best
  hand-written policy's on every evaluated scenario and setting, the CI excluding zero) and ``verdict``, one
  plain sentence the app shows;
* ``models/NAME.md``: the same as a readable card.

The weights are not touched, so the card's SHA-256 stays valid.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from engine.analysis.evaluate import Evaluation, describe, evaluate, mean_ci, parse_scenario, scenario_from_dict
from engine.analysis.presets import PRESETS
from engine.errors import EngineError
from engine.io import atomic_write_json, atomic_write_text
from engine.rl.agent import MODELS_DIR, ModelError, load_agent, model_names, read_card
from engine.rl.clone import BEST_ALONE, BEST_TEACHER, LOOKAHEAD
from engine.rl.encoding import EVICT, EncodingConfig
from engine.rl.env import env_options_from_dict
from engine.rl.reward import TERMS, RewardWeights, objective_terms, weighted
from engine.rl.selector import SelectorScheduler, card_options
from engine.rl.teacher import REGISTERED_RULE, TEACHERS, TeacherScheduler, within
from engine.schedulers import SCHEDULERS, ListScheduler, StaticKeyOrder
from engine.schedulers.elastic import ElasticGreedy
from engine.schedulers.placement import PLACEMENTS
from engine.sim.options import PreemptionModel, RunOptions

#: The teaching presets (``presets/``): every agent is evaluated on each of them with seeds no training uses (a
#: config's ``env.presets`` may train on a preset's cluster and workload, always with training seeds).
TEACHING: tuple[str, ...] = tuple(sorted(PRESETS))

#: The held-out heterogeneous workloads issue 38's verdict is taken on (A100, V100 and T4 nodes, 1,500 jobs at
#: load 0.85): no training config draws this cluster, and every card evaluates it.
HELD_OUT = "hetero-1500"

#: Evaluation scenarios of the shipped models: those of their training distribution, one on a cluster at
#: least twice as large as any in training, a window of the real Philly trace, the held-out heterogeneous
#: workloads and the teaching presets.
PLANS: dict[str, dict[str, Any]] = {
    "wait-mlp": {
        "train": ["v100-32", "mixed-32", "v100-64"],
        "larger": "v100-128",
        "philly": "philly-64",
        "held_out": HELD_OUT,
        "presets": list(TEACHING),
        "compare": "wait-attn",
    },
    "wait-attn": {
        "train": ["v100-32", "mixed-32", "v100-64"],
        "larger": "v100-128",
        "philly": "philly-64",
        "held_out": HELD_OUT,
        "presets": list(TEACHING),
        "compare": "wait-mlp",
    },
    "fair-comm": {
        "train": ["mixed-32", "v100-32", "v100-64"],
        "larger": "mixed-128",
        "philly": "philly-64",
        "held_out": HELD_OUT,
        "presets": list(TEACHING),
    },
    "hpc-backfill": {
        "train": ["hpc-64", "hpc-32"],
        "larger": "hpc-128",
        "philly": "philly-64",
        "held_out": HELD_OUT,
        "presets": list(TEACHING),
    },
    "select-wait": {
        "train": ["v100-32", "mixed-32", "v100-64"],
        "larger": "v100-128",
        "philly": "philly-64",
        "held_out": HELD_OUT,
        "presets": list(TEACHING),
    },
}


def plan_scenarios(plan: dict[str, Any]) -> list[str]:
    """A plan's scenarios in card order: training ones, the larger cluster, the Philly window, the held-out
    heterogeneous workloads (plans written before them have none) and the teaching presets."""
    held_out = [plan["held_out"]] if plan.get("held_out") else []
    return [*plan["train"], plan["larger"], plan["philly"], *held_out, *plan.get("presets", ())]


def plan_of(
    name: str, train: Sequence[str] = (), larger: str = "v100-128", philly: str = "philly-64"
) -> dict[str, Any]:
    """Model ``name``'s evaluation plan: with ``train`` (its training scenarios), one of those, ``larger``,
    ``philly`` and the teaching presets; otherwise its plan in :data:`PLANS`. Every scenario is checked to be one
    :func:`~engine.analysis.evaluate.parse_scenario` knows; a model without a plan is an ``EngineError``."""
    if train:
        plan = {
            "train": list(train),
            "larger": larger,
            "philly": philly,
            "held_out": HELD_OUT,
            "presets": list(TEACHING),
        }
    elif name in PLANS:
        plan = PLANS[name]
    else:
        raise EngineError(f"no evaluation plan for {name!r} (plans: {', '.join(PLANS)}); give its training scenarios")
    for sc in plan_scenarios(plan):
        parse_scenario(sc)
    return plan


#: The preemption settings every scenario is evaluated under: what a preempted job loses.
PREEMPTION: dict[str, PreemptionModel] = {
    "free": PreemptionModel(),
    "costly": PreemptionModel(checkpoint_interval_s=1800.0, restart_overhead_s=60.0),
}
PREEMPTION_TEXT = {
    "free": "free preemption (a preempted job loses nothing)",
    "costly": "costly preemption (checkpoint every 1800 s of work, 60 s restart)",
}

SHOWN = (
    "mean_wait_s",
    "mean_jct_s",
    "mean_bounded_slowdown",
    "gini_user_wait",
    "comm_overhead_gpu_h",
    "preemptions",
    "objective",
)


def baselines() -> list[str]:
    """Every registered scheduler: every hand-written policy, oracles included (they are marked)."""
    return list(SCHEDULERS)


def fair_baselines() -> list[str]:
    """The hand-written policies that do not read true durations (the best of them is the bar to beat)."""
    return [n for n, s in SCHEDULERS.items() if not s.oracle]


def _term_metrics() -> dict[str, Any]:
    return {f"term_{k}": (lambda r, k=k: objective_terms(r)[k]) for k in TERMS}


def _objective(row: dict[str, Any], w: RewardWeights) -> float:
    return weighted({k: row[f"term_{k}"] for k in TERMS if f"term_{k}" in row}, w)  # rows cached before "deadline"


_BASELINE_RUNS: dict[tuple[str, int, str], Evaluation] = {}
#: While tasks run in this process: ``"dir"``, the ``--cache`` folder where baseline runs are kept; ``"from"``, the
#: model whose card's baseline tables are taken (``--baselines-from``, :func:`donor_table`).
_BASELINE_CACHE: dict[str, Any] = {}


def evaluate_model(name: str, scenario: str, seeds: int, setting: str = "free") -> Evaluation:
    """``rl:name`` and every hand-written policy on ``scenario``, seeds ``0..seeds-1``, under the preemption
    ``setting`` (:data:`PREEMPTION`); every run carries the model's ``objective``. Baseline runs are shared by
    the models evaluated in one process and, while a ``--cache`` folder is in use (:data:`_BASELINE_CACHE`), kept
    there (:func:`_baseline_file`), so a retrained model's cards run only the model."""
    card = read_card(name)
    weights = RewardWeights.from_dict(card["reward"])
    key, cache_dir = (scenario, seeds, setting), _BASELINE_CACHE.get("dir")
    if key not in _BASELINE_RUNS:
        kept = _kept_baselines(cache_dir, key) if cache_dir is not None else None
        _BASELINE_RUNS[key] = kept or evaluate(
            baselines(),
            scenario,
            seeds,
            baseline="first-fit",
            extra=_term_metrics(),
            options=RunOptions(preemption=PREEMPTION[setting]),
        )
        if cache_dir is not None and kept is None:
            ev = _BASELINE_RUNS[key]
            data = {"key": list(key), "schedulers": ev.schedulers, "seeds": list(ev.seeds), "runs": ev.runs}
            atomic_write_json(_baseline_file(cache_dir, key), data, indent=None, allow_nan=True)
    base = _BASELINE_RUNS[key]
    scored = {s: [{**row, "objective": _objective(row, weights)} for row in rows] for s, rows in base.runs.items()}
    runs = {**agent_runs(name, scenario, seeds, setting).runs, **scored}  # the agent's runs carry theirs
    return Evaluation(base.scenario, base.seeds, runs, "first-fit")


def agent_runs(name: str, scenario: str, seeds: int, setting: str) -> Evaluation:
    """``rl:name`` alone on ``scenario``, seeds ``0..seeds-1``, under ``setting``; every run carries the model's
    ``objective``."""
    weights = RewardWeights.from_dict(read_card(name)["reward"])
    ev = evaluate(
        [f"rl:{name}"], scenario, seeds, extra=_term_metrics(), options=RunOptions(preemption=PREEMPTION[setting])
    )
    runs = {s: [{**row, "objective": _objective(row, weights)} for row in rows] for s, rows in ev.runs.items()}
    return Evaluation(ev.scenario, ev.seeds, runs, f"rl:{name}")


def donor_table(donor: str, name: str, scenario: str, seeds: int, setting: str) -> dict[str, Any] | None:
    """The table of (``scenario``, ``setting``) in model ``donor``'s card, if its hand-written policies' numbers
    are exactly what model ``name``'s card would compute: the same reward weights (else ``EngineError``), the same
    scenario and seeds ``0..seeds-1``, and every scheduler registered now; ``None`` otherwise (run them)."""
    card, mine = read_card(donor), read_card(name)
    if card["reward"] != mine["reward"]:
        raise EngineError(
            f"--baselines-from {donor}: its reward weights differ from {name}'s; its numbers do not apply"
        )
    t = card.get("evaluation", {}).get("scenarios", {}).get(scenario, {}).get(setting)
    if not isinstance(t, dict) or "error" in t or t.get("seeds") != list(range(seeds)):
        return None
    if scenario_from_dict(t["scenario"]) != parse_scenario(scenario) or missing_baselines(t):
        return None
    return t


def merged_table(me: str, agent: Evaluation, donor: str, taken: dict[str, Any]) -> dict[str, Any]:
    """A card table of the agent's runs ``agent`` and the hand-written policies' numbers of another card's table
    ``taken`` (:func:`donor_table`; the same workloads, so the per-seed differences stay paired)."""
    stats, keep = agent.stats(), set(baselines())
    mean = {me: _means(stats, me)}
    mean |= {s: v for s, v in taken["mean_ci95"].items() if s in keep}
    objectives = {me: agent.values(me, "objective")}
    objectives |= {s: v for s, v in taken["objective_runs"].items() if s in keep}
    return {
        "scenario": taken["scenario"],
        "seeds": list(agent.seeds),
        "oracles": [s for s in taken["oracles"] if s in keep],
        "mean_ci95": mean,
        "objective_runs": objectives,
        **compare_runs(me, objectives),
        "baselines_from": donor,
    }


def _baseline_file(cache_dir: Path, key: tuple[str, int, str]) -> Path:
    """Where the baseline runs of (scenario, seeds, setting) are kept (the scenario may be a path: hashed)."""
    return Path(cache_dir) / f"baselines-{hashlib.sha256(repr(key).encode()).hexdigest()[:24]}.json"


def _kept_baselines(cache_dir: Path, key: tuple[str, int, str]) -> Evaluation | None:
    """The kept baseline runs of ``key`` if they are whole and of today's registered schedulers, else ``None``."""
    try:
        data = json.loads(_baseline_file(cache_dir, key).read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("key") != list(key) or data.get("schedulers") != baselines():
        return None
    return Evaluation(parse_scenario(key[0]), tuple(data["seeds"]), data["runs"], "first-fit")


def verdict_of(diff: float, half: float) -> str:
    """``better`` / ``worse`` when the 95 % CI of (agent minus policy) excludes zero, else ``no clear difference``."""
    if math.isnan(half):
        return "no clear difference"
    return "better" if diff + half < 0 else "worse" if diff - half > 0 else "no clear difference"


def paired_difference(mine: Sequence[float], theirs: Sequence[float]) -> dict[str, Any]:
    """Mine minus theirs on the same seeds: mean, 95 % CI half-width, the mean relative to theirs (``None`` where
    theirs is 0) and :func:`verdict_of`."""
    diff, half = mean_ci([a - b for a, b in zip(mine, theirs)])
    base = sum(theirs) / len(theirs)
    return {
        "diff": _clean(diff),
        "ci95": _clean(half),
        "relative": _clean(diff / base if base else math.nan),
        "verdict": verdict_of(diff, half),
    }


def compare_runs(me: str, objectives: dict[str, list[float]]) -> dict[str, Any]:
    """The agent's paired differences in objective (agent minus policy, per seed) to every hand-written policy
    and the best fair one (lowest mean objective, oracles excluded)."""
    mine = objectives[me]
    fair = set(fair_baselines())
    vs = {s: paired_difference(mine, vals) for s, vals in objectives.items() if s != me}
    candidates = [s for s in objectives if s != me and s in fair]
    best = min(candidates, key=lambda s: sum(objectives[s]) / len(objectives[s]))
    return {"vs": vs, "best_baseline": best, "vs_best": vs[best]}


def _means(stats: dict[str, Any], s: str) -> dict[str, list[float | None]]:
    """Scheduler ``s``'s mean and 95 % CI half-width of each shown metric, as a card stores them."""
    return {m: [_clean(stats[m][s][0]), _clean(stats[m][s][1])] for m in SHOWN}


def scenario_table(me: str, ev: Evaluation) -> dict[str, Any]:
    """One (scenario, preemption setting) of a card: means, CIs, per-seed objectives, paired comparisons."""
    stats = ev.stats()
    objectives = {s: ev.values(s, "objective") for s in ev.schedulers}
    return {
        "scenario": ev.scenario.to_dict(),
        "seeds": list(ev.seeds),
        "oracles": [s for s in ev.schedulers if s in SCHEDULERS and SCHEDULERS[s].oracle],
        "mean_ci95": {s: _means(stats, s) for s in ev.schedulers},
        "objective_runs": objectives,
        **compare_runs(me, objectives),
    }


def _scenario_tables(task: tuple[str, int, str, tuple[str, ...]]) -> dict[str, Any]:
    """Tables of one (scenario, seeds, setting) for each model in ``names`` (baseline runs shared)."""
    sc, n, setting, names = task
    out: dict[str, Any] = {}
    donor = _BASELINE_CACHE.get("from")
    for name in names:
        try:
            taken = donor_table(donor, name, sc, n, setting) if donor else None
            if taken is not None:
                out[name] = merged_table(f"rl:{name}", agent_runs(name, sc, n, setting), donor, taken)
                continue
            out[name] = scenario_table(f"rl:{name}", evaluate_model(name, sc, n, setting))
        except Exception as exc:  # e.g. the Philly trace is absent on this machine: say so in the card
            out[name] = {"error": str(exc)}
    return out


def _tasks(
    plans: dict[str, dict[str, Any]], seeds: int, general_seeds: int, only: frozenset[str] | None = None
) -> list[tuple[str, int, str, tuple]]:
    """One task per (scenario, seeds, setting), naming every model evaluated there (scenarios in ``only``, if
    given)."""
    wanted: dict[tuple[str, int, str], list[str]] = {}
    for name, plan in plans.items():
        for sc in plan_scenarios(plan):
            if only is not None and sc not in only:
                continue
            n = seeds if sc in plan["train"] else general_seeds
            for setting in PREEMPTION:
                wanted.setdefault((sc, n, setting), []).append(name)
    return [(sc, n, st, tuple(names)) for (sc, n, st), names in wanted.items()]


#: The card fields a model's runs depend on: a kept table is reused only while they are what they were.
RUN_FIELDS = (
    "format",
    "sha256",
    "policy",
    "encoding",
    "reward",
    "selector",
    "selector_vote",
    "selector_margin",
    "selector_last",
)


def _cache_file(cache_dir: Path, task: tuple[str, int, str, tuple[str, ...]]) -> Path:
    """Where the tables of ``task`` are kept: named by its scenario, seeds, setting and models, and by what the
    models' cards say that their runs depend on (:data:`RUN_FIELDS`), so that a model re-carded under the same name
    with other weights or another encoding is run again, never read back stale."""
    sc, n, setting, names = task
    runs_on = json.dumps([[read_card(m).get(k) for k in RUN_FIELDS] for m in names], sort_keys=True)
    return cache_dir / f"{sc}-{n}-{setting}-{'+'.join(names)}-{hashlib.sha256(runs_on.encode()).hexdigest()[:16]}.json"


def _run_and_keep(
    args: tuple[tuple[str, int, str, tuple[str, ...]], str | None, str | None, str | None],
) -> dict[str, Any]:
    task, keep, cache_dir, donor = args
    _BASELINE_CACHE.clear()
    if cache_dir is not None:
        _BASELINE_CACHE["dir"] = Path(cache_dir)
    if donor is not None:
        _BASELINE_CACHE["from"] = donor
    out = _scenario_tables(task)
    if keep is not None:  # kept as soon as done: an interrupted evaluation resumes where it stopped
        atomic_write_json(Path(keep), out, indent=None, allow_nan=True)
    return out


def _map(fn: Callable[[Any], Any], tasks: Sequence[Any], workers: int) -> list[Any]:
    """``fn`` over ``tasks`` in order, by ``workers`` spawned processes where there are several of each."""
    if workers > 1 and len(tasks) > 1:
        from multiprocessing import get_context

        with get_context("spawn").Pool(workers) as pool:
            return pool.map(fn, tasks, chunksize=1)
    return [fn(t) for t in tasks]


def _cached(path: Path, names: tuple[str, ...]) -> dict[str, Any] | None:
    """The tables kept at ``path`` for models ``names``, or ``None`` when there are none or the entry is not
    whole (cut short by a kill before entries were written atomically, or edited): it is then run again."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and all(isinstance(data.get(n), dict) for n in names) else None


def evaluate_cards(
    plans: dict[str, dict[str, Any]],
    seeds: int,
    general_seeds: int,
    workers: int = 1,
    cache_dir: Path | None = None,
    cached_only: bool = False,
    kept: dict[str, dict[str, Any]] | None = None,
    baselines_from: str | None = None,
) -> dict[str, dict[str, Any]]:
    """The ``evaluation`` section of each model's card (model -> section), the (scenario, setting) tasks run by
    ``workers`` processes, training scenarios first. With ``cache_dir``, each task's tables are kept there when
    done and reused by a later call; with ``cached_only``, tasks not there are reported as not run. With
    ``kept`` (model -> scenario -> its stored tables), those scenarios are not run again: their tables are
    taken as they are. With ``baselines_from`` (a model name), the hand-written policies' numbers of each
    table that model's card holds for the same workloads and reward are taken from it (:func:`donor_table`)
    and only the agents run."""
    kept = kept or {}
    only = None
    if kept:  # run the scenarios some model has no kept tables for
        only = frozenset(
            sc for name, plan in plans.items() for sc in plan_scenarios(plan) if sc not in kept.get(name, {})
        )
    tasks = sorted(_tasks(plans, seeds, general_seeds, only), key=lambda t: t[1] != seeds)
    done: dict[tuple[str, int, str], dict[str, Any]] = {}
    todo = []
    keep = {t: None if cache_dir is None else _cache_file(cache_dir, t) for t in tasks}
    for t in tasks:
        stored = _cached(keep[t], t[3]) if keep[t] is not None else None
        if stored is not None:
            done[t[:3]] = stored
        elif cached_only:
            done[t[:3]] = {n: {"error": "not run: the evaluation stopped before this scenario"} for n in t[3]}
        else:
            todo.append(t)
    args = [
        (t, None if cache_dir is None else str(keep[t]), None if cache_dir is None else str(cache_dir), baselines_from)
        for t in todo
    ]
    done |= {t[:3]: r for t, r in zip(todo, _map(_run_and_keep, args, workers))}
    out = {}
    for name, plan in plans.items():
        tables: dict[str, Any] = {}
        for sc in plan_scenarios(plan):
            n = seeds if sc in plan["train"] else general_seeds
            stored = kept.get(name, {}).get(sc)
            tables[sc] = stored if stored is not None else {st: done[sc, n, st][name] for st in PREEMPTION}
        out[name] = {
            "seeds": {
                "train": f"0..{seeds - 1}",
                "general": f"0..{general_seeds - 1}",
                "note": "training workloads use seeds >= 2**20; validation 900000+",
            },
            "preemption": {k: PREEMPTION_TEXT[k] for k in PREEMPTION},
            "plan": plan,
            "scenarios": tables,
            "summary": summary(f"rl:{name}", tables),
        }
    return out


def card_evaluation(name: str, plan: dict[str, Any], seeds: int, general_seeds: int) -> dict[str, Any]:
    """The ``evaluation`` section of one card: per scenario and preemption setting, the tables and comparisons."""
    return evaluate_cards({name: plan}, seeds, general_seeds)[name]


def summary(me: str, tables: dict[str, Any]) -> dict[str, Any]:
    """Whether the agent beats the best hand-written policy everywhere it was evaluated, and the sentence to
    show for it (from the stored tables alone)."""
    rows = [(sc, setting, t) for sc, by in tables.items() for setting, t in by.items() if "error" not in t]
    worse = [(sc, st, t) for sc, st, t in rows if t["vs_best"]["verdict"] == "worse"]
    better = [(sc, st, t) for sc, st, t in rows if t["vs_best"]["verdict"] == "better"]
    beats = bool(rows) and len(better) == len(rows)
    if beats:
        text = (
            f"{me} has a lower objective than the best hand-written policy on all {len(rows)} evaluated "
            "scenario and preemption settings (paired, 95 % CI excluding zero)."
        )
    else:

        def where(items):
            return "; ".join(
                f"{sc} with {st} preemption vs {t['best_baseline']} ({percent_change(t['vs_best'])})"
                for sc, st, t in items
            )

        text = (
            f"{me} does not beat the best hand-written policy: of {len(rows)} scenario and preemption "
            f"settings it is significantly better on {len(better)}"
            + (f" ({where(better)})" if better else "")
            + f", significantly worse on {len(worse)}"
            + (f" ({where(worse)})" if worse else "")
            + ", and indistinguishable on the rest. Where it is not better, use the best hand-written policy "
            "the card names for that setting."
        )
    return {
        "beats_best_baseline": beats,
        "verdict": text,
        "settings": len(rows),
        "better": len(better),
        "worse": len(worse),
    }


def percent_change(vs_best: Mapping[str, Any], tenths: bool = False) -> str:
    """A card's paired difference to the best policy (``vs_best``) in percent of that policy's objective, whole
    (unless that would round a real difference to 0, or ``tenths``: always to 0.1 %); absolute where the best
    policy's objective is 0 (no percent exists: a "+0 %" there would hide a real difference)."""
    if vs_best["relative"] is None:
        return f"{vs_best['diff']:+.2g} absolute"
    pct = 100 * vs_best["relative"]
    return f"{pct:+.0f} %" if not tenths and (abs(pct) >= 0.5 or pct == 0) else f"{pct:+.1f} %"


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
    lines = _selector_lines(card)
    tables = [t for by in card.get("evaluation", {}).get("scenarios", {}).values() for t in by.values()]
    donors = sorted({t["baselines_from"] for t in tables if isinstance(t, dict) and t.get("baselines_from")})
    if donors:
        lines.append(
            "- the hand-written policies' numbers are those of "
            + ", ".join("its previous card" if d == card["name"] else f"the card of `rl:{d}`" for d in donors)
            + " (the same workloads, seeds and reward weights: `cards --baselines-from`); only this agent ran"
        )
    if tr.get("clone"):
        c, last = tr["clone"], tr["clone"]["rounds"][-1]
        expert = c["config"].get("expert")
        placing = f" (placing with `{c['config']['rule']}`, `engine/rl/teacher.py`)"
        more = c["config"].get("label_seeds", 1) - 1
        kind = f" and {more} more workloads of its kind (mean objective)" if more else ""
        if c["config"]["teacher"] == BEST_ALONE:
            who = f"the best of its policies alone on each episode{kind} (`best_alone`, `engine/rl/clone.py`)"
        elif c["config"]["teacher"] == BEST_TEACHER:
            rules = c["config"].get("placements") or [c["config"]["rule"]]
            who = (
                f"the best of the teachers {', '.join(f'`{n}`' for n in c['config']['teachers'])}, each placing with "
                f"{' or '.join(f'`{r}`' for r in rules)}, alone within its encoding on each episode{kind} "
                "(`best_alone`, `engine/rl/clone.py`)"
            )
        elif c["config"]["teacher"] == LOOKAHEAD:
            who = (
                "its lookahead expert (`LookaheadSelector`, `engine/rl/lookahead.py`: every "
                f"{c['config']['label_period_s']:g} s of simulated time, the policy whose believed run from the present "
                "is best)"
            )
        elif not expert:
            who = f"the teacher `{c['config']['teacher']}`{placing}"
        else:
            who = (
                "the lookahead expert (`engine/rl/lookahead.py`: the proposals of "
                f"{', '.join(f'`{n}`' for n in expert['candidates'])} compared by rollouts on estimates, each "
                "finished by "
                + (f"`{expert['rollout']}`" if expert.get("rollout") else "the teachers that proposed it")
                + f"; expert iteration){placing}"
            )
        lines.append(
            f"- warm start: behaviour cloning of {who} over {len(c['rounds'])} rounds "
            f"({c['config']['episodes']} episodes each, DAgger after the first), {c['samples']:,} labelled "
            f"decisions, {c['wall_time_s']:,.0f} s (counted in the wall time); accuracy on those decisions "
            f"{last['accuracy']:.1%}; validation return of the cloned policy {c['eval_mean_return']:.4f}, "
            "then MaskablePPO fine-tuning"
        )
    if not parent:
        return [
            *lines,
            "- the exact config is `training.config` in the JSON card; retrain with "
            f"`python -m engine train --config {card['name']}`",
        ]
    run, ptr = tr["this_run"], parent["training"]
    return [
        *lines,
        f"- continued training: this run {run['timesteps']:,} steps in {run['wall_time_s']:,.0f} s, started from "
        f"the weights of `rl:{parent['model']}` (SHA-256 `{parent['sha256'][:16]}...`), which had trained "
        f"{ptr['timesteps']:,} steps in {ptr['wall_time_s']:,.0f} s; the totals above count both",
        *_widened_lines(parent, card),
        "- the exact configs are `training.config` (this run; `init_from` names the parent) and "
        "`training.init_from.training.config` (the parent's) in the JSON card; reproduce by training the "
        "parent's config, then this one",
    ]


def _workload_kinds(env: dict[str, Any]) -> str:
    """ ", N kinds of workload drawn per episode (...)" for a config with ``env.workloads`` and ", and the teaching
    presets ..." for one with ``env.presets``; else nothing."""
    kinds, presets = env.get("workloads") or [], env.get("presets") or []
    text = f", {len(kinds)} kinds of workload drawn per episode (`training.config.env.workloads`)" if kinds else ""
    if presets:
        text += (
            f", and the teaching presets {', '.join(f'`{p}`' for p in presets)} as further kinds (each preset's "
            "cluster and workload, generated with training seeds, never those of the evaluation below)"
        )
    return text


def _widened_lines(parent: dict[str, Any], card: dict[str, Any]) -> list[str]:
    """A line saying which packing rules a continued run added to its parent's (``training.init_from.rules``)."""
    if "rules" not in parent:
        return []
    added = [r for r in card["encoding"]["rules"] if r not in parent["rules"]]
    return [
        f"- the parent placed with {', '.join(f'`{r}`' for r in parent['rules'])}; this run added "
        f"{', '.join(f'`{r}`' for r in added)}, each starting as a copy of the parent's first packing rule "
        "a little less likely (`engine/rl/train.py`, `_widened`), so it started out deciding as the parent"
    ]


def _selector_lines(card: dict[str, Any]) -> list[str]:
    """A selector's card lines (:mod:`engine.rl.selector`): its policies, the prior, the cores and the
    validation curve."""
    tr, lines = card["training"], []
    if card.get("selector"):
        vote, margin, last = card_options(card)
        lines.append(
            "- a selector: at each decision point the network chooses which of "
            + ", ".join(f"`{n}`" for n in card["selector"])
            + " makes the decision (`engine/rl/selector.py`)"
            + (
                "; the policy that decides is the one the network has chosen most often in the run so far "
                '(`"selector_vote": "run"`: it stops flickering between policies)'
                if vote == "run"
                else ""
            )
            + (
                f"; the policy that decided last keeps deciding unless the network's pick scores at least {margin:g} "
                'above it (`"selector_margin"`: a switch needs conviction)'
                if margin
                else ""
            )
            + (
                '; the network is not shown which policy decided last (`"selector_last": false`: on the runs it '
                "was cloned from, that was the label)"
                if not last
                else ""
            )
        )
    prior = tr.get("selector_prior") or (tr.get("init_from") or {}).get("training", {}).get("selector_prior")
    if prior:
        means = ", ".join(f"`{n}` {r:.4f}" for n, r in prior["validation_mean_return"].items())
        start = (
            f"the action bias of the best, `{prior['best']}`, was raised by {prior['bias']:g}, so training started from it"
            if prior["bias"] > 0
            else f"the best alone: `{prior['best']}` (no action bias raised)"
        )
        lines.append(f"- prior: each policy alone on the validation episodes (mean return: {means}); {start}")
        if prior["bias"] > 0 and tr.get("best_eval_mean_return") == prior["validation_mean_return"][prior["best"]]:
            lines.append(
                f"- no PPO evaluation beat the prior's validation return: the shipped weights are the prior's, "
                f"which choose `{prior['best']}` at every decision point"
            )
    if tr.get("cores"):
        cfg = tr.get("config") or {}
        lines.append(
            f"- machine: {tr['cores']} cores, {cfg.get('n_envs', '?')} environments "
            f"({'one process each' if cfg.get('vec_env') == 'subproc' else 'in one process'})"
        )
    curve = tr.get("validation_curve") or []
    if curve:
        step = max(len(curve) // 12, 1)
        shown = curve[::step] + ([curve[-1]] if (len(curve) - 1) % step else [])
        lines.append(
            "- validation curve (steps: mean return on the fixed validation episodes): "
            + ", ".join(f"{int(t):,}: {r:.4f}" for t, r in shown)
        )
    return lines


def _deployed(config: dict) -> list[str]:
    """The card line that says which encoding options apply at inference only (``deploy_encoding``), if any."""
    opts = config.get("deploy_encoding") or {}
    if not opts:
        return []
    what = [_DEPLOYED[k] for k in _DEPLOYED if k in opts]
    return [
        f"- trained with the encoding {json.dumps(config['env']['encoding'])}; {json.dumps(opts)} applies at "
        f"inference only (the observation layout is the same): {'; '.join(what)}"
    ]


#: What each ``deploy_encoding`` option does to a trained policy (:data:`engine.rl.train.DEPLOY_OPTIONS`).
_DEPLOYED = {
    "whole_node": "a job one node could hold never starts spread over nodes (the policy's next-best feasible "
    "choice is taken)",
    "max_evictions": "a job preempted that many times is never a victim again (the policy's next-best feasible "
    "choice is taken)",
    "evict_scope": "a job one node could hold makes room on one node, not anywhere on its GPU type (`evict_scope`, "
    "`engine/rl/eviction.py`)",
    "elastic_start": "an elastic job it starts runs on its fewest GPUs, and spare GPUs go to elastic jobs as optimus "
    "hands them out (`elastic_start`, `engine/rl/encoding.py`)",
}


def _training_preemption(env: dict[str, Any]) -> str:
    """How the card's training episodes treated preemption: the preemption models of their run options (each
    once, in order; configs of every age: :func:`~engine.rl.env.env_options_from_dict`)."""
    texts = []
    for p in dict.fromkeys(o.preemption for o in env_options_from_dict(env)):
        interval, restart = p.checkpoint_interval_s, p.restart_overhead_s
        if interval is None and not restart:
            texts.append("free preemption (a preempted job lost nothing)")
            continue
        kept = "all its work" if interval is None else f"its work up to a checkpoint every {interval:g} s of work"
        texts.append(f"costly preemption (a preempted job kept {kept}, {restart:g} s restart)")
    if len(texts) == 1:
        return f"trained with {texts[0]}"
    return f"trained with, drawn per episode, {' or '.join(texts)}"


def render_markdown(card: dict[str, Any]) -> str:
    """The human-readable card."""
    tr, ev = card["training"], card.get("evaluation", {})
    w = card["reward"]
    terms = " + ".join(f"{w[k]:g} x {k}" for k in TERMS if w.get(k))
    lines = [
        f"# `rl:{card['name']}`",
        "",
        card.get("description", ""),
        "",
    ]
    if "verdict" in card:
        lines += [f"**Verdict: {card['verdict']}**", ""]
    lines += [
        "## What it optimises",
        "",
        f"Objective (lower is better; the training return is its negative): {terms}, with wait in units of "
        f"{w['wait_scale_s']:g} s (definitions: `engine/rl/reward.py`).",
        "",
        "## Network and inputs",
        "",
        f"- policy: `{card['policy']['kind']}` ({json.dumps(card['policy'])})",
        f"- encoding: {json.dumps(card['encoding'])} (see `engine/rl/encoding.py`)",
        *_deployed(tr["config"]),
        f"- weights: `{card['weights']}`, SHA-256 `{card['sha256']}` (checked before loading; plain float32 "
        "arrays in a NumPy `.npz`, never unpickled; evaluated in NumPy, `engine/rl/inference.py`)",
        "",
        "## Training",
        "",
        f"- {tr['timesteps']:,} environment steps in {tr['wall_time_s']:,.0f} s wall time on {tr['machine']}; "
        f"kept: {tr['kept']}",
        f"- libraries: {', '.join(f'{k} {v}' for k, v in tr['libraries'].items())}",
        f"- episodes: clusters {tr['config']['env']['clusters']}, loads {tr['config']['env']['loads']}, "
        f"{tr['config']['env']['n_jobs']} jobs{_workload_kinds(tr['config']['env'])}; "
        f"curriculum {json.dumps(tr['config']['curriculum'])}; "
        f"{_training_preemption(tr['config']['env'])}",
        *_provenance(card),
        "",
        *why_not_better(card),
    ]
    if ev:
        seeds = ev["seeds"]
        lines += [
            "## Evaluation against every hand-written policy",
            "",
            f"Workload seeds {seeds['train']} on the training scenarios, {seeds['general']} on the "
            "larger cluster, the Philly window, the held-out heterogeneous workloads and the teaching presets "
            f"(`presets/`, where a preset's workload is generated with each seed; {seeds['note']}). Each scenario runs twice: "
            f"{PREEMPTION_TEXT['free']} and {PREEMPTION_TEXT['costly']}. Mean over seeds; objective = this "
            "model's objective; the last column is the agent's paired difference in objective (agent minus "
            "that policy on the same workloads, mean and 95 % CI; negative: the agent is better). Oracles read "
            "true durations, are marked and never count as the best hand-written policy. " + _preempts_text(card),
            "",
        ]
        for sc, by in ev["scenarios"].items():
            for setting, t in by.items():
                if "error" in t:
                    lines += [f"### {sc}, {setting} preemption", "", f"not evaluated: {t['error']}", ""]
                    continue
                b = t["vs_best"]
                lines += [
                    f"### {sc}, {setting} preemption: {describe(scenario_from_dict(t['scenario']))}, "
                    f"{len(t['seeds'])} seeds",
                    "",
                    f"Agent minus the best hand-written policy (`{t['best_baseline']}`): "
                    f"{_fmt(b['diff'], 'objective')} +- {_fmt(b['ci95'], 'objective')} "
                    f"({percent_change(b, tenths=True)}): **{b['verdict']}**.",
                    "",
                    "| scheduler | " + " | ".join(SHOWN) + " | agent - this |",
                    "|---" * (len(SHOWN) + 2) + "|",
                ]
                rows = sorted(
                    t["mean_ci95"].items(), key=lambda kv: (kv[1]["objective"][0] is None, kv[1]["objective"][0])
                )
                for name, vals in rows:
                    label = (
                        f"**{name}**"
                        if name.startswith("rl:")
                        else f"{name} (oracle)"
                        if name in t["oracles"]
                        else name
                    )
                    d = t["vs"].get(name)
                    cmp = f"{_fmt(d['diff'], 'objective')} +- {_fmt(d['ci95'], 'objective')}" if d else ""
                    lines.append(f"| {label} | " + " | ".join(_fmt(vals[m][0], m) for m in SHOWN) + f" | {cmp} |")
                lines.append("")
    other = ev.get("plan", {}).get("compare") if ev else None
    if other in model_names(MODELS_DIR):
        lines += _comparison(card, read_card(other, MODELS_DIR))
    scenario = ((ev or {}).get("plan", {}).get("train") or ["v100-32"])[0]  # one of its own training scenarios
    lines += [
        "## Use",
        "",
        f"`python -m engine evaluate --schedulers short-spare-evict-est,easy-backfill,"
        f"rl:{card['name']} --scenario {scenario} --seeds 30`, or pick it in the app like any scheduler.",
        "",
    ]
    return "\n".join(lines)


def _preempts_text(card: dict[str, Any]) -> str:
    """How the agent can preempt: a selector through the preemptive policies it may pick, any other agent
    through its ``evict`` rule, or not at all."""
    pool = [n for n in card.get("selector") or () if n in SCHEDULERS and SCHEDULERS[n].preemptive]
    if card.get("selector"):
        if not pool:
            return "The agent never preempts: none of its policies does."
        return (
            "The agent preempts only when it picks a preemptive policy ("
            + ", ".join(f"`{n}`" for n in pool)
            + "); `preemptions` counts preemptions per run."
        )
    if EVICT in card["encoding"].get("rules", ()):
        return "The agent preempts only through its `evict` rule; `preemptions` counts preemptions per run."
    return "The agent never preempts."


#: What a winning policy may do that an agent cannot (:func:`_reasons`), in the order a card lists them.
REASONS = ("pool", "preempts", "resizes", "placement", "outside", "within")

#: Environment steps a shipped agent should train (issue 38, "Real scale": at least 1M steps per shipped agent).
TARGET_STEPS = 1_000_000


def why_not_better(card: dict[str, Any]) -> list[str]:
    """The card section that says, from the card's own measurements, why the agent does not beat the best
    hand-written policy: its training compute against :data:`TARGET_STEPS`, whether its validation return was
    still rising when training stopped, and, for each setting where it is significantly worse, what the winning
    policy does there that the agent cannot (:func:`_reasons`). Empty for a card without an evaluation and for
    one whose agent beats the best policy."""
    s = (card.get("evaluation") or {}).get("summary")
    if not s or s["beats_best_baseline"]:
        return []
    tr = card["training"]
    return [
        "## Why it does not beat the best policy",
        "",
        _compute_line(tr),
        _curve_line(tr),
        *_tried_lines(card),
        *_worse_lines(card),
        *_hindsight_lines(card),
        *_largest_run_lines(card),
        "",
    ]


def _compute_line(tr: dict[str, Any]) -> str:
    """Steps trained against :data:`TARGET_STEPS`, wall time, machine and the PPO steps per second (the wall time
    less the behaviour cloning of this run and of the runs it continued)."""
    steps, wall_s = tr["timesteps"], tr["wall_time_s"]
    # a continued run's wall time counts its parents', their cloning included
    clone_s = sum((run.get("clone") or {}).get("wall_time_s", 0.0) for run in _lineage(tr))
    cfg = tr.get("config") or {}
    cores = f"{tr['cores']} cores" if tr.get("cores") else "cores not recorded"
    envs = f", {cfg['n_envs']} environments" if cfg.get("n_envs") else ""
    text = (
        f"- training compute: {steps:,} environment steps, {100 * steps / TARGET_STEPS:.1f} % of the {TARGET_STEPS:,} "
        f"steps issue 38 asks of each shipped agent; {wall_s:,.0f} s wall time"
        + (f" ({clone_s:,.0f} s of it behaviour cloning)" if clone_s else "")
        + f" on {tr['machine']} ({cores}{envs})"
    )
    if wall_s > clone_s and steps:
        rate = steps / (wall_s - clone_s)
        text += f": {rate:,.0f} steps/s; at that rate {TARGET_STEPS:,} steps take {TARGET_STEPS / rate / 3600:,.1f} h"
    if tr.get("stopped_at") is not None and cfg.get("total_timesteps"):
        text += f"; stopped on request at {tr['stopped_at']:,} of the {cfg['total_timesteps']:,} steps configured"
    return text


#: Longest text of a ``tried`` entry's ``what`` and ``command`` (one line each).
MAX_TRIED_TEXT = 400


def _tried_lines(card: dict[str, Any]) -> list[str]:
    """One line per run that tried to replace this agent and was not shipped (``card["tried"]``, kept from the
    runs' own measurements): what it changed, its paired validation difference against this agent and its card's
    counts of settings better and worse than the best policy beside this card's, or beside the agent's card when
    the run was measured (``card.agent_better`` and ``card.agent_worse``, kept where the agent's card has changed
    since). A malformed entry is a ``ModelError`` naming it (a card is data from a stranger)."""
    s = card["evaluation"]["summary"]
    lines = []
    for i, t in enumerate(card.get("tried") or ()):
        try:
            what, command, v, c = t["what"], t["command"], t["validation"], t["card"]
            texts_ok = all(
                isinstance(x, str) and 0 < len(x) <= MAX_TRIED_TEXT and "\n" not in x for x in (what, command)
            )
            then = (c["agent_better"], c["agent_worse"]) if "agent_better" in c else None
            numbers = [
                v["candidate"],
                v["agent"],
                v["half_width"],
                v["episodes"],
                c["better"],
                c["worse"],
                *(then or ()),
            ]
            if not texts_ok or not all(isinstance(x, (int, float)) and math.isfinite(x) for x in numbers):
                raise TypeError
        except (TypeError, KeyError) as exc:
            raise ModelError(
                f"model card: tried[{i}] needs what and command (one line, 1-{MAX_TRIED_TEXT} characters), "
                "validation {candidate, agent, half_width, episodes} and card {better, worse}, as numbers"
            ) from exc
        mine = (
            f"this card: {s['better']} and {s['worse']}"
            if then is None
            else f"this agent's card then: {then[0]} and {then[1]}"
        )
        lines.append(
            f"- tried and not shipped: {what}. On {v['episodes']} of this agent's validation episodes past those its "
            f"training chose on: objective {v['candidate']:.3f} vs this agent's {v['agent']:.3f} (paired "
            f"{v['candidate'] - v['agent']:+.3f} +- {v['half_width']:.3f}); its card: better than the best policy on "
            f"{c['better']} and worse on {c['worse']} settings ({mine}); `{command}`"
        )
    return lines


def _curve_line(tr: dict[str, Any]) -> str:
    """Whether the validation return was still rising when training stopped: the best of the last quarter of
    the evaluations against the best before them (higher is better); without a curve, what the card has."""
    curve = tr.get("validation_curve") or []
    if len(curve) >= 2:
        q = max(len(curve) // 4, 1)
        before, last = max(r for _, r in curve[:-q]), max(r for _, r in curve[-q:])
        return (
            f"- validation return {'still improving' if last > before else 'flat'} when training stopped: best "
            f"{last:.4f} in the last quarter of its {len(curve)} evaluations (from {int(curve[-q][0]):,} steps), "
            f"{before:.4f} before them (mean return on the fixed validation episodes; higher is better)"
        )
    clone, best = tr.get("clone"), tr.get("best_eval_mean_return")
    if clone and best is not None:
        cloned = clone["eval_mean_return"]
        return (
            f"- no validation curve recorded; validation return {cloned:.4f} after behaviour cloning, {best:.4f} at "
            f"the best PPO evaluation ({best - cloned:+.4f}; higher is better)"
        )
    return "- no validation curve recorded"


def _worse_lines(card: dict[str, Any]) -> list[str]:
    """The settings where the agent is significantly worse than the best policy, grouped by what the winner does
    there that the agent cannot (:func:`_reasons`), and those where the card shows no such reason."""
    tables = [(sc, st, t) for (sc, st), t in _settings(card).items() if "error" not in t]
    worse = [(sc, st, t) for sc, st, t in tables if t["vs_best"]["verdict"] == "worse"]
    if not worse:
        return [f"- significantly worse than the best hand-written policy on none of its {len(tables)} settings"]
    groups: dict[str, list[tuple[str, str, str, float]]] = {kind: [] for kind in REASONS}
    unexplained = []
    for sc, st, t in worse:
        found = _reasons(card, t)
        for kind, label, value in found:
            groups.setdefault(kind, []).append((label, sc, st, value))
        if not found:
            unexplained.append((f"`{t['best_baseline']}`", sc, st, 0.0))
    lines = [
        f"- significantly worse than the best hand-written policy on {len(worse)} of {len(tables)} settings; "
        "what the winner does there that this agent cannot (a setting may count under more than one):"
    ]
    lines += [
        f"  - {_reason_text(card, kind, items)}, {len(items)}: {_where(items)}"
        for kind, items in groups.items()
        if items
    ]
    if unexplained:
        none = (
            "the winner is one of the policies it picks from (no reason in its action space)"
            if card.get("selector")
            else "no such reason in the card's measurements"
        )
        lines.append(f"  - {none}, {len(unexplained)}: {_where(unexplained)}")
        lines += _pick_lines(card, [(sc, st, t) for sc, st, t in worse if not _reasons(card, t)])
    seen = _trained_presets(card["training"])
    unseen = sorted({sc for sc, _, _ in worse if sc in PRESETS and sc not in seen})
    if unseen:
        lines.append(
            f"- {len(unseen)} of the teaching presets it is worse on never appeared in its training episodes "
            f"(`env.presets` of its training config or of a run it continued): {', '.join(unseen)}"
        )
    return lines


def _pick_lines(card: dict[str, Any], worse: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    """For a selector, per setting where it is worse and its winner is one of its policies: how often it handed
    its decision points to the winner, and to the policies it picked most (the table's ``picks``, measured for these
    weights by :func:`add_pick_shares`)."""
    lines, pool = [], card.get("selector") or ()
    for sc, st, t in worse if pool else ():
        picks = t.get("picks") or {}
        if picks.get("sha256") != card["sha256"]:
            continue
        shares, winner = picks.get("shares"), t["best_baseline"]
        if not isinstance(shares, dict) or not all(
            p in pool and isinstance(v, (int, float)) and 0 <= v <= 1 for p, v in shares.items()
        ):
            raise ModelError(f"model card: picks of {sc} ({st}) must map policies of its selector to shares in [0, 1]")
        others = [f"`{p}` {100 * v:.0f} %" for p, v in shares.items() if p != winner and v >= 0.005][:3]
        lines.append(
            f"    - {sc} ({st}): it handed the winner `{winner}` {100 * shares.get(winner, 0.0):.0f} % of its decision "
            "points" + (f", the others mostly to {', '.join(others)}" if others else "")
        )
    return lines


def hindsight_vs_best(pool: Sequence[str], t: dict[str, Any]) -> dict[str, Any] | None:
    """For a selector over ``pool``: the best of its policies on each run of table ``t``, picked in hindsight
    (the lowest objective of their runs on that seed), paired against the table's best hand-written policy
    (:func:`paired_difference`); ``None`` if a policy of the pool or the best was not run there."""
    runs, best = t.get("objective_runs") or {}, t["best_baseline"]
    if best not in runs or any(p not in runs for p in pool):
        return None
    return paired_difference([min(per_seed) for per_seed in zip(*(runs[p] for p in pool))], runs[best])


def _hindsight_lines(card: dict[str, Any]) -> list[str]:
    """For a selector: how much keeping one of its policies for a whole run could gain at most, measured on the
    card's own runs (:func:`hindsight_vs_best`): on how many settings the hindsight pick is significantly better
    than the best policy, and its difference beside the agent's on the held-out workloads."""
    pool = card.get("selector")
    if not pool:
        return []
    tables = _settings(card)
    settings = {key: hindsight_vs_best(pool, t) for key, t in tables.items() if "error" not in t}
    found = {key: vs for key, vs in settings.items() if vs is not None}
    if not found:
        return []
    better = sum(vs["verdict"] == "better" for vs in found.values())
    held = [
        f"{percent_change(vs, tenths=True)} +- {ci_percent(vs, tables[(sc, st)])} with {st} preemption (agent "
        f"{percent_change(tables[(sc, st)]['vs_best'], tenths=True)})"
        for (sc, st), vs in found.items()
        if sc == HELD_OUT
    ]
    return [
        f"- what keeping one of its {len(pool)} policies for a whole run could gain at most: the best of them on each "
        "run, picked in hindsight (knowing how all their runs turned out, which no scheduler can), against the best "
        f"single hand-written policy: significantly better on {better} of {len(found)} settings"
        + (f"; on the held-out {HELD_OUT} {'; '.join(held)}" if held else "")
    ]


def _largest_run_lines(card: dict[str, Any]) -> list[str]:
    """On the held-out workloads: the run that carries the largest share of the agent's or the best policy's
    summed objective, both shares, and the agent's paired difference to that policy without that run. Where one
    run carries much of a mean (on hetero-1500 with costly preemption, a cascade of preemptions:
    models/HISTORY.md), the verdict there hinges on that run, and a narrower CI needs the agent to win it as well
    as the others."""
    agent = f"rl:{card['name']}"
    lines = []
    for (sc, st), t in _settings(card).items():
        runs = t.get("objective_runs") or {}
        best, mine, seeds = runs.get(t.get("best_baseline")) or [], runs.get(agent) or [], t.get("seeds") or []
        if (
            sc != HELD_OUT
            or len(best) < 3
            or min(sum(best), sum(mine)) <= 0
            or not len(best) == len(mine) == len(seeds)
        ):
            continue
        best_sum, mine_sum = sum(best), sum(mine)
        i = max(range(len(best)), key=lambda k: max(best[k] / best_sum, mine[k] / mine_sum))
        others = best[:i] + best[i + 1 :]
        rest = {"best_baseline": "best", "objective_runs": {"best": others}}  # the table less run i, for ci_percent
        vs = paired_difference(mine[:i] + mine[i + 1 :], others)
        lines.append(
            f"- on the held-out {sc} with {st} preemption, one of its {len(best)} runs (seed {seeds[i]}) carries "
            f"{100 * mine[i] / mine_sum:.0f} % of the agent's summed objective and {100 * best[i] / best_sum:.0f} % "
            f"of `{t['best_baseline']}`'s; without that run the agent is {percent_change(vs, tenths=True)} +- "
            f"{ci_percent(vs, rest)} ({vs['verdict']}) against it"
        )
    return lines


def ci_percent(vs: Mapping[str, Any], t: dict[str, Any]) -> str:
    """A paired difference's 95 % CI half-width in percent of table ``t``'s best policy's mean objective
    (absolute where that mean is 0, as :func:`percent_change` states the difference)."""
    runs = t["objective_runs"][t["best_baseline"]]
    base = sum(runs) / len(runs)
    return f"{100 * vs['ci95'] / base:.1f} %" if base else f"{vs['ci95']:.2g} absolute"


def _lineage(tr: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A card's ``training`` section, then those of the runs it continued (``init_from``), parent after child."""
    run: dict[str, Any] | None = tr
    while run:
        yield run
        run = (run.get("init_from") or {}).get("training")


def _trained_presets(tr: dict[str, Any]) -> set[str]:
    """The teaching presets among a run's training episodes (``env.presets``), its parents' included."""
    seen: set[str] = set()
    for run in _lineage(tr):
        presets = ((run.get("config") or {}).get("env") or {}).get("presets")
        seen.update(p for p in (presets if isinstance(presets, list) else ()) if isinstance(p, str))
    return seen


def _reason_text(card: dict[str, Any], kind: str, items: list[tuple[str, str, str, float]]) -> str:
    """The sentence for one kind of :data:`REASONS`, with the range of its values over ``items``."""
    lo, hi = min(v for *_, v in items), max(v for *_, v in items)
    if kind == "preempts":
        span = f"{lo:,.1f}" if lo == hi else f"{lo:,.1f}-{hi:,.1f}"
        return f"the winner preempts ({span} preemptions per run) and this agent, without an `evict` rule, never does"
    if kind == "resizes":
        span = f"{100 * lo:.0f} %" if lo == hi else f"{100 * lo:.0f}-{100 * hi:.0f} %"
        return f"the winner resizes elastic jobs ({span} of the jobs elastic) and this agent cannot resize a job"
    if kind == "placement":
        rules = EncodingConfig.from_dict(card["encoding"]).rules
        return f"the winner places with a rule not among this agent's rules ({', '.join(rules)})"
    if kind == "outside":
        span = f"{100 * lo:+.1f} %" if lo == hi else f"{100 * lo:+.1f} % to {100 * hi:+.1f} %"
        return (
            "the winner, a teacher, run within this agent's own actions (`teacher:NAME`: its encoding's window, "
            f"GPU-type slots and eviction scope) is significantly worse than registered ({span}): some of the "
            "winner's choices are not this agent's to make"
        )
    if kind == "within":
        return (
            "the winner, or a teacher standing in for it (in brackets: one that ties it, or one that orders as it "
            "does, placing by its rule), run within this agent's own actions "
            "(`teacher:NAME`: its encoding's window, GPU-type slots and eviction scope) does as well as the "
            "registered winner (no significant paired difference): the agent could have made choices as good as "
            "the winner's, so what it lacks there is learned, not its actions"
        )
    return "the winner is not among the policies this selector picks from"


def _where(items: list[tuple[str, str, str, float]]) -> str:
    """``winner on scenario (settings), ...; ...``: the settings of ``items`` grouped by winner, then scenario."""
    by: dict[str, dict[str, list[str]]] = {}
    for label, sc, st, _ in items:
        by.setdefault(label, {}).setdefault(sc, []).append(st)
    return "; ".join(
        f"{label} on " + ", ".join(f"{sc} ({', '.join(sts)})" for sc, sts in scs.items()) for label, scs in by.items()
    )


def _reasons(card: dict[str, Any], t: dict[str, Any]) -> list[tuple[str, str, float]]:
    """What the winner of table ``t`` (its best hand-written policy) does that the card's agent cannot, as
    ``(kind, winner, value)``: for a selector, ``pool`` (the winner is not one of its policies); otherwise
    ``preempts`` (the winner preempted, its mean preemptions per run, and the agent has no ``evict`` rule),
    ``resizes`` (the winner is an elastic scheduler and the workload's share of elastic jobs is above 0: no agent
    resizes), ``placement`` (the winner's placement rule, :func:`placement_rule`, is not among the agent's) and,
    where the table holds the runs of the teacher standing in for the winner within the agent's own encoding
    (:func:`add_within_runs`), ``within`` (they are not significantly worse than the registered winner's: the
    agent's actions could score as the winner does) or, where that teacher is the winner, ``outside`` (they are
    significantly worse: their relative difference)."""
    winner = t["best_baseline"]
    pool = card.get("selector")
    if pool:
        return [] if winner in pool else [("pool", f"`{winner}`", 0.0)]
    rules = EncodingConfig.from_dict(card["encoding"]).rules
    out = []
    preemptions = t["mean_ci95"][winner]["preemptions"][0] or 0.0
    if preemptions > 0 and EVICT not in rules:
        out.append(("preempts", f"`{winner}`", preemptions))
    if winner not in SCHEDULERS:  # a policy no longer registered: nothing more is known of it
        return out
    scheduler = SCHEDULERS[winner].factory()
    share = scenario_from_dict(t["scenario"]).workload.elastic if isinstance(scheduler, ElasticGreedy) else 0.0
    if share > 0:
        out.append(("resizes", f"`{winner}`", share))
    rule = placement_rule(winner, scheduler)
    if rule is not None and rule not in rules:
        out.append(("placement", f"`{winner}`" + ("" if rule == winner else f" ({rule})"), 0.0))
    measured = t.get("within_actions") or {}
    if measured.get("winner") == winner:  # add_within_runs
        teacher = measured["teacher"]
        vs = paired_difference(measured["objective_runs"], t["objective_runs"][winner])
        if vs["verdict"] != "worse":
            as_ = "" if teacher == winner else f" (as `{teacher}` by {measured['rule']})"
            out.append(("within", f"`{winner}`{as_}", 0.0))
        elif teacher == winner:  # a worse stand-in says nothing of the winner's own choices
            out.append(("outside", f"`{winner}`", vs["relative"] if vs["relative"] is not None else math.inf))
    return out


def placement_rule(name: str, scheduler: Any) -> str | None:
    """The placement rule registered scheduler ``name`` (built: ``scheduler``) places with, named as encodings
    name rules: a rule of :data:`~engine.schedulers.placement.PLACEMENTS` by its name, a registered teacher's
    :data:`~engine.rl.teacher.REGISTERED_RULE`, a placement of its own (fgd's, topo-pack's) by the scheduler's
    name; ``None`` where the scheduler does not expose one (easy-backfill, tiresias, the elastic ones)."""
    if isinstance(scheduler, TeacherScheduler):
        return REGISTERED_RULE
    placement = getattr(scheduler, "placement", None)
    if placement is None:
        return None
    for rule, make in PLACEMENTS.items():
        made = make()
        # Rules that are functions are one object; a rule class makes a new instance each time (same class).
        if made is placement or (type(made) is type(placement) and type(made).__module__.startswith("engine.")):
            return rule
    return name


def _settings(card: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(scenario, preemption setting) -> table of a card's evaluation (empty for cards without one)."""
    scenarios = card.get("evaluation", {}).get("scenarios", {})
    return {(sc, st): t for sc, by in scenarios.items() for st, t in by.items() if isinstance(t, dict)}


def _teacher(training: dict[str, Any]) -> str:
    """The teacher a model's warm start cloned: its own run's, or for a continued run its parent's."""
    clone = training["config"].get("clone")
    if clone:
        return str(clone.get("teacher", "none"))
    parent = training.get("init_from")
    return _teacher(parent["training"]) if parent else "none"


def _comparison(card: dict[str, Any], other: dict[str, Any]) -> list[str]:
    """A table comparing two models trained on the same episodes with different networks."""
    lines = [
        f"## {card['policy']['kind']} vs {other['policy']['kind']} (`rl:{other['name']}`, same episodes and objective)",
        "",
        "| | " + f"rl:{card['name']} | rl:{other['name']} |",
        "|---|---|---|",
    ]
    size = [f"{(MODELS_DIR / c['weights']).stat().st_size / 1024:.0f} KiB weights" for c in (card, other)]
    speed = [f"{c['training']['timesteps'] / c['training']['wall_time_s']:.0f} steps/s" for c in (card, other)]
    lines.append(f"| network | {card['policy']['kind']}, {size[0]} | {other['policy']['kind']}, {size[1]} |")
    window = [
        f"{c['encoding']['window']} jobs ({c['encoding']['window_order']}), teacher {_teacher(c['training'])}"
        for c in (card, other)
    ]
    lines.append(f"| window, teacher | {window[0]} | {window[1]} |")
    lines.append(
        f"| training | {card['training']['timesteps']:,} steps, {speed[0]} | "
        f"{other['training']['timesteps']:,} steps, {speed[1]} |"
    )
    for (sc, setting), t in _settings(card).items():
        o = _settings(other).get((sc, setting), {})
        if "mean_ci95" not in t or "mean_ci95" not in o:
            continue
        a, b = t["mean_ci95"][f"rl:{card['name']}"], o["mean_ci95"][f"rl:{other['name']}"]
        lines.append(
            f"| {sc}, {setting} preemption: mean wait s / objective | "
            f"{_fmt(a['mean_wait_s'][0], 'mean_wait_s')} / "
            f"{_fmt(a['objective'][0], 'objective')} | {_fmt(b['mean_wait_s'][0], 'mean_wait_s')} / "
            f"{_fmt(b['objective'][0], 'objective')} |"
        )
    return [*lines, ""]


def kept_tables(name: str, only: frozenset[str], seeds: int, general_seeds: int) -> dict[str, Any]:
    """The tables of model ``name``'s card for every scenario not in ``only``, checked to be from the same
    weights and seeds as the run about to add the others (else an error says to evaluate them all again)."""
    card = read_card(name, MODELS_DIR)
    ev = card.get("evaluation") or {}
    if ev.get("sha256") != card["sha256"] or not ev.get("scenarios"):
        raise EngineError(f"{name}: the card's stored tables are not of its weights; evaluate every scenario")
    if ev["seeds"]["train"] != f"0..{seeds - 1}" or ev["seeds"]["general"] != f"0..{general_seeds - 1}":
        raise EngineError(f"{name}: the card's stored tables use other seeds ({ev['seeds']}); evaluate every scenario")
    return {sc: by for sc, by in ev["scenarios"].items() if sc not in only}


def write_cards(
    plans: dict[str, dict[str, Any]],
    seeds: int = 30,
    general_seeds: int = 10,
    workers: int = 1,
    cache_dir: Path | None = None,
    cached_only: bool = False,
    only: frozenset[str] | None = None,
    baselines_from: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Evaluate the models of ``plans`` (model -> plan, as in :data:`PLANS`) and rewrite their cards (see
    :func:`evaluate_cards`); with ``only`` (scenarios of the plans), just those scenarios run and the card's other
    tables are kept."""
    unplanned = sorted((only or set()) - {sc for plan in plans.values() for sc in plan_scenarios(plan)})
    if unplanned:
        raise EngineError(f"only: not in the models' plans: {', '.join(unplanned)}")
    kept = None if only is None else {n: kept_tables(n, only, seeds, general_seeds) for n in plans}
    sections = evaluate_cards(plans, seeds, general_seeds, workers, cache_dir, cached_only, kept, baselines_from)
    cards = {}
    for name, section in sections.items():
        cards[name] = read_card(name, MODELS_DIR)
        section["sha256"] = cards[name]["sha256"]
        cards[name]["evaluation"] = section
    add_within_runs(cards, workers)
    add_pick_shares(cards, workers)
    return {name: _save(name, card) for name, card in cards.items()}


def _save(name: str, card: dict[str, Any]) -> dict[str, Any]:
    card.pop("targets", None)
    card["beats_best_baseline"] = card["evaluation"]["summary"]["beats_best_baseline"]
    card["verdict"] = card["evaluation"]["summary"]["verdict"]
    atomic_write_json(MODELS_DIR / f"{name}.json", card, allow_nan=True)
    atomic_write_text(MODELS_DIR / f"{name}.md", render_markdown(card))
    return card


def rerender(name: str) -> dict[str, Any]:
    """Recompute the summary from the card's stored tables and rewrite the card and its Markdown (no runs)."""
    card = read_card(name, MODELS_DIR)
    ev = card["evaluation"]
    ev["summary"] = summary(f"rl:{name}", ev["scenarios"])
    return _save(name, card)


def missing_baselines(table: dict[str, Any]) -> list[str]:
    """The registered schedulers a stored table has no runs of (in registry order)."""
    return [s for s in baselines() if s not in table["mean_ci95"]]


def _baseline_task_rows(
    task: tuple[str, tuple[int, ...], str, tuple[str, ...]], built: Mapping[str, Callable[[], Any]] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Schedulers ``names`` (registered, or built by ``built``) on a stored table's scenario (JSON text), seeds
    and preemption setting, each run's metrics with the objective's terms, exactly as :func:`evaluate_model`
    runs its baselines."""
    scenario, seeds, setting, names = task
    ev = evaluate(
        list(names),
        scenario_from_dict(json.loads(scenario)),
        seeds,
        extra=_term_metrics(),
        options=RunOptions(preemption=PREEMPTION[setting]),
        built=built,
    )
    return ev.runs


#: The teacher that orders as a non-blocking FIFO list scheduler does: the oldest waiting job that fits.
FIFO_TEACHER = "fifo-fast"


def _stand_in(t: dict[str, Any]) -> tuple[str, str] | None:
    """The teacher and placement rule whose choices stand for table ``t``'s winner: the winner itself where it is a
    teacher; else the teacher with the lowest mean objective among those not significantly worse than the winner
    on the table's seeds (a tie, so matching it matches the winner); else, for a winner that walks the queue in
    arrival order skipping what does not fit (fgd, topo-pack), :data:`FIFO_TEACHER` placing with the winner's rule
    (:func:`placement_rule`). ``None`` where none of these applies."""
    winner, runs = t["best_baseline"], t["objective_runs"]
    if winner in TEACHERS:
        return winner, REGISTERED_RULE
    ties = [
        (sum(runs[s]) / len(runs[s]), s)
        for s in sorted(set(runs) & set(TEACHERS))
        if paired_difference(runs[s], runs[winner])["verdict"] != "worse"
    ]
    if ties:
        return min(ties)[1], REGISTERED_RULE
    scheduler = SCHEDULERS[winner].factory() if winner in SCHEDULERS else None
    fifo = isinstance(scheduler, ListScheduler) and not scheduler.blocking and _arrival_order(scheduler.order)
    rule = placement_rule(winner, scheduler) if fifo else None
    return None if rule is None else (FIFO_TEACHER, rule)


def _arrival_order(order: Any) -> bool:
    """Whether ``order`` is arrival order itself (a :class:`StaticKeyOrder` without a key)."""
    return isinstance(order, StaticKeyOrder) and order.key is None


def _within_task(card: dict[str, Any], t: dict[str, Any], setting: str) -> tuple | None:
    """The run that says whether the winner of table ``t`` chose within the card's agent's actions (``t``'s
    ``within_actions``): needed where the agent, not a selector, is significantly worse than the winner, a teacher
    stands in for it (:func:`_stand_in`) with a rule of the agent's encoding, and not yet stored for that winner,
    teacher and rule. As (scenario JSON, seeds, setting, teacher, rule, the agent's encoding JSON); ``None`` where
    none is needed."""
    if card.get("selector") or "error" in t or t["vs_best"]["verdict"] != "worse":
        return None
    stand_in, encoding = _stand_in(t), card.get("encoding") or {}
    if stand_in is None or stand_in[1] not in encoding.get("rules", ()):
        return None
    stored = t.get("within_actions") or {}
    if (stored.get("winner"), stored.get("teacher"), stored.get("rule")) == (t["best_baseline"], *stand_in):
        return None
    scenario = json.dumps(t["scenario"], sort_keys=True)
    return scenario, tuple(t["seeds"]), setting, *stand_in, json.dumps(encoding, sort_keys=True)


def _within_rows(task: tuple) -> list[dict[str, Any]]:
    """The metrics of each run of a :func:`_within_task`: its teacher as ``teacher:NAME`` within the encoding,
    placing with its rule (:func:`~engine.rl.teacher.within`)."""
    scenario, seeds, setting, teacher, rule, encoding = task
    name, cfg = f"teacher:{teacher}", EncodingConfig.from_dict(json.loads(encoding))
    built = {name: partial(within, teacher, cfg, rule)}
    return _baseline_task_rows((scenario, seeds, setting, (name,)), built)[name]


def _needed(
    cards: Mapping[str, dict[str, Any]], task_of: Callable[[dict[str, Any], dict[str, Any], str], tuple | None]
) -> dict[tuple[str, str, str], tuple]:
    """``(model, scenario, setting) -> task`` for each table of ``cards`` where ``task_of(card, table, setting)``
    names a run the card still needs."""
    wanted = {}
    for name, card in cards.items():
        for (sc, st), t in _settings(card).items():
            task = task_of(card, t, st)
            if task is not None:
                wanted[name, sc, st] = task
    return wanted


def add_within_runs(cards: Mapping[str, dict[str, Any]], workers: int = 1) -> None:
    """Store in each table of ``cards`` (model -> card, changed in place) that needs it (:func:`_within_task`)
    the per-seed objectives of the teacher and rule that stand in for the winner (:func:`_stand_in`) within the
    agent's own encoding, as ``within_actions`` = ``{"winner": NAME, "teacher": NAME, "rule": RULE,
    "objective_runs": [...]}`` (the same seeds as the table, so they pair). Each (workload, teacher, rule,
    encoding) runs once for all the cards, by ``workers`` processes."""
    wanted = _needed(cards, _within_task)
    tasks = list(dict.fromkeys(wanted.values()))
    done = dict(zip(tasks, _map(_within_rows, tasks, workers)))
    for (name, sc, st), task in wanted.items():
        weights = RewardWeights.from_dict(cards[name]["reward"])
        runs = [_objective(row, weights) for row in done[task]]
        t = cards[name]["evaluation"]["scenarios"][sc][st]
        t["within_actions"] = {
            "winner": t["best_baseline"],
            "teacher": task[3],
            "rule": task[4],
            "objective_runs": runs,
        }


def _picks_task(card: dict[str, Any], t: dict[str, Any], setting: str) -> tuple | None:
    """The runs that say which policies a selector handed its decision points to on table ``t`` (``t``'s ``picks``):
    needed where the card's agent is a selector significantly worse than the winner and no shares are stored for
    its weights. As (scenario JSON, seeds, setting, model name); ``None`` where none is needed."""
    if not card.get("selector") or "error" in t or t["vs_best"]["verdict"] != "worse":
        return None
    if (t.get("picks") or {}).get("sha256") == card["sha256"]:
        return None
    return json.dumps(t["scenario"], sort_keys=True), tuple(t["seeds"]), setting, card["name"]


def _pick_shares(task: tuple) -> dict[str, float]:
    """The share of the decision points of the runs of a :func:`_picks_task` that each of the selector's policies
    decided (those with a waiting job, where its network chooses; wake-ups go to the current policy)."""
    scenario, seeds, setting, name = task
    agents: list[SelectorScheduler] = []

    def built() -> SelectorScheduler:
        agent = load_agent(name)
        if not isinstance(agent, SelectorScheduler):
            raise EngineError(f"{name} is not a selector")
        agents.append(agent)
        return agent

    _baseline_task_rows((scenario, seeds, setting, (f"rl:{name}",)), {f"rl:{name}": built})
    counts: Counter[str] = Counter()
    for agent in agents:
        counts.update({agent.switch.names[k]: n for k, n in agent.decided.items()})
    total = sum(counts.values()) or 1
    return {policy: n / total for policy, n in counts.most_common()}


def add_pick_shares(cards: Mapping[str, dict[str, Any]], workers: int = 1) -> None:
    """Store in each table of ``cards`` (model -> card, changed in place) where a selector is significantly worse
    than the winner (:func:`_picks_task`) the share of its decision points each of its policies decided, as
    ``picks`` = ``{"sha256": its weights', "shares": {policy: share, ...}}`` (most first), by ``workers``
    processes: where the winner is one of its policies, this says how often it handed the decision to it."""
    wanted = _needed(cards, _picks_task)
    tasks = list(dict.fromkeys(wanted.values()))
    done = dict(zip(tasks, _map(_pick_shares, tasks, workers)))
    for (name, sc, st), task in wanted.items():
        t = cards[name]["evaluation"]["scenarios"][sc][st]
        t["picks"] = {"sha256": cards[name]["sha256"], "shares": done[task]}


def add_runs(me: str, table: dict[str, Any], rows: dict[str, list[dict[str, Any]]], weights: RewardWeights) -> None:
    """Add schedulers' runs (``rows``: scheduler -> one metrics row per seed of the table) to a stored table in
    place: their means and CIs, per-seed objectives and oracle marks; every stored number is kept, the paired
    comparisons recomputed over all of them."""
    runs = {s: [{**r, "objective": _objective(r, weights)} for r in rs] for s, rs in rows.items()}
    ev = Evaluation(scenario_from_dict(table["scenario"]), tuple(table["seeds"]), runs, next(iter(runs)))
    stats = ev.stats()
    for s in runs:
        table["mean_ci95"][s] = _means(stats, s)
        table["objective_runs"][s] = ev.values(s, "objective")
    table["oracles"] += [s for s in runs if SCHEDULERS[s].oracle]
    table.update(compare_runs(me, table["objective_runs"]))


def _missing_task(table: dict[str, Any], setting: str) -> tuple[str, tuple[int, ...], str, tuple[str, ...]] | None:
    """The run a stored table needs to hold every registered scheduler (None: it holds them all, or is an
    error): its scenario as JSON text, its seeds, the preemption setting and the missing schedulers."""
    missing = missing_baselines(table) if "error" not in table else []
    if not missing:
        return None
    return json.dumps(table["scenario"], sort_keys=True), tuple(table["seeds"]), setting, tuple(missing)


def add_baselines(names: Sequence[str], workers: int = 1) -> dict[str, dict[str, Any]]:
    """For every stored table of the named models' cards, run only the registered schedulers missing from it
    (each (scenario, seeds, setting) once for all the models, by ``workers`` processes), add their runs
    (:func:`add_runs`), recompute the summary and verdict, run the winners within the agents' own actions where
    the why-section needs them (:func:`add_within_runs`), count a selector's picks where it loses
    (:func:`add_pick_shares`) and rewrite the cards. Stored numbers are kept."""
    cards: dict[str, dict[str, Any]] = {}
    for name in names:
        if name not in model_names(MODELS_DIR):
            raise EngineError(f"no model card {name!r} in {MODELS_DIR.name}/")
        cards[name] = read_card(name, MODELS_DIR)
        ev = cards[name].get("evaluation") or {}
        if ev.get("sha256") != cards[name]["sha256"] or not ev.get("scenarios"):
            raise EngineError(f"{name}: the card's stored tables are not of its weights; evaluate every scenario")
    needed = (_missing_task(t, st) for card in cards.values() for (_, st), t in _settings(card).items())
    tasks = list(dict.fromkeys(t for t in needed if t is not None))
    done = dict(zip(tasks, _map(_baseline_task_rows, tasks, workers)))
    for name, card in cards.items():
        weights = RewardWeights.from_dict(card["reward"])
        for (_, setting), t in _settings(card).items():
            task = _missing_task(t, setting)
            if task is not None:
                add_runs(f"rl:{name}", t, done[task], weights)
        card["evaluation"]["summary"] = summary(f"rl:{name}", card["evaluation"]["scenarios"])
    add_within_runs(cards, workers)
    add_pick_shares(cards, workers)
    return {name: _save(name, card) for name, card in cards.items()}
