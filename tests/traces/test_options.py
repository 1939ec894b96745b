"""Trace loading options in one place: time units and the load_trace arguments a stored workload stands for."""

import pytest

from engine.errors import TraceError
from engine.traces import load_trace
from engine.traces.options import DEFAULT_TIME_UNIT, TIME_UNITS, load_options, seconds_per


def test_time_units_and_their_default():
    assert seconds_per("ms") == 1e-3 and seconds_per("s") == 1.0
    assert seconds_per("") == seconds_per(None) == TIME_UNITS[DEFAULT_TIME_UNIT] == 1.0
    with pytest.raises(KeyError):
        seconds_per("us")


def test_load_trace_refuses_a_unit_it_does_not_know(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,1,m,10,1\n")
    with pytest.raises(TraceError, match="time unit 'us': expected 's' or 'ms'"):
        load_trace(path, "tiresias", time_unit="us")
    ms = load_trace(path, "tiresias", time_unit="ms").jobs[0]
    assert ms.duration_s == pytest.approx(0.01) and load_trace(path, "tiresias").jobs[0].duration_s == 10.0


def test_load_options_leave_the_defaults_out():
    assert load_options() == {}
    assert load_options(format="", skip_bad=False, time_unit="", column_map=(), first=0) == {}
    options = load_options(format="mapped", skip_bad=True, time_unit="ms", column_map=(("submit", "t"),), first=5)
    assert list(options.items()) == [
        ("format", "mapped"),
        ("skip_bad", True),
        ("time_unit", "ms"),
        ("column_map", {"submit": "t"}),
        ("first", 5),
    ]
    assert load_trace.__kwdefaults__.keys() >= options.keys() - {"format"}  # every key is a load_trace argument
