"""load_trace's shared steps: sorting, shifting, --first/--window/--load-scale, options, and bad files."""

from __future__ import annotations

import pytest

from engine.errors import TraceError, UnknownNameError
from engine.traces import TRACE_FORMATS, load_trace

ROWS = [(500, 10), (100, 20), (300, 30), (100, 40), (900, 50)]


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("submit_s,duration_s,gpus\n" + "".join(f"{s},{d},2\n" for s, d in ROWS))
    return p


def test_sorted_stable_and_shifted(path):
    trace = load_trace(path)
    assert [(j.job_id, j.submit_s, j.duration_s) for j in trace.jobs] == [
        (0, 0.0, 20.0),
        (1, 0.0, 40.0),
        (2, 200.0, 30.0),
        (3, 400.0, 10.0),
        (4, 800.0, 50.0),
    ]
    rep = trace.report
    assert (rep.rows, rep.jobs, rep.span_s, rep.users, rep.trimmed) == (5, 5, 800.0, 1, 0)
    assert rep.gpu_hours == pytest.approx(2 * 150 / 3600)
    assert rep.gpu_histogram == {"2": 5}
    assert rep.offered_load(4) == pytest.approx(300 / (4 * 800))


def test_first_window_and_load_scale(path):
    assert [j.duration_s for j in load_trace(path, first=2).jobs] == [20.0, 40.0]
    trace = load_trace(path, window=(150, 500))
    assert [(j.submit_s, j.duration_s) for j in trace.jobs] == [(0.0, 30.0), (200.0, 10.0)]
    assert trace.report.trimmed == 3
    trace = load_trace(path, window=(150, 900), first=1, load_scale=2)
    assert [(j.submit_s, j.duration_s) for j in trace.jobs] == [(0.0, 30.0)]
    assert [j.submit_s for j in load_trace(path, load_scale=4).jobs] == [0.0, 0.0, 50.0, 100.0, 200.0]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"time_unit": "s"}, "does not apply to format 'csv'"),
        ({"column_map": {"submit": "x"}}, "does not apply"),
        ({"first": -1}, "first must be >= 0"),
        ({"window": (5, 1)}, "START <= END"),
        ({"load_scale": 0}, "load scale"),
    ],
)
def test_bad_options(path, kwargs, expected):
    with pytest.raises(TraceError, match=expected):
        load_trace(path, **kwargs)


def test_unknown_format_lists_valid_names(path):
    with pytest.raises(UnknownNameError) as err:
        load_trace(path, "nope")
    assert all(name in str(err.value) for name in TRACE_FORMATS)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "file not found"),
        (b"", "empty file"),
        (b"\x00\x01\x02garbage", "NUL"),
        (b"\xff\xfe\xfa bytes", "not UTF-8"),
        (b"\x1f\x8bnot really gzip", "cannot read"),
        (b"just some words\n", "fits no known trace format"),
        (b"sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,8,T4\n", "--cluster openb:PATH"),
    ],
)
def test_bad_files_give_one_clear_error(tmp_path, content, expected):
    p = tmp_path / "bad"
    if content is not None:
        p.write_bytes(content)
    with pytest.raises(TraceError, match=expected):
        load_trace(p)
