"""Run options: one record, read back from its JSON form, every bound refused with a line naming the key."""

from __future__ import annotations

import json

import pytest

from engine import CarbonSeries, EnergyModel, Job, PreemptionModel, RunOptions, Simulation, parse_cluster
from engine.sim.options import (
    FAILURE_PRESETS,
    JOB_FAILURE_PRESETS,
    AdmissionModel,
    ElasticModel,
    FailureModel,
    OptionsError,
    PowerDownModel,
)

COSTLY = PreemptionModel(checkpoint_interval_s=900.0, restart_overhead_s=45.0)


def test_to_dict_and_from_dict_round_trip_through_json():
    for options in (
        RunOptions(),
        RunOptions(preemption=COSTLY),
        RunOptions(preemption=PreemptionModel(restart_overhead_s=12.5)),
        RunOptions(
            preemption=PreemptionModel(checkpoint_interval_s=600.0), failures=FailureModel(checkpoint_cost_s=30.0)
        ),
        RunOptions(failures=FAILURE_PRESETS["stress"].with_job_failures("acme")),
        RunOptions(
            energy=EnergyModel(
                pue=1.1,
                carbon_g_per_kwh=CarbonSeries(3600.0, (300.0, 250.5), "2024-01-01"),
                price_list="gcp-preemptible-2020",
            )
        ),
        RunOptions(admission=AdmissionModel("feasible")),
        RunOptions(elastic=ElasticModel(rescale_s=12.0)),
        RunOptions(energy=EnergyModel(count=True)),
        RunOptions(power_down=PowerDownModel(idle_timeout_s=600.0, wake_s=120.0, sleep_w=2.5)),
    ):
        data = json.loads(json.dumps(options.to_dict()))
        assert RunOptions.from_dict(data) == options
    assert RunOptions().to_dict() == {
        "preemption": {"checkpoint_interval_s": None, "restart_overhead_s": 0.0},
        "failures": FailureModel().to_dict(),
        "energy": {"pue": 1.58, "carbon_g_per_kwh": 480.0, "price_list": "catalog", "count": False},
        "admission": {"policy": "accept-all"},
        "elastic": {"rescale_s": 30.0},
        "power_down": {"idle_timeout_s": None, "wake_s": 300.0, "sleep_w": 0.0},
    }


def test_missing_keys_take_their_defaults():
    assert RunOptions.from_dict({}) == RunOptions()
    assert RunOptions.from_dict({"preemption": {"restart_overhead_s": 5}}).preemption == PreemptionModel(
        restart_overhead_s=5
    )


