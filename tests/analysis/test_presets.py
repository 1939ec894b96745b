"""Every scenario preset loads, and its stated lesson holds on three workload seeds."""

from __future__ import annotations

import json

import pytest

from engine import scheduler_names
from engine.analysis.presets import PRESETS, PresetError, load_preset, read_preset
from engine.errors import UnknownNameError

EXPECTED = {
    "least-loaded-collapse",
    "head-of-line-blocking",
    "fractional-fragmentation",
    "heavy-user",
    "topology-packing",
    "cheap-gpu-slow-jobs",
    "checkpoint-interval",
}


def test_the_teaching_presets_exist():
    assert EXPECTED <= set(PRESETS)
    for preset in PRESETS.values():
        assert preset.title and preset.lesson and preset.look_at
        assert preset.build_cluster().n_gpus > 0


def check_lesson(preset, seed):
    """Fail (never skip) when ``preset`` names a scheduler that is not registered; else assert its lesson."""
    missing = sorted(set(preset.schedulers) - set(scheduler_names()))
    if missing:
        pytest.fail(
            f"preset {preset.name!r} names unregistered scheduler(s) {', '.join(missing)} "
            f"(registered: {', '.join(scheduler_names())})"
        )
    values = preset.measure(preset.run(seed))
    assert preset.lesson_holds(values), f"{preset.name} seed {seed}: {values} (expected {preset.expect})"


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_lesson_holds(name, seed):
    check_lesson(load_preset(name), seed)


def test_unknown_preset_lists_names():
    with pytest.raises(UnknownNameError, match="heavy-user"):
        load_preset("nope")


GOOD = {
    "title": "t",
    "cluster": "1x4:T4",
    "workload": {"generate": {"n_jobs": 5}},
    "schedulers": ["fifo", "sjf"],
    "look_at": "x",
    "lesson": "y",
    "expect": {"metric": "mean_wait_s", "winners": ["sjf"], "loser": "fifo"},
}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"schedulers": ["fifo"]}, "at least two"),
        ({"colour": 1}, r"unknown keys \['colour'\]"),
        ({"workload": {}}, "exactly one of"),
        ({"workload": {"generate": {}}}, "n_jobs"),
        ({"expect": {"metric": "jobs", "winners": ["sjf"], "loser": "fifo"}}, "not a metric with a direction"),
        ({"expect": {"metric": "mean_wait_s", "winners": ["drf"], "loser": "fifo"}}, "not in 'schedulers'"),
        (
            {"expect": {"metric": "utilization", "winners": ["sjf"], "loser": "fifo", "exclude_users": ["a"]}},
            "exclude_users",
        ),
        ({"options": {"energy": {"pue": 0.5}}}, r"p.json: options.energy.pue must be a number from 1 to 10, got 0.5"),
        ({"options": {"colour": 1}}, r"unknown keys \['colour'\]"),
    ],
)
def test_bad_preset_files(tmp_path, change, match):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({**GOOD, **change}))
    with pytest.raises(PresetError, match=match):
        read_preset(path)


def test_a_preset_naming_an_unknown_scheduler_fails(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({**GOOD, "schedulers": ["fifo", "sjf", "no-such-scheduler"]}))
    with pytest.raises(BaseException, match="no-such-scheduler") as info:
        check_lesson(read_preset(path), seed=0)
    # Refused when read, or failed by the lesson check with the message above; a skip would hide it.
    assert isinstance(info.value, (PresetError, pytest.fail.Exception)), f"not a failure: {info.value!r}"


