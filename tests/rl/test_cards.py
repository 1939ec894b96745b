"""Model cards: every hand-written policy is a baseline, the verdict follows the paired numbers, honestly."""

from __future__ import annotations

import dataclasses
import json

import pytest

from engine import SCHEDULERS
from engine.analysis.evaluate import SCENARIOS, Evaluation, scenario_from_dict
from engine.analysis.metrics import METRICS
from engine.errors import EngineError
from engine.rl import cards
from engine.rl.agent import MODELS_DIR, ModelError, model_names, read_card
from engine.rl.train import CONFIGS_DIR, DEPLOY_OPTIONS, load_config
from engine.sim.cluster import parse_cluster

SHOWN = cards.SHOWN


def _ev(objectives: dict[str, list[float]]) -> Evaluation:
    runs = {
        s: [{**{m: 1.0 for m in METRICS}, "mean_wait_s": 100.0 * v, "objective": v} for v in vals]
        for s, vals in objectives.items()
    }
    return Evaluation(SCENARIOS["v100-32"], tuple(range(len(next(iter(objectives.values()))))), runs, "first-fit")


# Per-seed objectives (same workloads for every scheduler). On "a" the agent beats every fair policy clearly;
# on "b" short-fast is better than the agent on every seed; the oracle is best everywhere but never the bar.
TABLES = {
    "a": _ev(
        {
            "rl:m": [1.0, 1.1, 0.9, 1.0],
            "first-fit": [2.0, 2.2, 1.9, 2.1],
            "short-fast": [1.2, 1.3, 1.1, 1.2],
            "sjf-oracle": [0.5, 0.5, 0.5, 0.5],
        }
    ),
    "b": _ev(
        {
            "rl:m": [1.0, 1.1, 0.9, 1.0],
            "first-fit": [2.0, 2.2, 1.9, 2.1],
            "short-fast": [0.8, 0.9, 0.7, 0.8],
            "sjf-oracle": [0.5, 0.5, 0.5, 0.5],
        }
    ),
}


def _fake(name, scenario, seeds, setting="free"):
    if scenario == "philly":
        raise EngineError("real traces not found")
    return TABLES[scenario]


#: A card's training section, as little of it as the renderer reads.
TRAINING = {
    "timesteps": 10,
    "wall_time_s": 1.0,
    "machine": "x",
    "kept": "final",
    "libraries": {"torch": "1"},
    "config": {"env": {"clusters": [], "loads": [], "n_jobs": 1}, "curriculum": []},
}


def _card(ev: dict | None = None, name: str = "m", training: dict | None = None, **extra) -> dict:
    """A card of model ``name`` with the evaluation ``ev`` (none if ``None``), ``training`` (default
    :data:`TRAINING`) and the ``extra`` keys."""
    card = {
        "name": name,
        "description": "d",
        "weights": f"{name}.npz",
        "sha256": "0" * 64,
        "policy": {"kind": "mlp"},
        "encoding": {},
        "reward": {"wait": 1.0, "wait_scale_s": 3600.0},
        "training": dict(training or TRAINING),
        **extra,
    }
    if ev is not None:
        card["evaluation"] = ev
    return card


def test_card_compares_with_the_best_fair_policy_and_says_so_plainly(monkeypatch):
    monkeypatch.setattr(cards, "evaluate_model", _fake)
    ev = cards.card_evaluation("m", {"train": ["a"], "larger": "b", "philly": "philly"}, 4, 4)
    a = ev["scenarios"]["a"]["costly"]
    assert a["best_baseline"] == "short-fast" and a["oracles"] == ["sjf-oracle"]  # the oracle is not the bar
    assert a["vs_best"]["diff"] == pytest.approx(-0.2) and a["vs_best"]["ci95"] == pytest.approx(0.0, abs=1e-12)
    assert a["vs_best"]["verdict"] == "better" and a["vs"]["sjf-oracle"]["verdict"] == "worse"
    b = ev["scenarios"]["b"]["free"]
    assert b["best_baseline"] == "short-fast" and b["vs_best"]["verdict"] == "worse"
    assert b["vs_best"]["relative"] == pytest.approx(0.2 / 0.8)
    assert "not found" in ev["scenarios"]["philly"]["free"]["error"]
    s = ev["summary"]
    assert s["beats_best_baseline"] is False and (s["settings"], s["better"], s["worse"]) == (4, 2, 2)
    assert s["verdict"].startswith("rl:m does not beat the best hand-written policy")
    assert "better on 2 (a with free preemption vs short-fast (-17 %); a with costly" in s["verdict"]
    assert "worse on 2 (b with free preemption vs short-fast (+25 %)" in s["verdict"]

    card = {**_card(ev), "verdict": s["verdict"]}
    text = cards.render_markdown(card)
    assert f"**Verdict: {s['verdict']}**" in text
    assert "| sjf-oracle (oracle) |" in text
    assert "Agent minus the best hand-written policy (`short-fast`): -0.200 +- 0.000 (-16.7 %): **better**" in text
    assert "### philly, costly preemption" in text and "not evaluated: real traces not found" in text


def test_only_reruns_the_named_scenarios_and_keeps_the_cards_other_tables(monkeypatch, tmp_path):
    monkeypatch.setattr(cards, "MODELS_DIR", tmp_path)
    monkeypatch.setattr(cards, "evaluate_model", _fake)
    plan = {"train": ["a"], "larger": "b", "philly": "philly"}
    stored = {**cards.card_evaluation("m", plan, 4, 4), "sha256": "0" * 64}  # as write_cards stores it
    (tmp_path / "m.json").write_text(json.dumps(_card(stored)))
    before = json.loads((tmp_path / "m.json").read_text())["evaluation"]["scenarios"]

    ran = []

    def only_b(name, scenario, seeds, setting="free"):
        ran.append(scenario)
        return TABLES["a"]  # b's new tables: the agent is now better there

    monkeypatch.setattr(cards, "evaluate_model", only_b)
    card = cards.write_cards({"m": plan}, 4, 4, only=frozenset({"b"}))["m"]
    assert set(ran) == {"b"}  # neither a nor philly ran again
    after = card["evaluation"]["scenarios"]
    assert after["a"] == before["a"] and after["philly"] == before["philly"]
    assert after["b"]["free"]["vs_best"]["verdict"] == "better"
    assert (card["evaluation"]["summary"]["better"], card["evaluation"]["summary"]["worse"]) == (4, 0)
    assert card["evaluation"]["sha256"] == "0" * 64 and "### b, free preemption" in (tmp_path / "m.md").read_text()

    with pytest.raises(EngineError, match="other seeds"):  # tables of other seeds are never mixed in
        cards.write_cards({"m": plan}, 5, 4, only=frozenset({"b"}))
    card["sha256"] = "1" * 64  # new weights: the stored tables are of the old ones
    (tmp_path / "m.json").write_text(json.dumps(card))
    with pytest.raises(EngineError, match="not of its weights"):
        cards.write_cards({"m": plan}, 4, 4, only=frozenset({"b"}))
    with pytest.raises(EngineError, match="only: not in the models' plans: c"):
        cards.write_cards({"m": plan}, 4, 4, only=frozenset({"b", "c"}))


