"""Property and fuzz tests: any input gives a valid trace or one TraceError, never anything else.

Also: the vectorised fast path and the row-by-row path agree on every file the fast path accepts.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import TraceError
from engine.sim.job import Job
from engine.traces import TRACE_FORMATS, load_trace, write_csv

FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Field texts a messy trace might hold: numbers of every size and sign, blanks, words, quotes, odd bytes.
FIELD = st.one_of(
    st.integers(-5, 20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", " ", "-1", "0", "1e308", "-1e308", "1e999", "nan", "inf", "0.5", "1.0", "x", "1_000",
                     "2017-10-09 07:01:55", "\"", "a,b", "T4|A10", "LS", "\u00e9", "9" * 40]),
    st.text(max_size=6),
)
HEADERS = {
    "csv": "job_id,name,submit_s,duration_s,gpus,gpu_fraction,vram_gib,user,job_type,priority,allowed_types,"
           "estimate_s",
    "philly": "timestamp,duration,num_gpus,gpu_time,cluster",
    "openb": "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
             "scheduled_time",
    "tiresias": "job_id,num_gpu,submit_time,iterations,model_name,duration,interval",
}


def check_trace(trace):
    """What every loaded trace promises."""
    jobs = trace.jobs
    assert all(isinstance(j, Job) for j in jobs)
    assert [j.job_id for j in jobs] == list(range(len(jobs)))
    if jobs:
        assert jobs[0].submit_s == 0.0
        assert all(a.submit_s <= b.submit_s for a, b in zip(jobs, jobs[1:]))
        assert all(math.isfinite(j.submit_s) and math.isfinite(j.duration_s) for j in jobs)
    rep = trace.report
    assert rep.jobs == len(jobs)
    assert rep.rows == rep.jobs + sum(rep.dropped.values()) + rep.trimmed


def load_or_error(path, fmt=None, **kwargs):
    try:
        trace = load_trace(path, fmt, **kwargs)
    except TraceError as err:
        assert str(err) and "\n" not in str(err)
        return None
    check_trace(trace)
    return trace


@FUZZ
@given(data=st.binary(max_size=300), fmt=st.sampled_from([None, *TRACE_FORMATS]))
def test_binary_garbage(tmp_path, data, fmt):
    path = tmp_path / "garbage"
    path.write_bytes(data)
    kwargs = {"column_map": {"submit": "a", "duration": "b"}} if fmt == "mapped" else {}
    load_or_error(path, fmt, **kwargs)


def rows_strategy(width):
    ragged = st.lists(FIELD, min_size=max(0, width - 1), max_size=width + 1)
    return st.lists(st.one_of(st.lists(FIELD, min_size=width, max_size=width), ragged), max_size=8)


@pytest.mark.parametrize("fmt", sorted(HEADERS))
@FUZZ
@given(data=st.data())
def test_malformed_rows(tmp_path, fmt, data, monkeypatch):
    """Messy rows: an error naming a line, or a valid trace; skip_bad always loads; both paths agree."""
    header = HEADERS[fmt]
    rows = data.draw(rows_strategy(header.count(",") + 1))
    path = tmp_path / f"{fmt}.csv"
    path.write_text(header + "\n" + "".join(",".join(r) + "\n" for r in rows), encoding="utf-8")
    try:
        trace = load_trace(path, fmt)
    except TraceError as err:
        trace = None
        assert err.line is not None and str(err)
    if trace is not None:
        check_trace(trace)
    skipped = load_or_error(path, fmt, skip_bad=True)
    if trace is not None and skipped is not None:
        assert skipped.jobs == trace.jobs
    spec = TRACE_FORMATS[fmt]
    if spec.fast is not None:
        monkeypatch.setitem(TRACE_FORMATS, fmt, dataclasses.replace(spec, fast=None))
        try:
            row_path = load_trace(path, fmt)
        except TraceError:
            row_path = None
        assert row_path == trace


@FUZZ
@given(jobs=st.lists(st.builds(
    dict,
    duration_s=st.floats(1e-3, 1e9),
    gpus=st.integers(1, 64),
    fraction=st.sampled_from([0.1, 0.25, 1 / 3, 0.5, 1.0]),
    vram_gib=st.floats(0, 1e4),
    # Readers strip fields; inner "\r", "," and quotes survive. No NUL and no lone surrogate: write_csv refuses them.
    user=st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=5).map(str.strip),
    gap=st.floats(0, 1e7),
    estimate=st.one_of(st.just(math.nan), st.floats(1e-3, 1e9)),
), min_size=1, max_size=20))
def test_write_read_round_trip(tmp_path, jobs):
    t, built = 0.0, []
    for i, j in enumerate(jobs):
        t = t + j["gap"] if i else 0.0
        frac = j["fraction"]
        built.append(Job(i, t, j["duration_s"], 1 if frac < 1 else j["gpus"], frac, j["vram_gib"],
                         j["user"] or "user0", "batch", 0, frozenset(), j["estimate"], f"n{i}"))
    path = write_csv(built, tmp_path / "rt.csv")
    assert load_trace(path).jobs == tuple(built)


def test_write_csv_rejects_nul(tmp_path):
    with pytest.raises(ValueError, match="NUL"):
        write_csv([Job(0, 0.0, 1.0, user="a\x00b")], tmp_path / "x.csv")


def test_write_csv_rejects_text_utf8_cannot_encode(tmp_path):
    with pytest.raises(ValueError, match=r"job 0: .*'\\ud800', which UTF-8 cannot encode"):
        write_csv([Job(0, 0.0, 1.0, user="a\ud800")], tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()  # checked before anything is written


# Rows that are well-formed but exercise every drop rule (zero/negative durations, no GPU, empty times).
NUM = st.sampled_from(["0", "1", "2", "8", "-1", "", "3.5", "1e3", "7200", " 4 "])
VALID_ROWS = {
    "csv": st.tuples(st.integers(0, 9).map(str), st.just("n"), NUM, NUM, st.sampled_from(["", "1", "2", "0"]),
                     st.sampled_from(["", "1", "0.5"]), st.sampled_from(["", "0", "16"]),
                     st.sampled_from(["", "u1", "u2"]), st.sampled_from(["", "training"]), st.just(""),
                     st.sampled_from(["", "T4", "A10|T4"]), st.sampled_from(["", "60"])),
    "philly": st.tuples(st.sampled_from(["2017-10-09 07:01:55", "2017-10-10 00:00:00", ""]), NUM,
                        st.sampled_from(["0", "1", "4"]), st.just("0"), st.sampled_from(["6214e9", "a", ""])),
    "openb": st.tuples(st.just("p"), st.just("1"), st.just("1"), st.sampled_from(["0", "1", "2"]),
                       st.sampled_from(["1000"]), st.sampled_from(["", "T4", "G9", "V100M16|G9"]),
                       st.sampled_from(["LS", "BE", ""]), st.just("Running"), NUM, NUM, st.just("")),
}


@pytest.mark.parametrize("fmt", sorted(VALID_ROWS))
@FUZZ
@given(data=st.data())
def test_fast_path_agrees_with_row_path(tmp_path, fmt, data, monkeypatch):
    rows = data.draw(st.lists(VALID_ROWS[fmt], min_size=1, max_size=12))
    path = tmp_path / f"{fmt}.csv"
    path.write_text(HEADERS[fmt] + "\n" + "".join(",".join(r) + "\n" for r in rows), encoding="utf-8")
    fast = load_or_error(path, fmt)
    spec = TRACE_FORMATS[fmt]
    monkeypatch.setitem(TRACE_FORMATS, fmt, dataclasses.replace(spec, fast=None))
    assert load_or_error(path, fmt) == fast


SWF_NUM = st.sampled_from(["0", "1", "4", "-1", "60", "3600", "1.5", "1e3"])


@FUZZ
@given(rows=st.lists(st.lists(SWF_NUM, min_size=18, max_size=18), min_size=1, max_size=12))
def test_swf_fast_path_agrees_with_row_path(tmp_path, rows, monkeypatch):
    path = tmp_path / "t.swf"
    path.write_text("; MaxProcs: 8\n" + "".join(" ".join(r) + "\n" for r in rows), encoding="utf-8")
    fast = load_or_error(path, "swf")
    monkeypatch.setitem(TRACE_FORMATS, "swf", dataclasses.replace(TRACE_FORMATS["swf"], fast=None))
    assert load_or_error(path, "swf") == fast
