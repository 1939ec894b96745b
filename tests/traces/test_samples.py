"""sample_traces/: every file loads with its documented counts, and the script regenerates it bit for bit."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from engine.sim.cluster import parse_cluster
from engine.traces import load_trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
SCRIPT = SAMPLES.parent / "scripts" / "make_samples.py"
MAP = {
    "submit": "start_ms",
    "duration": "run_ms",
    "gpus": "gpu_count",
    "gpu_fraction": "gpu_share",
    "vram_gib": "mem_gb",
    "user": "owner",
    "job_type": "queue",
    "name": "task",
}


def test_script_regenerates_the_samples_bit_for_bit(tmp_path):
    spec = importlib.util.spec_from_file_location("make_samples", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--out", str(tmp_path)]) == 0
    made = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert made == sorted(
        str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*") if p.is_file() and p.name != "README.md"
    )
    for name in made:
        assert (tmp_path / name).read_bytes() == (SAMPLES / name).read_bytes(), name


@pytest.mark.parametrize(
    ("name", "fmt", "kwargs", "rows", "dropped"),
    [
        ("canonical.csv", "csv", {}, 500, {}),
        ("sample.swf", "swf", {}, 300, {"no_gpu": 1, "non_positive_duration": 1}),
        ("philly.csv", "philly", {}, 300, {}),
        ("openb-pods.csv", "openb", {}, 300, {"no_gpu": 12}),
        ("tiresias.csv", "tiresias", {"time_unit": "s"}, 60, {}),
        ("gavel.trace", "gavel", {}, 30, {}),
        ("pollux.csv", "pollux", {}, 40, {"unknown_application": 2}),
        ("mapped.csv", "mapped", {"column_map": MAP, "time_unit": "ms"}, 200, {}),
    ],
)
def test_samples_load(name, fmt, kwargs, rows, dropped):
    trace = load_trace(SAMPLES / name, fmt if fmt == "mapped" else None, **kwargs)
    assert trace.format == fmt
    assert (trace.report.rows, trace.report.dropped) == (rows, dropped)
    assert trace.report.jobs == rows - sum(dropped.values())


def test_carbon_sample_is_a_day_of_hourly_intensity():
    from engine.traces.carbon import load_carbon_csv

    series = load_carbon_csv(SAMPLES / "carbon" / "daily.csv")
    assert (series.step_s, len(series.g_per_kwh), series.start) == (3600.0, 24, "2024-01-01T00:00:00Z")
    assert min(series.g_per_kwh) == series.g_per_kwh[13] == 260.0 and max(series.g_per_kwh) == series.g_per_kwh[1]


def test_openb_sample_cluster():
    cluster = parse_cluster(f"openb:{SAMPLES / 'openb-nodes.csv'}")
    assert cluster.gpus_by_type() == {"T4": 12, "V100-32": 16}


def test_canonical_sample_matches_the_generator():
    from engine.traces.generator import generate

    assert load_trace(SAMPLES / "canonical.csv").jobs == generate(
        "4x8:A100-80,2x4:V100-32", 500, 0.8, 1, allowed_share=0.1
    )