def test_a_plan_is_the_shipped_one_or_built_from_the_training_scenarios():
    assert cards.plan_of("wait-mlp") is cards.PLANS["wait-mlp"]
    plan = cards.plan_of("mine", ["v100-32", "mixed-32"], larger="v100-64")
    assert plan == {
        "train": ["v100-32", "mixed-32"],
        "larger": "v100-64",
        "philly": "philly-64",
        "held_out": "hetero-1500",
        "presets": list(cards.TEACHING),
    }
    assert all(p["held_out"] == "hetero-1500" for p in cards.PLANS.values())  # issue 38's verdict, on every card
    assert cards.plan_scenarios(plan).index("hetero-1500") == 4  # after the Philly window, before the presets
    with pytest.raises(EngineError, match="no evaluation plan for 'mine'"):
        cards.plan_of("mine")
    with pytest.raises(EngineError, match="nope"):
        cards.plan_of("mine", ["nope"])


def test_every_shipped_card_was_evaluated_on_its_plan():
    """So ``python -m engine cards NAME`` re-evaluates any shipped model on the settings its card shows."""
    names = model_names()
    assert names
    for name in names:
        card = json.loads((MODELS_DIR / f"{name}.json").read_text())
        assert card["evaluation"]["plan"] == cards.plan_of(name), name


@pytest.mark.parametrize(
    "argv,message",
    [
        (["cards", "mine"], "no evaluation plan for 'mine'"),
        (["cards", "wait-mlp", "--only", "nowhere"], "only: not in the models' plans: nowhere"),
        (["cards", "wait-mlp", "--seeds", "0"], "--seeds"),
        (["cards", "wait-mlp", "--add-baselines", "--only", "v100-32"], "--add-baselines adds runs to every stored"),
        (["cards", "nope", "--add-baselines"], "no model card 'nope'"),
    ],
)
def test_the_cards_command_refuses_bad_input_in_one_line(argv, message, capsys):
    from engine.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_an_agent_better_everywhere_beats_the_best_baseline(monkeypatch):
    monkeypatch.setattr(cards, "evaluate_model", _fake)
    ev = cards.card_evaluation("m", {"train": ["a"], "larger": "a", "philly": "philly"}, 4, 4)
    assert ev["summary"]["beats_best_baseline"] is True
    assert "lower objective than the best hand-written policy on all 2" in ev["summary"]["verdict"]


def test_every_registered_scheduler_is_a_baseline_and_oracles_are_never_the_bar():
    assert set(cards.baselines()) == set(SCHEDULERS) and "short-spare-evict-est" in cards.baselines()
    assert "sjf-oracle" in cards.baselines() and "sjf-oracle" not in cards.fair_baselines()
    assert set(cards.PREEMPTION) == {"free", "costly"}
    assert cards.PREEMPTION["costly"].checkpoint_interval_s == 1800.0
    assert cards.PREEMPTION["costly"].restart_overhead_s == 60.0


@pytest.mark.parametrize("name", model_names())
def test_shipped_cards_state_whether_they_beat_the_best_hand_written_policy(name):
    card = json.loads((MODELS_DIR / f"{name}.json").read_text())
    summary = card["evaluation"]["summary"]
    assert card["beats_best_baseline"] is summary["beats_best_baseline"]
    assert card["verdict"] == summary["verdict"] and card["verdict"] in (MODELS_DIR / f"{name}.md").read_text()
    # The Markdown is the card rendered now (cards rerender NAME), and it says why the agent loses if it does.
    assert (MODELS_DIR / f"{name}.md").read_text() == cards.render_markdown(card)
    assert ("## Why it does not beat the best policy" in cards.render_markdown(card)) is not card["beats_best_baseline"]
    # The verdict follows the stored per-seed objectives, recomputed here.
    assert cards.summary(f"rl:{name}", card["evaluation"]["scenarios"]) == summary
    for by in card["evaluation"]["scenarios"].values():
        for t in by.values():
            if "error" not in t:
                assert set(t["mean_ci95"]) == {f"rl:{name}", *SCHEDULERS}
                assert t == {**t, **cards.compare_runs(f"rl:{name}", t["objective_runs"])}
                assert len(t["seeds"]) >= 30  # every paired table, the generalisation ones too
    philly = card["evaluation"]["scenarios"]["philly-64"]["free"]["scenario"]
    assert scenario_from_dict(philly) == SCENARIOS["philly-64"]  # evaluated on the windows the scenario cuts now
    for preset in cards.TEACHING:  # generalisation to every teaching preset, with and without preemption cost
        assert set(card["evaluation"]["scenarios"][preset]) == set(cards.PREEMPTION)


def test_continued_card_says_where_its_weights_started():
    base = TRAINING
    card = _card()
    assert "retrain with `python -m engine train --config m`" in cards.render_markdown(card)
    card["training"] = {
        **base,
        "timesteps": 1_500,
        "wall_time_s": 30.0,
        "this_run": {"timesteps": 1_490, "wall_time_s": 29.0},
        "init_from": {"model": "p", "sha256": "ab" * 32, "training": base},
    }
    text = cards.render_markdown(card)
    assert "1,500 environment steps in 30 s" in text
    assert "this run 1,490 steps in 29 s" in text and "`rl:p` (SHA-256 `abababababababab...`)" in text
    assert "had trained 10 steps in 1 s" in text and "retrain with" not in text


def test_card_says_which_preemption_model_training_used():
    base = TRAINING
    env = base["config"]["env"]
    card = _card(training=base)
    assert "trained with free preemption" in cards.render_markdown(card)  # a config from before the key
    costly = {**env, "preemption": {"checkpoint_interval_s": 1800.0, "restart_overhead_s": 60.0}}
    card["training"] = {**base, "config": {"env": costly, "curriculum": []}}
    text = cards.render_markdown(card)
    assert (
        "trained with costly preemption (a preempted job kept its work up to a checkpoint every 1800 s of "
        "work, 60 s restart)"
    ) in text and "free preemption (a preempted job lost" not in text
    both = {**env, "preemptions": [costly["preemption"], {"checkpoint_interval_s": None, "restart_overhead_s": 0.0}]}
    # Configs written since read the preemption models of their run options, each model once.
    options = {**env, "options": [{"preemption": costly["preemption"]}, {"failures": "stress"}]}
    failing = {
        **env,
        "options": [{"preemption": costly["preemption"]}, {**options["options"][0], "failures": "stress"}],
    }
    for config in (both, options):
        card["training"] = {**base, "config": {"env": config, "curriculum": []}}
        assert (
            "trained with, drawn per episode, costly preemption (a preempted job kept its work up to a checkpoint "
            "every 1800 s of work, 60 s restart) or free preemption (a preempted job lost nothing)"
            in cards.render_markdown(card)
        )
    card["training"] = {**base, "config": {"env": failing, "curriculum": []}}
    assert "trained with costly preemption (a preempted job kept its work up to a checkpoint" in cards.render_markdown(
        card
    )


