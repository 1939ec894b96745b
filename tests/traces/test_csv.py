"""Canonical CSV: write/read round trip, defaults, and one clear error per kind of bad input."""

from __future__ import annotations

import functools
import math

import pytest

from engine import traces
from engine.errors import TraceError
from engine.sim.job import Job
from engine.traces import load_trace, write_csv

JOBS = (
    Job(
        0,
        0.0,
        3600.5,
        gpus=8,
        vram_gib=40.0,
        user="alice",
        job_type="training",
        priority=2,
        allowed_types=frozenset({"A100-80", "H100-80"}),
        estimate_s=7200.0,
        name="train-1",
    ),
    Job(1, 0.1, 12.25, gpu_fraction=0.25, vram_gib=8.0, user="bob", job_type="inference", name='a,b "quoted"'),
    Job(2, 0.2 + 1e-7, 1 / 3, user="carol", job_type="my-label", priority=-1, estimate_s=0.5),
    Job(3, 86400.0, 60.0),
)


def test_round_trip_gives_equal_jobs(tmp_path):
    path = write_csv(JOBS, tmp_path / "jobs.csv")
    trace = load_trace(path)
    assert trace.format == "csv"
    assert trace.jobs == JOBS
    assert trace.report.rows == 4 and trace.report.dropped == {}


def write(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_text(text)
    return path


def test_defaults_and_any_column_order(tmp_path):
    path = write(tmp_path, "duration_s,submit_s,job_id\n30,110,a\n20,100,b\n")
    jobs = load_trace(path).jobs
    assert jobs == (Job(0, 0.0, 20.0, name="b"), Job(1, 10.0, 30.0, name="a"))
    assert jobs[0].estimate_s == 20.0 and jobs[0].user == "user0" and jobs[0].job_type == "batch"


def test_drops_are_counted_not_errors(tmp_path):
    path = write(tmp_path, "submit_s,duration_s,gpus\n0,10,1\n,10,1\n5,0,1\n6,-3,1\n7,10,0\n8,10,\n")
    trace = load_trace(path)
    assert [j.submit_s for j in trace.jobs] == [0.0, 8.0]
    assert trace.report.dropped == {"missing_time": 1, "non_positive_duration": 2, "no_gpu": 1}


@pytest.mark.parametrize(
    ("text", "line", "column", "expected"),
    [
        ("submit_s,duration_s\n0,10\n1,ten\n", 3, "duration_s", "a number"),
        ("submit_s,duration_s,gpus\n0,10,1\n1,10,1.5\n", 3, "gpus", "an integer"),
        ("submit_s,duration_s,gpu_fraction\n0,10,1.5\n", 2, "gpu_fraction", "(0, 1]"),
        ("submit_s,duration_s,gpus,gpu_fraction\n0,10,2,0.5\n", 2, "gpu_fraction", "exactly 1 GPU"),
        ("submit_s,duration_s,vram_gib\n0,10,-1\n", 2, "vram_gib", ">= 0"),
        ("submit_s,duration_s,estimate_s\n0,10,0\n", 2, "estimate_s", "> 0"),
        ("submit_s,duration_s\n0,inf\n", 2, "duration_s", "finite"),
        ("submit_s,duration_s\n1e300,10\n", 2, "submit_s", "a time within"),
        ("submit_s,duration_s,gpus\n0,10\n", 2, "gpus", "3 fields"),
        ("submit_s,duration_s\n0,10,7\n", 2, "field 3", "2 fields"),
        ('submit_s,duration_s\n0,10\n\n\n1,"x\n', 5, None, "not valid CSV"),
    ],
)
def test_bad_rows_name_line_and_column(tmp_path, text, line, column, expected):
    with pytest.raises(TraceError) as err:
        load_trace(write(tmp_path, text), "csv")
    assert err.value.line == line and err.value.column == column
    assert expected in str(err.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "empty file"),
        ("submit_s,duration_s,durations\n", "unknown column 'durations'"),
        ("submit_s,gpus\n", "missing required column 'duration_s'"),
        ("submit_s,duration_s,submit_s\n", "appears twice"),
    ],
)
def test_bad_headers(tmp_path, text, expected):
    with pytest.raises(TraceError, match=expected):
        load_trace(write(tmp_path, text), "csv")