@pytest.mark.parametrize(
    "data, message",
    [
        ([], "options must be an object (keys: preemption, failures, energy, admission, elastic, power_down)"),
        (
            {"deadlines": {}},
            "options: unknown keys ['deadlines']; valid keys: ['admission', 'elastic', 'energy', 'failures', "
            "'power_down', 'preemption']",
        ),
        ({"preemption": 3}, "options.preemption must be an object with checkpoint_interval_s, restart_overhead_s"),
        ({"power_down": {"idle_timeout_s": -1}}, "options.power_down.idle_timeout_s must be a number >= 0 or null"),
        ({"power_down": {"wake_s": float("nan")}}, "options.power_down.wake_s must be a number >= 0, got nan"),
        ({"power_down": {"sleep_w": -2}}, "options.power_down.sleep_w must be a number >= 0 (watts per GPU)"),
        ({"power_down": {"sleep": 1}}, "options.power_down: unknown keys ['sleep']"),
        ({"preemption": {"checkpoint_cost_s": 5}}, "options.preemption: unknown keys ['checkpoint_cost_s']"),
        (
            {"failures": {"checkpoint_cost_s": -1}},
            "options.failures.checkpoint_cost_s must be a number of seconds >= 0",
        ),
        (
            {"failures": {"checkpoint_cost_s": 5}},
            "options.failures.checkpoint_cost_s needs options.preemption.checkpoint_",
        ),
        ({"failures": "often"}, "options.failures must be one of none, meta-rsc1, meta-rsc2, llama3, stress or an "),
        ({"failures": 3}, "options.failures must be a preset name (none, meta-rsc1, "),
        ({"failures": {"mtbf": 5}}, "options.failures: unknown keys ['mtbf']"),
        ({"failures": {"mtbf_h": 0}}, "options.failures.mtbf_h must be a number of hours > 0 or null"),
        ({"failures": {"mtbf_h": -3}}, "options.failures.mtbf_h must be a number of hours > 0 or null"),
        ({"failures": {"mtbf_h": float("nan")}}, "options.failures.mtbf_h must be a number of hours > 0 or null"),
        ({"failures": {"mtbf_per": "rack"}}, "options.failures.mtbf_per must be one of node, gpu, got 'rack'"),
        ({"failures": {"weibull_shape": 0}}, "options.failures.weibull_shape must be a number from 0.1 to 10"),
        ({"failures": {"repair_h": -1}}, "options.failures.repair_h must be a number of hours >= 0, got -1"),
        ({"failures": {"repair_law": "weibull"}}, "options.failures.repair_law must be one of fixed, exponential"),
        ({"failures": {"manual_repair_share": 1.2}}, "options.failures.manual_repair_share must be a number from 0"),
        ({"failures": {"lemon_share": -0.1}}, "options.failures.lemon_share must be a number from 0 to 1"),
        ({"failures": {"lemon_factor": 0.5}}, "options.failures.lemon_factor must be a number >= 1, got 0.5"),
        ({"failures": {"job_failure_rate": 1.5}}, "options.failures.job_failure_rate must be a number from 0 to 1"),
        ({"failures": {"job_retries": 1.5}}, "options.failures.job_retries must be an integer from 0 to 100"),
        ({"preemption": {"restart": 1}}, "options.preemption: unknown keys ['restart']"),
        (
            {"preemption": {"restart_overhead_s": -1}},
            "options.preemption.restart_overhead_s must be a number >= 0, got -1",
        ),
        ({"preemption": {"restart_overhead_s": "5"}}, "options.preemption.restart_overhead_s must be a number >= 0"),
        ({"preemption": {"restart_overhead_s": True}}, "options.preemption.restart_overhead_s must be a number >= 0"),
        (
            {"preemption": {"checkpoint_interval_s": 0}},
            "options.preemption.checkpoint_interval_s must be a number > 0 or null, got 0",
        ),
        (
            {"preemption": {"checkpoint_interval_s": float("inf")}},
            "options.preemption.checkpoint_interval_s must be a number > 0 or null, got inf",
        ),
        ({"energy": {"pue": 0.9}}, "options.energy.pue must be a number from 1 to 10, got 0.9"),
        ({"energy": {"pue": float("nan")}}, "options.energy.pue must be a number from 1 to 10, got nan"),
        ({"energy": {"pue": 99}}, "options.energy.pue must be a number from 1 to 10, got 99"),
        ({"energy": {"carbon_g_per_kwh": 1e6}}, "options.energy.carbon_g_per_kwh must be a number from 0 to 5,000"),
        (
            {"energy": {"carbon_g_per_kwh": -5}},
            "options.energy.carbon_g_per_kwh must be a number from 0 to 5,000 (gCO2/kWh)",
        ),
        ({"energy": {"price_list": "aws"}}, "options.energy.price_list must be one of catalog, on-demand, "),
        ({"energy": {"watts": 1}}, "options.energy: unknown keys ['watts']"),
        ({"energy": {"count": "yes"}}, "options.energy.count must be true or false, got 'yes'"),
        (
            {"energy": {"carbon_g_per_kwh": {"step_s": 0, "g_per_kwh": [1]}}},
            "options.energy.carbon_g_per_kwh.step_s must be a number > 0, got 0",
        ),
        (
            {"energy": {"carbon_g_per_kwh": {"step_s": 60, "g_per_kwh": [1, None]}}},
            "options.energy.carbon_g_per_kwh.g_per_kwh must be a list of 1 to 100,000 numbers from 0 to 5,000",
        ),
        ({"energy": {"carbon_g_per_kwh": {"g_per_kwh": [1]}}}, "options.energy.carbon_g_per_kwh.step_s is missing"),
    ],
)
def test_bad_input_is_one_line_naming_the_key(data, message):
    with pytest.raises(OptionsError) as err:
        RunOptions.from_dict(data)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_the_constructor_checks_the_same_bounds():
    with pytest.raises(ValueError, match=r"^preemption.checkpoint_interval_s must be a number > 0 or null, got -4$"):
        PreemptionModel(checkpoint_interval_s=-4)
    with pytest.raises(ValueError, match=r"^preemption.restart_overhead_s must be a number >= 0, got nan$"):
        PreemptionModel(restart_overhead_s=float("nan"))