def test_card_says_which_teaching_presets_training_drew_and_on_which_seeds():
    env = {**TRAINING["config"]["env"], "workloads": [{}, {"users": 3}]}
    card = _card(training={**TRAINING, "config": {"env": env, "curriculum": []}})
    assert "2 kinds of workload drawn per episode" in cards.render_markdown(card)
    assert "teaching presets `" not in cards.render_markdown(card)
    env["presets"] = ["heavy-user", "topology-packing"]
    assert (
        "2 kinds of workload drawn per episode (`training.config.env.workloads`), and the teaching presets "
        "`heavy-user`, `topology-packing` as further kinds (each preset's cluster and workload, generated with "
        "training seeds, never those of the evaluation below)"
    ) in cards.render_markdown(card)


# Literal copies of the evaluated scenarios the shipped cards stored before named scenarios were Scenarios.
OLD_CARD_SCENARIOS = [
    {
        "name": "hpc-64",
        "cluster": "8x8:V100-32",
        "n_jobs": 400,
        "load": 1.3,
        "workload": {"mix": {"training": 0.6, "batch": 0.4}, "users": 8},
        "trace": None,
        "preset": None,
        "skip_jobs": 0,
    },
    {
        "name": "philly-64",
        "cluster": "8x8:V100-32",
        "n_jobs": 300,
        "load": 1.2,
        "workload": {},
        "trace": "../shared/traces/philly/philly.csv",
        "preset": None,
        "skip_jobs": 300,
    },
    {
        "name": "heavy-user",
        "cluster": "4x8:V100-32",
        "n_jobs": 300,
        "load": 1.0,
        "workload": {},
        "trace": None,
        "preset": "heavy-user",
        "skip_jobs": 0,
    },
]


@pytest.mark.parametrize("old", OLD_CARD_SCENARIOS, ids=lambda d: d["name"])
def test_the_evaluated_scenarios_older_cards_hold_still_load(old):
    from engine.analysis.presets import PRESETS

    sc = scenario_from_dict(old)
    expected = SCENARIOS.get(old["name"]) or PRESETS[old["name"]].scenario
    assert sc == expected and scenario_from_dict(sc.to_dict()) == sc
    w = sc.workload
    assert (w.block or w.n_jobs, w.load) == (old["n_jobs"], old["load"])
    if old["preset"] is None and old["trace"] is None:
        from engine.traces.generator import generate

        assert w.build_jobs(sc.build_cluster(), 4) == generate(old["cluster"], 400, 1.3, 4, **old["workload"])


def test_the_training_config_older_cards_hold_still_loads():
    from engine.rl.env import EnvConfig
    from engine.traces.generator import generate

    old = {
        "clusters": ["8x8:V100-32", "4x8:V100-32"],
        "loads": [1.1, 1.3, 1.5],
        "n_jobs": 200,
        "workload": {"mix": {"training": 0.6, "batch": 0.4}, "users": 8},
        "encoding": {
            "window": 16,
            "max_types": 4,
            "rules": ["best-fit", "evict"],
            "window_order": "mixed",
            "evict_cost": True,
            "evict_scope": "node",
        },
        "reward": {
            "wait": 1.0,
            "jct": 0.0,
            "bounded_slowdown": 0.5,
            "utilization_band": 0.0,
            "fairness": 0.0,
            "comm": 0.0,
            "wait_scale_s": 3600.0,
            "bsld_tau_s": 10.0,
            "band_low": 0.6,
            "band_high": 0.8,
        },
        "preemptions": [
            {"checkpoint_interval_s": 1800.0, "restart_overhead_s": 60.0},
            {"checkpoint_interval_s": None, "restart_overhead_s": 0.0},
        ],
    }
    cfg = EnvConfig.from_dict(old)
    # It reads as the run options it meant, written back whole (the cards keep their old form: nothing rewrites them).
    same = {k: v for k, v in old.items() if k != "preemptions"} | {
        "options": [{"preemption": p} for p in old["preemptions"]]
    }
    assert cfg == EnvConfig.from_dict(same) == EnvConfig.from_dict(cfg.to_dict())
    assert cfg.to_dict() == same | {"options": [o.to_dict() for o in cfg.options]}
    jobs = cfg.workload_spec(1.3, 2**20 + 7).build_jobs(parse_cluster("8x8:V100-32"))
    assert jobs == generate("8x8:V100-32", 200, 1.3, 2**20 + 7, **old["workload"])
    with pytest.raises(EngineError, match="env.workload.users must be an integer"):
        EnvConfig.from_dict({**old, "workload": {"users": 0}})


def test_a_truncated_cache_entry_is_run_again_not_a_crash(monkeypatch, tmp_path):
    # Issue 32: an evaluation killed while writing a cache entry left it cut short, and every later resume
    # crashed on it (json.loads). A kept entry that is not whole is run again and rewritten.
    monkeypatch.setattr(cards, "evaluate_model", _fake)
    monkeypatch.setattr(cards, "read_card", lambda name: {"sha256": "0" * 64})
    plan = {"train": ["a"], "larger": "b", "philly": "philly"}
    first = cards.evaluate_cards({"m": plan}, 4, 4, cache_dir=tmp_path)["m"]
    entries = sorted(tmp_path.glob("*.json"))
    assert len(entries) == 6 and not list(tmp_path.glob(".*"))  # one per (scenario, setting), no temporaries
    entries[0].write_bytes(entries[0].read_bytes()[:40])  # cut short
    entries[1].write_text('{"someone-else": {}}')  # whole JSON, but not this model's tables
    ran = []

    def counted(name, scenario, seeds, setting="free"):
        ran.append((scenario, setting))
        return _fake(name, scenario, seeds, setting)

    monkeypatch.setattr(cards, "evaluate_model", counted)
    again = cards.evaluate_cards({"m": plan}, 4, 4, cache_dir=tmp_path)["m"]
    assert len(ran) == 2 and again == first
    assert all(isinstance(json.loads(e.read_text())["m"], dict) for e in entries)  # rewritten whole


def test_a_kept_table_is_not_reused_once_the_model_s_card_runs_otherwise(monkeypatch, tmp_path):
    # A model re-carded under the same name with another encoding (a deploy option) or other weights was read back
    # from the cache: its old runs, shown as the new card's. Only fields its runs do not depend on may change.
    ran = []

    def counted(name, scenario, seeds, setting="free"):
        ran.append((scenario, setting))
        return _fake(name, scenario, seeds, setting)

    card = {"sha256": "0" * 64, "encoding": {"window": 8}, "description": "first"}
    monkeypatch.setattr(cards, "evaluate_model", counted)
    monkeypatch.setattr(cards, "read_card", lambda name: card)
    plan = {"train": ["a"], "larger": "b", "philly": "philly"}
    cards.evaluate_cards({"m": plan}, 4, 4, cache_dir=tmp_path)
    card["description"] = "reworded"  # not what it runs on: the kept tables stand
    cards.evaluate_cards({"m": plan}, 4, 4, cache_dir=tmp_path)
    assert len(ran) == 6
    for change in ({"encoding": {"window": 8, "elastic_start": True}}, {"sha256": "1" * 64}):
        card.update(change)
        cards.evaluate_cards({"m": plan}, 4, 4, cache_dir=tmp_path)
    assert len(ran) == 18