def test_lesson_check_follows_metric_direction(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(
        json.dumps({**GOOD, "expect": {"metric": "utilization", "winners": ["sjf"], "loser": "fifo", "factor": 1.5}})
    )
    preset = read_preset(path)
    assert preset.lesson_holds({"sjf": 0.9, "fifo": 0.5})
    assert not preset.lesson_holds({"sjf": 0.6, "fifo": 0.5})
    assert not preset.lesson_holds({"sjf": 0.9, "fifo": float("nan")})


def test_trace_workload(tmp_path):
    from engine.traces import write_csv
    from engine.traces.generator import generate

    trace = write_csv(generate("1x4:T4", 20, seed=3), tmp_path / "w.csv")
    path = tmp_path / "p.json"
    path.write_text(json.dumps({**GOOD, "workload": {"trace": str(trace)}}))
    preset = read_preset(path)
    assert len(preset.build_jobs()) == 20
    assert set(preset.run()) == {"fifo", "sjf"}


def test_a_preset_file_of_the_older_form_is_a_scenario_and_a_lesson(tmp_path):
    from engine.analysis.scenario import Scenario
    from engine.traces.generator import generate

    # A literal copy of presets/heavy-user.json as it was written before presets were scenarios.
    old = {
        "title": "One heavy user starves the others: DRF against FIFO",
        "cluster": "4x8:V100-32",
        "workload": {
            "generate": {
                "n_jobs": 300,
                "load": 1.0,
                "users": 5,
                "user_skew": 3.0,
                "mix": {"training": 0.4, "batch": 0.6},
                "types": {
                    "training": {
                        "gpus": {"1": 0.3, "2": 0.3, "4": 0.4},
                        "vram_gib": {"16": 1.0},
                        "median_s": 3600,
                        "sigma": 0.8,
                    },
                    "batch": {"gpus": {"1": 1.0}, "vram_gib": {"8": 1.0}, "median_s": 1800, "sigma": 0.8},
                },
            }
        },
        "schedulers": ["fifo", "first-fit", "drf"],
        "look_at": "The per-user table.",
        "lesson": "Arrival order.",
        "expect": {
            "metric": "mean_wait_s",
            "winners": ["drf"],
            "loser": "fifo",
            "factor": 3.0,
            "exclude_users": ["user0"],
        },
    }
    path = tmp_path / "heavy.json"
    path.write_text(json.dumps(old))
    preset = read_preset(path)
    generator = old["workload"]["generate"]
    args = {k: v for k, v in generator.items() if k not in ("n_jobs", "load")}
    assert preset.build_jobs(2) == generate("4x8:V100-32", 300, 1.0, 2, **args)
    assert preset.expect.winners == ("drf",) and preset.lesson == "Arrival order."
    # The preset's scenario is an ordinary scenario: its JSON round-trips and builds the same jobs.
    again = Scenario.from_json(preset.scenario.to_json())
    assert again == preset.scenario and again.workload.build_jobs(again.build_cluster(), 2) == preset.build_jobs(2)


def test_an_energy_lesson_is_measured_under_the_presets_energy_model(tmp_path):
    from engine.analysis.metrics import summarize
    from engine.sim.options import EnergyModel

    path = tmp_path / "p.json"
    path.write_text(
        json.dumps(
            {
                **GOOD,
                "options": {"energy": {"pue": 2.0}},
                "expect": {"metric": "energy_kwh", "winners": ["sjf"], "loser": "fifo"},
            }
        )
    )
    preset = read_preset(path)
    assert preset.scenario.options.energy == EnergyModel(pue=2.0)
    results = preset.run(0)
    measured = preset.measure(results)
    assert measured["fifo"] == summarize(results["fifo"], energy=EnergyModel(pue=2.0)).value("energy_kwh")
    assert measured["fifo"] == 2.0 * summarize(results["fifo"], energy=EnergyModel(pue=1.0)).value("energy_kwh")


def test_the_cheap_gpu_preset_carries_its_energy_model_into_the_app_scenario():
    from engine.analysis.energy import sets_energy
    from engine.analysis.scenario import scenario_from_preset

    sc = scenario_from_preset("cheap-gpu-slow-jobs")
    assert sets_energy(sc.options) and sc.options.energy.pue == 1.2


VARIANTS = {
    **GOOD,
    "schedulers": ["fifo"],
    "options": {"preemption": {"checkpoint_interval_s": 600.0, "restart_overhead_s": 60.0}},
    "variants": {"short": {"preemption": {"checkpoint_interval_s": 60.0}}, "as-is": {}},
    "expect": {"metric": "mean_wait_s", "winners": ["as-is"], "loser": ["short"]},
}


def test_a_preset_may_compare_variants_of_its_run_options(tmp_path):
    # Issue 34: a lesson over checkpoint intervals compares run options, not schedulers. Each variant changes only
    # the keys it gives; the run is the preset's one scheduler under each variant's options.
    from engine import make_scheduler, simulate

    path = tmp_path / "p.json"
    path.write_text(json.dumps(VARIANTS))
    preset = read_preset(path)
    assert preset.compared == ("short", "as-is") and preset.expect.losers == ("short",)
    short = preset.variants["short"].preemption
    assert (short.checkpoint_interval_s, short.restart_overhead_s) == (60.0, 60.0)  # the overhead is the preset's
    assert preset.variants["as-is"] == preset.scenario.options
    results = preset.run(1)
    cluster, jobs = preset.build_cluster(), preset.build_jobs(1)
    for name, options in preset.variants.items():
        direct = simulate(cluster, jobs, make_scheduler("fifo"), seed=1, options=options)
        assert (results[name].end_s == direct.end_s).all()


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"schedulers": ["fifo", "sjf"]}, "lists the one scheduler they run"),
        ({"variants": {"only": {}}}, "2 to 8 named run-option changes"),
        ({"variants": {"a": {}, "b": {"preemption": {"checkpoint_interval_s": -1}}}}, "variants.b.preemption"),
        ({"variants": {"a": {}, "b": {"colour": {}}}}, r"variants.b: unknown keys \['colour'\]"),
        ({"expect": {"metric": "mean_wait_s", "winners": ["as-is"], "loser": ["fifo"]}}, "not in 'variants'"),
    ],
)
def test_bad_variants_are_refused_naming_them(tmp_path, change, match):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({**VARIANTS, **change}))
    with pytest.raises(PresetError, match=match):
        read_preset(path)


def test_the_checkpoint_lesson_loses_on_both_sides_of_young_daly():
    preset = load_preset("checkpoint-interval")
    assert preset.expect.winners == ("every-hour",) and set(preset.expect.losers) == {"every-10-min", "every-2-days"}
    values = preset.measure(preset.run(0))
    assert not preset.lesson_holds({**values, "every-2-days": values["every-hour"]})  # each side is checked
    assert not preset.lesson_holds({**values, "every-10-min": values["every-hour"]})