def test_the_energy_model_constructor_checks_the_same_bounds():
    with pytest.raises(ValueError, match=r"^energy.pue must be a number from 1 to 10, got 0.5$"):
        EnergyModel(pue=0.5)
    with pytest.raises(
        ValueError, match=r"^carbon series.g_per_kwh must be a list of 1 to 100,000 numbers from 0 to 5,000"
    ):
        CarbonSeries(3600.0, ())


def test_the_simulation_and_its_state_read_the_options():
    sim = Simulation(parse_cluster("1x1:generic"), [Job(0, 0.0, 10.0)], options=RunOptions(preemption=COSTLY))
    assert sim.preemption is COSTLY and sim.reset().preemption is COSTLY
    assert Simulation(parse_cluster("1x1:generic"), [Job(0, 0.0, 10.0)]).options == RunOptions()


def test_failure_presets_are_named_and_derived_from_their_sources():
    assert FailureModel.from_dict("none") == FailureModel() and not FailureModel().active
    assert FAILURE_PRESETS["meta-rsc1"].mtbf_h == pytest.approx(3692.3, abs=0.1)  # 6.50 per 1,000 node-days
    assert FAILURE_PRESETS["meta-rsc2"].mtbf_h == pytest.approx(10256.4, abs=0.1)  # 2.34 per 1,000 node-days
    llama3 = FailureModel.from_dict("llama3")
    assert (llama3.mtbf_per, round(llama3.mtbf_h)) == ("gpu", 50677)  # 419 interruptions, 54 days, 16,384 GPUs
    assert all(FAILURE_PRESETS[name].nodes_fail for name in ("meta-rsc1", "meta-rsc2", "llama3", "stress"))
    assert JOB_FAILURE_PRESETS == {"none": 0.0, "philly": 0.305, "helios": 0.155, "acme": 0.40}


def test_job_failures_take_a_preset_or_a_rate():
    assert FailureModel().with_job_failures("philly").job_failure_rate == 0.305
    assert FailureModel(mtbf_h=100.0).with_job_failures(0.3) == FailureModel(mtbf_h=100.0, job_failure_rate=0.3)
    for bad in ("often", 1.5, -0.1, float("nan")):
        with pytest.raises(OptionsError, match=r"^job failures must be one of none, philly, helios, acme or a share"):
            FailureModel().with_job_failures(bad)


def test_checkpoint_cost_adds_to_the_work_once_per_checkpoint_written():
    every_600_s = PreemptionModel(checkpoint_interval_s=600.0)
    options = RunOptions(preemption=every_600_s, failures=FailureModel(checkpoint_cost_s=30.0))
    # checkpoints after 600 and 1200 s of work (none at the end), after 600, 1200 and 1800, none
    assert options.work_s([1800.0, 1801.0, 500.0]) == [1860.0, 1891.0, 500.0]
    assert options.checkpoint_period_s == 630.0 and options.failures.active
    assert RunOptions(preemption=every_600_s).work_s([1801.0]) == [1801.0]
    assert RunOptions().checkpoint_period_s is None


def test_a_rescale_cost_out_of_bounds_names_its_key():
    with pytest.raises(OptionsError, match=r"^options.elastic.rescale_s must be a number of seconds from 0 to 86400"):
        RunOptions.from_dict({"elastic": {"rescale_s": -1}})
    assert RunOptions.from_dict({"elastic": {}}).elastic.rescale_s == 30.0  # Pollux's default