def test_add_baselines_runs_only_the_missing_schedulers_and_keeps_every_stored_number(monkeypatch, tmp_path):
    # A card whose tables lack a registered scheduler (fifo): --add-baselines runs fifo alone on each table's
    # own scenario, seeds and preemption setting, and keeps every stored number.
    monkeypatch.setattr(cards, "MODELS_DIR", tmp_path)
    monkeypatch.setattr(cards, "evaluate_model", _fake)
    plan = {"train": ["a"], "larger": "b", "philly": "philly"}
    stored = {**cards.card_evaluation("m", plan, 4, 4), "sha256": "0" * 64}
    (tmp_path / "m.json").write_text(json.dumps(_card(stored)))
    before = json.loads((tmp_path / "m.json").read_text())["evaluation"]["scenarios"]
    monkeypatch.setattr(cards, "baselines", lambda: ["first-fit", "short-fast", "sjf-oracle", "fifo"])
    ran = []
    real = cards._baseline_task_rows
    monkeypatch.setattr(cards, "_baseline_task_rows", lambda task: ran.append(task[2:]) or real(task))

    card = cards.add_baselines(["m"])["m"]
    assert sorted(ran) == [("costly", ("fifo",)), ("free", ("fifo",))]  # a and b share a scenario: run once each
    fifo = cards.evaluate(
        ["fifo"], SCENARIOS["v100-32"], 4, options=cards.RunOptions(preemption=cards.PREEMPTION["costly"])
    )
    after = card["evaluation"]["scenarios"]
    for sc in ("a", "b"):
        for setting, t in after[sc].items():
            old = before[sc][setting]
            assert {s: v for s, v in t["mean_ci95"].items() if s != "fifo"} == old["mean_ci95"]
            assert {s: v for s, v in t["objective_runs"].items() if s != "fifo"} == old["objective_runs"]
            assert len(t["objective_runs"]["fifo"]) == 4 and "fifo" in t["vs"]
        wait = after[sc]["costly"]["mean_ci95"]["fifo"]["mean_wait_s"][0]
        assert wait == pytest.approx(sum(fifo.values("fifo", "mean_wait_s")) / 4)
    assert after["philly"] == before["philly"]  # an error stays an error
    assert card["evaluation"]["summary"] == cards.summary("rl:m", after)
    assert "| fifo |" in (tmp_path / "m.md").read_text()
    assert cards.add_baselines(["m"]) and len(ran) == 2  # nothing missing any more: nothing runs
    with pytest.raises(EngineError, match="no model card 'nope'"):
        cards.add_baselines(["nope"])


def test_kept_baseline_runs_are_reused_so_a_retrained_model_runs_alone(monkeypatch, tmp_path):
    """With --cache, the hand-written policies' runs are kept: evaluating the model again (a new process, new
    weights) runs only rl:NAME, and the card's numbers are the same as from fresh runs."""
    calls = []

    def fake_evaluate(names, scenario, seeds, **kw):
        calls.append(list(names))
        row = {**{f"term_{k}": 0.5 for k in cards.TERMS}, **{m: 1.0 for m in METRICS}}
        return Evaluation(SCENARIOS[scenario], tuple(range(seeds)), {n: [row] * seeds for n in names}, "first-fit")

    monkeypatch.setattr(cards, "evaluate", fake_evaluate)
    monkeypatch.setattr(cards, "read_card", lambda name: {"reward": {"wait": 1.0, "wait_scale_s": 3600.0}})
    monkeypatch.setattr(cards, "_BASELINE_RUNS", {})
    monkeypatch.setitem(cards._BASELINE_CACHE, "dir", tmp_path)
    first = cards.evaluate_model("m", "v100-32", 3, "costly")
    monkeypatch.setattr(cards, "_BASELINE_RUNS", {})  # as in a new process
    again = cards.evaluate_model("m", "v100-32", 3, "costly")
    assert calls == [cards.baselines(), ["rl:m"], ["rl:m"]]
    assert again.runs == first.runs and set(again.runs) == {"rl:m", *cards.baselines()}
    other = cards.evaluate_model("m", "v100-32", 3, "free")  # another setting is not the kept one
    assert calls[-2:] == [cards.baselines(), ["rl:m"]] and set(other.runs) == set(first.runs)


def test_a_selector_card_names_its_policies_prior_cores_and_validation_curve():
    training = {
        "timesteps": 40_000,
        "wall_time_s": 100.0,
        "machine": "x",
        "kept": "best evaluation",
        "libraries": {"torch": "1"},
        "config": {
            "env": {"clusters": [], "loads": [], "n_jobs": 1},
            "curriculum": [],
            "n_envs": 2,
            "vec_env": "subproc",
        },
        "cores": 2,
        "validation_curve": [[8192, -0.61], [16384, -0.55], [24576, -0.58]],
        "selector_prior": {"validation_mean_return": {"sjf": -0.7, "fgd": -0.6}, "best": "fgd", "bias": 2.0},
    }
    card = _card(name="s", training=training, selector=["sjf", "fgd"])
    text = cards.render_markdown(card)
    assert "which of `sjf`, `fgd` makes the decision" in text
    assert "`sjf` -0.7000, `fgd` -0.6000" in text and "the best, `fgd`, was raised by 2" in text
    assert "2 cores, 2 environments (one process each)" in text
    assert "8,192: -0.6100, 16,384: -0.5500, 24,576: -0.5800" in text
    assert "no PPO evaluation beat" not in text
    card["training"]["best_eval_mean_return"] = -0.6  # the prior's: PPO never beat it
    assert "the shipped weights are the prior's, which choose `fgd` at every decision point" in cards.render_markdown(
        card
    )


