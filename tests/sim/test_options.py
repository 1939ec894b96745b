"""Run options: one record, read back from its JSON form, every bound refused with a line naming the key."""

from __future__ import annotations

import json

import pytest

from engine import Job, PreemptionModel, RunOptions, Simulation, parse_cluster
from engine.sim.options import OptionsError

COSTLY = PreemptionModel(checkpoint_interval_s=900.0, restart_overhead_s=45.0)


def test_to_dict_and_from_dict_round_trip_through_json():
    for options in (
        RunOptions(),
        RunOptions(preemption=COSTLY),
        RunOptions(preemption=PreemptionModel(restart_overhead_s=12.5)),
    ):
        data = json.loads(json.dumps(options.to_dict()))
        assert RunOptions.from_dict(data) == options
    assert RunOptions().to_dict() == {"preemption": {"checkpoint_interval_s": None, "restart_overhead_s": 0.0}}


def test_missing_keys_take_their_defaults():
    assert RunOptions.from_dict({}) == RunOptions()
    assert RunOptions.from_dict({"preemption": {"restart_overhead_s": 5}}).preemption == PreemptionModel(
        restart_overhead_s=5
    )


@pytest.mark.parametrize(
    "data, message",
    [
        ([], "options must be an object (keys: preemption)"),
        ({"failures": {}}, "options: unknown keys ['failures']; valid keys: ['preemption']"),
        ({"preemption": 3}, "options.preemption must be an object with checkpoint_interval_s, restart_overhead_s"),
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


def test_the_simulation_and_its_state_read_the_options():
    sim = Simulation(parse_cluster("1x1:generic"), [Job(0, 0.0, 10.0)], options=RunOptions(preemption=COSTLY))
    assert sim.preemption is COSTLY and sim.reset().preemption is COSTLY
    assert Simulation(parse_cluster("1x1:generic"), [Job(0, 0.0, 10.0)]).options == RunOptions()