def test_skip_bad_keeps_good_rows(tmp_path):
    path = write(tmp_path, "submit_s,duration_s\n0,10\n1,x\n2,20\n3,y\n")
    trace = load_trace(path, skip_bad=True)
    assert [j.duration_s for j in trace.jobs] == [10.0, 20.0]
    assert trace.report.dropped == {"malformed": 2}
    assert trace.report.examples == (
        "line 3, column 'duration_s': expected a number, got 'x'",
        "line 5, column 'duration_s': expected a number, got 'y'",
    )


def test_header_only_is_an_empty_trace(tmp_path):
    trace = load_trace(write(tmp_path, "submit_s,duration_s\n"))
    assert trace.jobs == () and trace.report.jobs == 0 and trace.report.span_s == 0
    assert math.isclose(trace.report.gpu_hours, 0)


def test_the_failed_column_round_trips_and_is_written_only_when_it_says_something(tmp_path):
    jobs = [Job(0, 0.0, 10.0), Job(1, 5.0, 20.0, failed=True)]
    path = write_csv(jobs, tmp_path / "failed.csv")
    assert path.read_text().splitlines()[0].endswith(",estimate_s,failed")
    assert load_trace(path, "csv").jobs == tuple(jobs)
    plain = write_csv([jobs[0]], tmp_path / "plain.csv")
    assert plain.read_text().splitlines()[0].endswith(",estimate_s")  # files of jobs that never failed: unchanged
    for text, failed in (("TRUE", True), ("0", False), ("", False)):
        (tmp_path / "t.csv").write_text(f"submit_s,duration_s,failed\n0,10,{text}\n")
        assert load_trace(tmp_path / "t.csv", "csv").jobs[0].failed is failed
    (tmp_path / "bad.csv").write_text("submit_s,duration_s,failed\n0,10,yes\n")
    with pytest.raises(TraceError, match="failed.*expected 0, 1, true, false or empty, got 'yes'"):
        load_trace(tmp_path / "bad.csv", "csv")


@pytest.mark.parametrize("use_fast", [True, False])
def test_the_deadline_column_round_trips_keeps_its_slack_and_is_written_only_when_some_job_has_one(
    tmp_path, monkeypatch, use_fast
):
    monkeypatch.setattr(traces, "read_file", functools.partial(traces.read_file))
    jobs = [Job(0, 0.0, 10.0, deadline_s=0.3), Job(1, 0.1, 20.0), Job(2, 5.0, 20.0, deadline_s=1e6 / 3)]
    path = write_csv(jobs, tmp_path / "deadlines.csv")
    assert path.read_text().splitlines()[:3] == [
        "job_id,name,submit_s,duration_s,gpus,gpu_fraction,vram_gib,user,"
        "job_type,priority,allowed_types,estimate_s,deadline_s",
        "0,,0.0,10.0,1,1.0,0.0,user0,batch,0,,10.0,0.3",
        "1,,0.1,20.0,1,1.0,0.0,user0,batch,0,,20.0,",
    ]
    assert load_trace(path, "csv").jobs == tuple(jobs)
    (tmp_path / "t.csv").write_text("submit_s,duration_s,deadline_s\n100,10,150\n200,10,\n300,10,700\n")
    shifted = load_trace(tmp_path / "t.csv", "csv").jobs
    assert [j.deadline_s for j in shifted] == [50.0, math.inf, 600.0]  # shifted with the submit times
    scaled = load_trace(tmp_path / "t.csv", "csv", load_scale=2.0).jobs
    assert [j.deadline_s - j.submit_s for j in scaled] == [50.0, math.inf, 400.0]  # the slack stays under a scale
    (tmp_path / "bad.csv").write_text("submit_s,duration_s,deadline_s\n100,10,150\n200,10,200\n")
    with pytest.raises(TraceError, match="line 3.*deadline_s.*a deadline after the submit time"):
        load_trace(tmp_path / "bad.csv", "csv")