def test_baselines_from_another_card_run_only_the_agent_and_stay_paired(monkeypatch):
    """--baselines-from: where another card evaluated the same workloads with the same reward, its hand-written
    policies' numbers are taken and only the agent runs; anything else runs as usual."""
    reward = {"wait": 1.0, "wait_scale_s": 3600.0}
    row = {**{f"term_{k}": 0.5 for k in cards.TERMS}, **{m: 1.0 for m in METRICS}}
    donor_runs = {s: [0.2, 0.3, 0.4] for s in cards.baselines()}
    donor = {
        "reward": reward,
        "evaluation": {
            "scenarios": {
                "v100-32": {
                    "costly": {
                        "scenario": SCENARIOS["v100-32"].to_dict(),
                        "seeds": [0, 1, 2],
                        "oracles": ["sjf-oracle"],
                        "mean_ci95": {"rl:d": {}, **{s: {"objective": [0.3, 0.1]} for s in cards.baselines()}},
                        "objective_runs": {"rl:d": [9.0, 9.0, 9.0], **donor_runs},
                    }
                }
            }
        },
    }
    calls = []

    def fake_evaluate(names, scenario, seeds, **kw):
        calls.append(list(names))
        return Evaluation(SCENARIOS[scenario], tuple(range(seeds)), {n: [row] * seeds for n in names}, "first-fit")

    cards_by_name = {"d": donor, "m": {"reward": reward}}
    monkeypatch.setattr(cards, "read_card", lambda name: cards_by_name[name])
    monkeypatch.setattr(cards, "evaluate", fake_evaluate)
    monkeypatch.setattr(cards, "_BASELINE_RUNS", {})
    out = cards._run_and_keep((("v100-32", 3, "costly", ("m",)), None, None, "d"))["m"]
    assert "error" not in out, out
    assert calls == [["rl:m"]] and out["baselines_from"] == "d"
    assert "rl:d" not in out["objective_runs"] and out["objective_runs"]["first-fit"] == [0.2, 0.3, 0.4]
    assert out["vs"]["first-fit"]["diff"] == pytest.approx(0.5 / 3600 - 0.3)  # wait 0.5 s: objective 0.5 / 3600
    out = cards._run_and_keep((("v100-32", 4, "costly", ("m",)), None, None, "d"))["m"]  # other seeds: run them all
    assert calls[-2:] == [cards.baselines(), ["rl:m"]] and "baselines_from" not in out
    cards_by_name["m"] = {"reward": {"wait": 0.5, "wait_scale_s": 3600.0}}
    out = cards._run_and_keep((("v100-32", 3, "costly", ("m",)), None, None, "d"))["m"]
    assert "reward weights differ" in out["error"]


def _losing_card(monkeypatch, rules: list[str], **extra) -> dict:
    """A card of agent ``m`` whose best fair policy, short-fast (a teacher placing with best-fit, preempting
    1.0 times per run in these tables), beats it on both settings of scenario b and loses to it on a."""
    monkeypatch.setattr(cards, "evaluate_model", _fake)
    ev = cards.card_evaluation("m", {"train": ["a"], "larger": "b", "philly": "philly"}, 4, 4)
    return {**_card(ev), "encoding": {"rules": rules}, **extra}


WHY = "## Why it does not beat the best policy"


def test_a_card_says_why_the_winner_beats_an_agent_that_cannot_preempt(monkeypatch):
    text = cards.render_markdown(_losing_card(monkeypatch, ["best-fit"]))
    assert WHY in text
    assert "significantly worse than the best hand-written policy on 2 of 4 settings" in text
    assert (
        "  - the winner preempts (1.0 preemptions per run) and this agent, without an `evict` rule, never does, "
        "2: `short-fast` on b (free, costly)\n" in text
    )
    assert "no such reason" not in text and "The agent never preempts." in text
    # With an evict rule the agent could preempt too: the card finds no reason and says so.
    text = cards.render_markdown(_losing_card(monkeypatch, ["best-fit", "evict"]))
    assert "the winner preempts" not in text
    assert "  - no such reason in the card's measurements, 2: `short-fast` on b (free, costly)" in text


def test_a_card_names_the_teaching_presets_it_loses_on_that_its_training_never_drew(monkeypatch):
    """A preset among the lost settings counts as unseen unless the training config, or a run it continued,
    drew it (``env.presets``); a malformed list in a card counts as none."""
    card = _losing_card(monkeypatch, ["best-fit"])
    scenarios = card["evaluation"]["scenarios"]
    scenarios["heavy-user"] = scenarios.pop("b")  # the lost scenario is now a teaching preset
    line = (
        "- 1 of the teaching presets it is worse on never appeared in its training episodes "
        "(`env.presets` of its training config or of a run it continued): heavy-user"
    )
    assert line in cards.render_markdown(card).splitlines()

    def why(**training) -> list[str]:
        return cards.why_not_better({**card, "training": {**card["training"], **training}})

    assert line in why()
    assert line not in why(config={"env": {"presets": ["heavy-user"]}})
    parent = {"training": {"config": {"env": {"presets": ["least-loaded-collapse", "heavy-user"]}}}}
    assert line not in why(init_from=parent)
    assert line in why(config={"env": {"presets": "heavy-user"}})  # not a list: no preset counts as trained on


def test_a_card_names_the_runs_that_tried_to_replace_its_agent(monkeypatch):
    tried = {
        "what": "continued for 1,000,448 more steps",
        "command": "python -m engine train --config m",
        "validation": {"episodes": 48, "candidate": 1.25, "agent": 1.0, "half_width": 0.1},
        "card": {"better": 0, "worse": 3},
    }
    text = cards.render_markdown(_losing_card(monkeypatch, ["best-fit"], tried=[tried]))
    why = text[text.index(WHY) : text.index("## Evaluation")]
    assert (
        "- tried and not shipped: continued for 1,000,448 more steps. On 48 of this agent's validation episodes past "
        "those its training chose on: objective 1.250 vs this agent's 1.000 (paired +0.250 +- 0.100); its card: better "
        "than the best policy on 0 and worse on 3 settings (this card: 2 and 2); `python -m engine train --config m`\n"
        in why
    )
    # Measured against the agent's card of then (since changed): its counts, kept in the entry, are shown instead.
    then = {**tried, "card": {"better": 0, "worse": 3, "agent_better": 1, "agent_worse": 5}}
    text = cards.render_markdown(_losing_card(monkeypatch, ["best-fit"], tried=[then]))
    assert "worse on 3 settings (this agent's card then: 1 and 5); `python" in text
    for bad in (
        {**tried, "what": "two\nlines"},
        {**tried, "card": {"better": "many", "worse": 3}},
        {**tried, "card": {"better": 0, "worse": 3, "agent_better": None}},
        {"what": "x"},
        "x",
    ):
        with pytest.raises(ModelError, match=r"tried\[0\] needs what and command"):
            cards.render_markdown(_losing_card(monkeypatch, ["best-fit"], tried=[bad]))


def test_each_tried_config_is_named_by_the_card_of_the_agent_it_tried_to_replace():
    """``engine/rl/configs/tried/``: the runs the cards' "tried and not shipped" lines report, to rerun. Each
    continues a shipped agent (``init_from``) or retrains one from scratch; that agent's card, and only it, names it."""
    tried = sorted((CONFIGS_DIR / "tried").glob("*.json"))
    assert tried
    cards_tried = {m: json.loads((MODELS_DIR / f"{m}.json").read_text()).get("tried", []) for m in model_names()}
    for path in tried:
        cfg = load_config(str(path))
        named_by = [
            m
            for m, ts in cards_tried.items()
            if any(t["what"].startswith(f"{cfg.name} (engine/rl/configs/tried/)") for t in ts)
        ]
        assert cfg.name == path.stem and len(named_by) == 1, path
        assert cfg.init_from in ("", named_by[0]), path


