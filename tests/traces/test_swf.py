"""SWF reader: the issue's mapping rules on hand-made lines, gzip, errors, and the real KTH SP2 log."""

from __future__ import annotations

import gzip

import pytest

from engine.errors import TraceError
from engine.traces import load_trace

HEADER = "; Version: 2.2\n; MaxProcs: 100\n;\n"


def swf_line(job_id, submit, run, alloc, req_procs, req_time, user=1):
    fields = [job_id, submit, 0, run, alloc, -1, -1, req_procs, req_time, -1, 1, user, 1, -1, -1, -1, -1, -1]
    return " ".join(str(f) for f in fields)


def write(tmp_path, lines, name="t.swf"):
    path = tmp_path / name
    path.write_text(HEADER + "\n".join(lines) + "\n")
    return path


def test_mapping_rules(tmp_path):
    path = write(
        tmp_path,
        [
            swf_line(1, 100, 50, 4, 8, 600),  # requested processors win over allocated; estimate = requested
            swf_line(2, 160, 30, 2, -1, -1),  # no request: allocated processors; no estimate: run time
            swf_line(3, 170, 0, 2, 2, 60),  # run time 0: dropped
            swf_line(4, 180, -1, 2, 2, 60),  # run time unknown: dropped
            swf_line(5, 190, 10, -1, -1, 60),  # no processors: dropped
            swf_line(6, -1, 10, 1, 1, 60),  # no submit time: dropped
            swf_line(7, 150, 20, 1, 1, 60, -1),  # unknown user
        ],
    )
    trace = load_trace(path)
    assert trace.format == "swf"
    assert [(j.name, j.submit_s, j.duration_s, j.gpus, j.estimate_s, j.user) for j in trace.jobs] == [
        ("1", 0.0, 50.0, 8, 600.0, "u1"),
        ("7", 50.0, 20.0, 1, 60.0, "unknown"),
        ("2", 60.0, 30.0, 2, 30.0, "u1"),
    ]
    assert [j.job_id for j in trace.jobs] == [0, 1, 2]
    assert trace.report.rows == 7
    assert trace.report.dropped == {"non_positive_duration": 2, "no_gpu": 1, "missing_time": 1}


def test_gzip_reads_like_plain(tmp_path):
    lines = [swf_line(i, 10 * i, 5 + i, 1 + i % 3, -1, 100) for i in range(1, 30)]
    plain = write(tmp_path, lines)
    gz = tmp_path / "t.swf.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes(), mtime=0))
    assert load_trace(gz).jobs == load_trace(plain, "swf").jobs


@pytest.mark.parametrize(
    ("line", "column"),
    [
        (swf_line(1, 100, "abc", 1, 1, 60), "field 4 (run_time)"),
        (swf_line(1, "1e999", 5, 1, 1, 60), "field 2 (submit)"),
        (swf_line(1, 100, 5, 1, 2.5, 60), "field 8 (requested_processors)"),
        ("1 2 3", "field 4 (run_time)"),
    ],
)
def test_malformed_line_names_line_and_column(tmp_path, line, column):
    path = write(tmp_path, [swf_line(1, 0, 5, 1, 1, 60), line])
    with pytest.raises(TraceError) as err:
        load_trace(path, "swf")
    assert err.value.line == 5 and err.value.column == column
    assert "line 5" in str(err.value) and column in str(err.value)
    trace = load_trace(path, "swf", skip_bad=True)
    assert len(trace.jobs) == 1 and trace.report.dropped == {"malformed": 1}
    assert trace.report.examples and "line 5" in trace.report.examples[0]


def test_real_kth(traces_dir):
    """Counts from ../shared/traces/README.md: 28,476 jobs, 8 with run time 0, one with -1 processors."""
    trace = load_trace(traces_dir / "swf-kth-sp2" / "KTH-SP2-1996-2.1-cln.swf")
    rep = trace.report
    assert trace.format == "swf"
    assert rep.rows == 28_476
    assert rep.dropped == {"non_positive_duration": 8, "no_gpu": 1}
    assert rep.jobs == len(trace.jobs) == 28_476 - 9
    assert rep.users == 214
    assert trace.jobs[0].submit_s == 0.0
    assert all(a.submit_s <= b.submit_s for a, b in zip(trace.jobs, trace.jobs[1:]))
    assert [j.job_id for j in trace.jobs] == list(range(rep.jobs))
    assert max(j.gpus for j in trace.jobs) == 100  # MaxProcs
    assert sum(j.duration_s > j.estimate_s for j in trace.jobs) == 475


def test_status_zero_jobs_end_failed_on_both_paths(tmp_path):
    from engine import make_scheduler, parse_cluster, simulate
    from engine.sim.simulator import COMPLETED, FAILED
    from engine.traces import TRACE_FORMATS, read_file

    lines = [swf_line(i, 10 * i, 100 + i, 1, 1, 600) for i in range(1, 7)]
    lines = [
        " ".join(f if k != 10 else str(status) for k, f in enumerate(line.split()))
        for line, status in zip(lines, (1, 0, 5, 0, -1, 1))
    ]  # field 11: 1 completed, 0 failed, 5 cancelled
    path = write(tmp_path, lines)
    trace = load_trace(path)
    assert [j.failed for j in trace.jobs] == [False, True, False, True, False, False]
    assert trace.report.failed == 2 and trace.report.to_dict()["failed"] == 2
    slow = read_file(TRACE_FORMATS["swf"], path, use_fast=False)
    fast = read_file(TRACE_FORMATS["swf"], path)
    assert fast.used_fast_path and list(slow.rows.failed) == list(fast.rows.failed) == [0, 1, 0, 1, 0, 0]
    result = simulate(parse_cluster("1x2:generic"), trace.jobs, make_scheduler("fifo"))
    assert result.status.tolist() == [COMPLETED, FAILED, COMPLETED, FAILED, COMPLETED, COMPLETED]
    assert result.run_s.tolist() == [j.duration_s for j in trace.jobs]  # a failed job ran its recorded time
