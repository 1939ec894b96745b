"""Every loader on the real traces in ../shared/traces, counts checked against that folder's README.

Skipped with a clear reason when the folder is absent (a fresh clone has no ../shared).
"""

from __future__ import annotations

import dataclasses
from functools import cache

import pytest

from engine.errors import ClusterSpecError, TraceError
from engine.sim.cluster import parse_cluster
from engine.traces import TRACE_FORMATS, load_trace, read_file

OPENB = "alibaba-gpu-v2023-openb"


@cache
def cached(path):
    """Each real file is loaded once per session with default options (Philly takes a second or two)."""
    return load_trace(path)


@pytest.mark.parametrize(
    ("path", "fmt", "rows", "dropped", "users"),
    [
        ("philly/philly.csv", "philly", 82_247, {}, 15),
        (f"{OPENB}/openb_pod_list_default.csv", "openb", 8_152, {"no_gpu": 1_088, "non_positive_duration": 1}, 4),
        (f"{OPENB}/openb_pod_list_gpuspec33.csv", "openb", 8_152, {"no_gpu": 1_088, "non_positive_duration": 1}, 4),
        (f"{OPENB}/openb_pod_list_gpushare100.csv", "openb", 8_152, {"no_gpu": 1_088, "non_positive_duration": 3}, 2),
        ("tiresias/60_job.csv", "tiresias", 60, {}, 1),
        ("gavel/artifact_evaluation.trace", "gavel", 15, {}, 1),
    ],
)
def test_counts(traces_dir, path, fmt, rows, dropped, users):
    trace = cached(traces_dir / path)
    rep = trace.report
    assert trace.format == fmt
    assert (rep.rows, rep.dropped, rep.users) == (rows, dropped, users)
    assert rep.jobs == len(trace.jobs) == rows - sum(dropped.values())
    assert trace.jobs[0].submit_s == 0.0
    assert [j.job_id for j in trace.jobs] == list(range(rep.jobs))
    assert all(a.submit_s <= b.submit_s for a, b in zip(trace.jobs, trace.jobs[1:]))


def test_philly_figures(traces_dir):
    """README: num_gpus 1-128, gpu_time = duration x num_gpus; the virtual cluster is the user."""
    trace = cached(traces_dir / "philly" / "philly.csv")
    assert min(j.gpus for j in trace.jobs) == 1 and max(j.gpus for j in trace.jobs) == 128
    assert trace.report.gpu_histogram["1"] == 76_627  # 93.2 % single-GPU (the generator's figure)
    assert "6214e9" in {j.user for j in trace.jobs}  # an id that would parse as a number


def test_openb_gpu_spec_and_fractions(traces_dir):
    trace = cached(traces_dir / OPENB / "openb_pod_list_gpuspec33.csv")
    pinned = [j for j in trace.jobs if j.allowed_types]
    assert pinned and all(
        t in {"P100", "T4", "V100-16", "V100-32", "A10", "G1", "G2", "G3"} for j in pinned for t in j.allowed_types
    )
    assert sum(j.fractional for j in trace.jobs) / len(trace.jobs) == pytest.approx(0.436, abs=0.01)


def test_gavel_is_static(traces_dir):
    trace = load_trace(traces_dir / "gavel" / "artifact_evaluation.trace")
    assert trace.report.span_s == 0 and {j.gpus for j in trace.jobs} == {1, 2}


def test_multigpu50_has_no_times(traces_dir):
    with pytest.raises(TraceError, match="no creation_time/deletion_time"):
        load_trace(traces_dir / OPENB / "openb_pod_list_multigpu50.csv")


@pytest.mark.parametrize("name", ["openb_node_list_gpu_node.csv", "openb_node_list_all_node.csv"])
def test_openb_nodes_as_cluster(traces_dir, name):
    """README: 1,213 GPU nodes, 6,212 GPUs."""
    cluster = parse_cluster(f"openb:{traces_dir / OPENB / name}")
    assert (cluster.n_nodes, cluster.n_gpus) == (1_213, 6_212)
    assert set(cluster.gpus_by_type()) == {"P100", "T4", "V100-16", "V100-32", "A10", "G2", "G3"}
    with pytest.raises(TraceError, match="--cluster openb:PATH"):
        load_trace(traces_dir / OPENB / name)


def test_openb_cluster_errors(tmp_path):
    bad = tmp_path / "nodes.csv"
    bad.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,8,T4\nn1,1,1,8,Z99\n")
    with pytest.raises(ClusterSpecError, match="line 3, column 'model': unknown GPU model 'Z99'"):
        parse_cluster(f"openb:{bad}")
    with pytest.raises(ClusterSpecError, match="file not found"):
        parse_cluster(f"openb:{tmp_path / 'missing.csv'}")


@pytest.mark.parametrize(
    "path",
    [
        "philly/philly.csv",
        "swf-kth-sp2/KTH-SP2-1996-2.1-cln.swf",
        f"{OPENB}/openb_pod_list_gpuspec33.csv",
        f"{OPENB}/openb_pod_list_gpushare100.csv",
    ],
)
def test_fast_path_matches_row_path(traces_dir, path, monkeypatch):
    fast = cached(traces_dir / path)
    fmt = TRACE_FORMATS[fast.format]
    assert read_file(fmt, traces_dir / path).used_fast_path
    monkeypatch.setitem(TRACE_FORMATS, fmt.name, dataclasses.replace(fmt, fast=None))
    assert load_trace(traces_dir / path) == fast