def test_a_selector_card_names_the_winners_outside_its_policies(monkeypatch):
    card = _losing_card(monkeypatch, ["best-fit"], selector=["sjf", "fgd"])
    text = cards.render_markdown(card)
    assert (
        "  - the winner is not among the policies this selector picks from, 2: `short-fast` on b (free, costly)" in text
    )
    assert "the winner preempts" not in text  # a selector's actions are its policies, not the encoding's rules
    assert "The agent never preempts: none of its policies does." in text
    card["selector"] = ["sjf", "short-fast", "tiresias"]
    text = cards.render_markdown(card)
    assert "not among the policies" not in text
    assert (
        "  - the winner is one of the policies it picks from (no reason in its action space), 2: `short-fast`" in text
    )
    # It preempts through tiresias, which preempts (the old card said it never preempted).
    assert "The agent preempts only when it picks a preemptive policy (`tiresias`)" in text


def test_a_selector_card_says_what_the_hindsight_pick_of_its_policies_gains():
    """Per seed, the lowest objective among the selector's policies, paired against the best single policy."""
    runs = {"a": [1.0, 4.0, 2.0, 3.0], "b": [2.0, 1.0, 3.0, 3.5], "c": [1.5, 3.0, 2.5, 2.5], "rl:s": [2.0] * 4}
    table = {"best_baseline": "c", "objective_runs": runs, "vs_best": {"diff": -0.375, "relative": -0.2}}
    picked = cards.hindsight_vs_best(["a", "b"], table)  # per seed: 1, 1, 2, 3 against c's 1.5, 3, 2.5, 2.5
    assert picked == cards.paired_difference([1.0, 1.0, 2.0, 3.0], runs["c"])
    assert picked["diff"] == pytest.approx(-0.625) and picked["relative"] == pytest.approx(-0.625 / 2.375)
    assert cards.hindsight_vs_best(["a", "z"], table) is None  # z was not run there
    card = {
        "selector": ["a", "b"],
        "evaluation": {
            "scenarios": {
                cards.HELD_OUT: {"costly": table},
                "other": {"free": {**table, "objective_runs": {**runs, "a": [0.1] * 4}}, "costly": {"error": "x"}},
            }
        },
    }
    (line,) = cards._hindsight_lines(card)
    assert line.startswith("- what keeping one of its 2 policies for a whole run could gain at most: the best")
    assert "significantly better on 1 of 2 settings" in line  # "other": a alone beats c on every seed
    half = 100 * picked["ci95"] / 2.375
    assert line.endswith(
        f"on the held-out {cards.HELD_OUT} -26.3 % +- {half:.1f} % with costly preemption (agent -20.0 %)"
    )
    assert cards._hindsight_lines({**card, "selector": None}) == []  # not a selector


def test_a_card_says_how_much_of_the_held_out_mean_its_largest_run_carries():
    """The held-out run carrying the largest share of the agent's or the best policy's summed objective, both
    shares, and the agent without it."""
    best, mine = [1.0, 2.0, 7.0, 2.0], [1.5, 2.5, 1.0, 2.0]  # seed 12 carries 7 of 12
    table = {"best_baseline": "c", "seeds": [10, 11, 12, 13], "objective_runs": {"c": best, "rl:s": mine}}
    card = {
        "name": "s",
        "evaluation": {
            "scenarios": {
                cards.HELD_OUT: {"costly": table, "free": {"error": "x"}},
                "other": {"free": table},  # not the held-out workloads: no line
            }
        },
    }
    (line,) = cards._largest_run_lines(card)
    vs = cards.paired_difference([1.5, 2.5, 2.0], [1.0, 2.0, 2.0])  # +1/3 over a mean of 5/3: +20 %
    assert vs["relative"] == pytest.approx(0.2)
    assert line == (
        f"- on the held-out {cards.HELD_OUT} with costly preemption, one of its 4 runs (seed 12) carries 14 % of "
        f"the agent's summed objective and 58 % of `c`'s; without that run the agent is +20.0 % +- "
        f"{100 * vs['ci95'] / (5 / 3):.1f} % ({vs['verdict']}) against it"
    )
    # With the largest run the agent looks better (7 against 12 summed); without it, it is not: the line says so.
    assert vs["verdict"] == "no clear difference"
    # Where the agent's own run carries the larger share (seed 13: 9 of its 13), that run is the one left out.
    table["objective_runs"]["rl:s"] = [1.0, 2.0, 1.0, 9.0]
    (line,) = cards._largest_run_lines(card)
    assert "(seed 13) carries 69 % of the agent's summed objective and 17 % of `c`'s" in line
    assert cards._largest_run_lines({**card, "name": "other"}) == []  # the agent was not run there
    short = {"scenarios": {cards.HELD_OUT: {"costly": {**table, "seeds": [10]}}}}  # a malformed card: no line
    assert cards._largest_run_lines({**card, "evaluation": short}) == []


def test_a_winner_placing_or_resizing_outside_the_agents_action_space_is_named():
    elastic = dataclasses.replace(
        SCENARIOS["v100-32"], workload=dataclasses.replace(SCENARIOS["v100-32"].workload, elastic=0.5)
    )
    card = {"encoding": {"rules": ["best-fit", "evict"]}}
    table = {
        "best_baseline": "optimus",
        "scenario": elastic.to_dict(),
        "mean_ci95": {"optimus": {"preemptions": [0.0, 0.0]}},
    }
    assert cards._reasons(card, table) == [("resizes", "`optimus`", 0.5)]
    table["scenario"] = SCENARIOS["v100-32"].to_dict()  # no elastic job: nothing to resize
    assert cards._reasons(card, table) == []
    for winner, label in (("fgd", "`fgd`"), ("topo-pack", "`topo-pack`"), ("fifo", "`fifo` (first-fit)")):
        table = {**table, "best_baseline": winner, "mean_ci95": {winner: {"preemptions": [0.0, 0.0]}}}
        assert cards._reasons(card, table) == [("placement", label, 0.0)]
    card["encoding"]["rules"] = ["first-fit", "best-fit"]
    assert cards._reasons(card, table) == []  # fifo places with first-fit, now one of the agent's rules


def test_a_card_says_whether_its_validation_curve_was_still_improving(monkeypatch):
    card = _losing_card(monkeypatch, ["best-fit"])
    card["training"] = {**card["training"], "validation_curve": [[1, -0.6], [2, -0.5], [3, -0.55], [4, -0.45]]}
    text = cards.render_markdown(card)
    assert (
        "- validation return still improving when training stopped: best -0.4500 in the last quarter of its 4" in text
    )
    assert "(from 4 steps), -0.5000 before them" in text
    card["training"]["validation_curve"][-1] = [4, -0.5]
    assert "- validation return flat when training stopped: best -0.5000" in cards.render_markdown(card)
    training = {**card["training"], "timesteps": 250_000, "wall_time_s": 2_600.0, "cores": 16}
    training |= {"clone": {"wall_time_s": 100.0}, "config": {**training["config"], "n_envs": 16}}
    assert cards._compute_line(training) == (
        "- training compute: 250,000 environment steps, 25.0 % of the 1,000,000 steps issue 38 asks of each shipped "
        "agent; 2,600 s wall time (100 s of it behaviour cloning) on x (16 cores, 16 environments): 100 steps/s; "
        "at that rate 1,000,000 steps take 2.8 h"
    )
    # A continued run: its wall time and steps count its parent's, whose cloning is not PPO time either.
    child = {**training, "clone": None, "init_from": {"model": "p", "training": {"clone": {"wall_time_s": 100.0}}}}
    assert cards._compute_line(child) == cards._compute_line(training)


def test_a_card_without_a_significantly_worse_setting_lists_no_reasons(monkeypatch):
    monkeypatch.setattr(cards, "evaluate_model", _fake)
    better = cards.card_evaluation("m", {"train": ["a"], "larger": "a", "philly": "philly"}, 4, 4)
    assert WHY not in cards.render_markdown(_card(better))  # it beats the best policy: nothing to explain
    close = _ev({"rl:m": [1.0, 1.2, 0.8, 1.0], "first-fit": [2.0, 2.2, 1.9, 2.1], "short-fast": [1.1, 1.0, 0.9, 1.0]})
    monkeypatch.setattr(cards, "evaluate_model", lambda name, scenario, seeds, setting="free": close)
    even = cards.card_evaluation("m", {"train": ["a"], "larger": "a", "philly": "a"}, 4, 4)
    assert even["summary"]["beats_best_baseline"] is False and even["summary"]["worse"] == 0
    text = cards.render_markdown(_card(even))
    assert "- significantly worse than the best hand-written policy on none of its 2 settings" in text
    assert "the winner" not in text and "no such reason" not in text


def test_a_deadline_objective_is_scored_from_each_runs_missed_share():
    # A deadline agent's card scores every run by its own objective; the cards' terms lacked "deadline", so carding
    # one raised KeyError. Two 1-GPU jobs on one GPU, both due at 150 s: the second, queued, misses.
    from engine import make_scheduler, simulate
    from engine.rl.reward import RewardWeights
    from engine.sim.job import Job

    cluster = parse_cluster("1x1:V100-32")
    jobs = (Job(0, 0.0, 100.0, deadline_s=150.0), Job(1, 0.0, 100.0, deadline_s=150.0))
    res = simulate(cluster, jobs, make_scheduler("fifo"))
    row = {k: f(res) for k, f in cards._term_metrics().items()}
    assert row["term_deadline"] == 0.5
    assert cards._objective(row, RewardWeights(wait=0.0, deadline=2.0)) == 1.0


def test_card_says_whose_hand_written_policies_numbers_it_took():
    """``cards --baselines-from``: the card names the donor card, or says it took its own previous card's."""
    ev = {"scenarios": {"a": {"free": {"baselines_from": "wait-mlp"}, "costly": {"baselines_from": "m"}}}}
    assert (
        "- the hand-written policies' numbers are those of its previous card, the card of `rl:wait-mlp` (the same "
        "workloads, seeds and reward weights: `cards --baselines-from`); only this agent ran"
    ) in cards._provenance(_card(ev))
    assert not any("hand-written policies' numbers" in line for line in cards._provenance(_card({"scenarios": {}})))


def test_a_change_is_absolute_where_the_best_policy_scores_zero():
    # A "+0 %" against a best objective of 0 hid a real difference (the agent waited where no policy did).
    assert cards.percent_change({"relative": None, "diff": 0.00075}) == "+0.00075 absolute"
    assert cards.percent_change({"relative": 0.25, "diff": 0.2}) == "+25 %"
    assert cards.percent_change({"relative": 0.003, "diff": 0.1}) == "+0.3 %"
    assert cards.percent_change({"relative": -0.1667, "diff": -0.2}, tenths=True) == "-16.7 %"


ENCODING = {"window": 16, "max_types": 4, "rules": ["best-fit", "evict"], "window_order": "mixed"}


def test_a_teacher_winner_is_run_within_the_agents_own_actions_and_the_card_says_what_that_shows(monkeypatch):
    # On b the winner, short-fast, is a teacher: add_within_runs runs it within the agent's encoding on b's own
    # workloads (v100-32, seeds 0..3, each preemption setting) and stores its per-seed objectives. This encoding
    # holds every choice the registered teacher makes on that cluster, so they are its real registered runs.
    card = _losing_card(monkeypatch, ENCODING["rules"], encoding=ENCODING)
    real, ran = cards._within_rows, []
    monkeypatch.setattr(cards, "_within_rows", lambda task: ran.append(task[2:4]) or real(task))
    cards.add_within_runs({"m": card})
    assert sorted(ran) == [("costly", "short-fast"), ("free", "short-fast")]  # b only: the agent wins a
    for setting in ("free", "costly"):
        stored = card["evaluation"]["scenarios"]["b"][setting]["within_actions"]
        registered = cards._baseline_task_rows(
            (json.dumps(SCENARIOS["v100-32"].to_dict()), (0, 1, 2, 3), setting, ("short-fast",))
        )["short-fast"]
        weights = cards.RewardWeights.from_dict(card["reward"])
        objectives = [cards._objective(r, weights) for r in registered]
        assert stored == {
            "winner": "short-fast",
            "teacher": "short-fast",
            "rule": "best-fit",
            "objective_runs": objectives,
        }
    cards.add_within_runs({"m": card})
    assert len(ran) == 2  # stored for that winner: nothing runs again
    # The card reads them against the winner's runs in the table (here the fake ones, 0.7-0.9).
    for setting, runs in (("free", [0.8, 0.9, 0.7, 0.8]), ("costly", [1.6, 1.8, 1.4, 1.6])):
        card["evaluation"]["scenarios"]["b"][setting]["within_actions"]["objective_runs"] = runs
    text = cards.render_markdown(card)
    assert "run within this agent's own actions" in text and "no such reason" not in text
    assert "does as well as the registered winner (no significant paired difference): the agent could have " in text
    assert "is significantly worse than registered (+100.0 %): some of the winner's choices are not this " in text


def test_a_selector_losing_to_one_of_its_policies_says_how_often_it_handed_that_policy_the_decision(monkeypatch):
    # On b the winner, short-fast, is in the selector's pool: add_pick_shares runs the selector (the shipped
    # select-wait's weights stand in for m's) on b's workloads and stores the share of decision points each policy
    # decided; the card says how much the winner got.
    pool = read_card("select-wait")["selector"]
    card = _losing_card(monkeypatch, ["best-fit"], selector=pool)
    card["name"] = "select-wait"
    lost, won = card["evaluation"]["scenarios"]["b"]["free"], card["evaluation"]["scenarios"]["a"]["free"]
    assert cards._picks_task(card, won, "free") is None  # the selector wins a: nothing to explain
    assert cards._picks_task({**card, "selector": None}, lost, "free") is None  # a rule agent: not its question
    cards.add_pick_shares({"m": card})
    for setting in ("free", "costly"):
        picks = card["evaluation"]["scenarios"]["b"][setting]["picks"]
        assert picks["sha256"] == card["sha256"] and set(picks["shares"]) <= set(pool)
        assert sum(picks["shares"].values()) == pytest.approx(1.0)
        assert list(picks["shares"].values()) == sorted(picks["shares"].values(), reverse=True)
        assert cards._picks_task(card, card["evaluation"]["scenarios"]["b"][setting], setting) is None  # stored
    lost["picks"]["shares"] = {"sjf": 0.7, "short-fast": 0.25, "fgd": 0.05}
    text = cards.render_markdown(card)
    assert (
        "    - b (free): it handed the winner `short-fast` 25 % of its decision points, the others mostly to `sjf` "
        "70 %, `fgd` 5 %\n" in text
    )
    lost["picks"]["shares"] = {"../../etc": 1.0}  # a card is data from a stranger
    with pytest.raises(ModelError, match="picks of b \\(free\\)"):
        cards.render_markdown(card)
    lost["picks"]["sha256"] = "f" * 64  # measured for other weights: not shown
    assert "b (free): it handed" not in cards.render_markdown(card)


def test_only_a_rule_agent_losing_to_a_teacher_it_can_place_like_needs_the_winner_within_its_actions(monkeypatch):
    card = _losing_card(monkeypatch, ENCODING["rules"], encoding=ENCODING)
    lost = card["evaluation"]["scenarios"]["b"]["free"]
    assert cards._within_task(card, lost, "free")[3:] == (
        "short-fast",
        "best-fit",
        json.dumps(ENCODING, sort_keys=True),
    )
    assert cards._within_task(card, card["evaluation"]["scenarios"]["a"]["free"], "free") is None  # the agent wins
    assert cards._within_task({**card, "selector": ["short-fast"]}, lost, "free") is None  # a selector picks it
    other = {**card, "encoding": {**ENCODING, "rules": ["first-fit", "evict"]}}
    assert cards._within_task(other, lost, "free") is None  # the teacher's rule is not the agent's
    far = {**lost, "best_baseline": "fgd", "objective_runs": {**lost["objective_runs"], "fgd": [0.3, 0.3, 0.3, 0.3]}}
    assert cards._within_task(card, far, "free") is None  # no tie, and fgd's own rule is not this agent's
    with_fgd = {**card, "encoding": {**ENCODING, "rules": ["best-fit", "fgd"]}}
    assert cards._within_task(with_fgd, far, "free")[3:5] == ("fifo-fast", "fgd")  # fgd orders as fifo-fast does
    done = {"winner": "short-fast", "teacher": "short-fast", "rule": "best-fit", "objective_runs": []}
    stored = {**lost, "within_actions": done}
    assert cards._within_task(card, stored, "free") is None  # measured already


def _fgd_wins(t: dict, within_runs: list[float]) -> dict:
    """Table ``t`` (short-fast's win on b) with fgd, not a teacher, a hair better than short-fast (a tie) and
    short-fast's runs within the agent's actions ``within_runs`` stored for it."""
    fgd = [0.79, 0.9, 0.7, 0.8]
    return {
        **t,
        "best_baseline": "fgd",
        "objective_runs": {**t["objective_runs"], "fgd": fgd},
        "mean_ci95": {**t["mean_ci95"], "fgd": t["mean_ci95"]["short-fast"]},
        "within_actions": {"winner": "fgd", "teacher": "short-fast", "rule": "best-fit", "objective_runs": within_runs},
    }


def test_a_teacher_that_ties_a_winner_stands_in_for_it_and_only_its_match_says_something(monkeypatch):
    runs = {"fgd": [0.79, 0.9, 0.7, 0.8], "short-fast": [0.8, 0.9, 0.7, 0.8], "short-whole": [0.9, 1.0, 0.8, 0.9]}
    assert cards._stand_in({"best_baseline": "fgd", "objective_runs": runs}) == ("short-fast", "best-fit")  # best tie
    assert cards._stand_in({"best_baseline": "short-whole", "objective_runs": runs}) == ("short-whole", "best-fit")
    worse = {**runs, "short-fast": [1.8, 1.9, 1.7, 1.8]}  # short-whole is worse by 0.1 on every seed too
    # No teacher ties: a winner walking the queue in arrival order is stood in for by fifo-fast placing by its rule.
    assert cards._stand_in({"best_baseline": "fgd", "objective_runs": worse}) == ("fifo-fast", "fgd")
    assert cards._stand_in({"best_baseline": "topo-pack", "objective_runs": {**worse, "topo-pack": runs["fgd"]}}) == (
        "fifo-fast",
        "topo-pack",
    )
    for winner in ("fifo", "easy-backfill"):  # a blocking walk, a backfill: no teacher orders as they do
        assert cards._stand_in({"best_baseline": winner, "objective_runs": {**worse, winner: runs["fgd"]}}) is None
    card = _losing_card(monkeypatch, ENCODING["rules"], encoding=ENCODING)
    lost = card["evaluation"]["scenarios"]["b"]["free"]
    assert cards._within_task(card, {**_fgd_wins(lost, []), "within_actions": {}}, "free")[3] == "short-fast"
    # Matched within the agent's actions, the stand-in shows the winner's score was the agent's to reach ...
    assert ("within", "`fgd` (as `short-fast` by best-fit)", 0.0) in cards._reasons(
        card, _fgd_wins(lost, runs["short-fast"])
    )
    # ... but a stand-in that falls short says nothing of fgd's own choices: no "outside" reason.
    kinds = [kind for kind, _, _ in cards._reasons(card, _fgd_wins(lost, [1.6, 1.8, 1.4, 1.6]))]
    assert kinds == ["placement"]  # fgd's own rule, not in this encoding
    by_rule = _fgd_wins(lost, runs["fgd"])
    by_rule["within_actions"] = {**by_rule["within_actions"], "teacher": "fifo-fast", "rule": "fgd"}
    assert ("within", "`fgd` (as `fifo-fast` by fgd)", 0.0) in cards._reasons(card, by_rule)


@pytest.mark.parametrize("name", sorted(model_names(MODELS_DIR)))
def test_every_shipped_card_measured_its_winners_stand_ins_within_its_actions(name):
    card = read_card(name, MODELS_DIR)
    assert [key for key, t in cards._settings(card).items() if cards._within_task(card, t, key[1])] == []


def test_the_card_says_what_each_inference_only_option_does():
    assert set(cards._DEPLOYED) == set(DEPLOY_OPTIONS)
    line = cards._deployed({"env": {"encoding": {"window": 8}}, "deploy_encoding": {"elastic_start": True}})
    assert line and "fewest GPUs" in line[0] and "next-best" not in line[0]
