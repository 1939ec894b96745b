"""The one unit check every trace import runs (engine.traces.plausibility), through each import path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from engine.traces import load_trace
from engine.traces.plausibility import unit_warning

# A Muri-style Tiresias CSV in milliseconds: 2 h, 30 min and 8 h jobs arriving over three days.
MURI_MS = (
    "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
    "1,1,0,100,resnet50,7200000,1\n"
    "2,2,86400000,100,vgg16,1800000,1\n"
    "3,4,259200000,100,bert,28800000,1\n"
)
ROOT = Path(__file__).resolve().parents[2]


def test_silent_on_plausible_times_and_names_the_suspects_otherwise():
    assert unit_warning([0, 3600, 86_400], [600, 7200, 900]) == ""
    note = unit_warning([0, 86_400_000, 259_200_000], [7_200_000, 1_800_000, 28_800_000])
    assert "the median job would run 83.3 d" in note and "would span 8.21 years" in note
    assert note.endswith("They look like milliseconds: choose the time unit ms.")
    fixed = unit_warning([0, 1e12], [1e9, 1e9], switchable=False)
    assert fixed.endswith("The format is read in seconds: check the file's time unit.")


def test_a_detected_millisecond_trace_is_flagged_and_loads_clean_in_ms(tmp_path):
    path = tmp_path / "muri.csv"
    path.write_text(MURI_MS)
    as_seconds = load_trace(path)
    assert as_seconds.format == "tiresias"
    assert "They look like milliseconds" in as_seconds.report.unit_warning
    assert as_seconds.report.to_dict()["unit_warning"] == as_seconds.report.unit_warning
    assert load_trace(path, time_unit="ms").report.unit_warning == ""


def test_formats_without_a_unit_option_are_checked_too(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("submit_s,duration_s,gpus\n0,7200000,1\n86400000,1800000,2\n259200000,28800000,1\n")
    assert "check the file's time unit" in load_trace(path).report.unit_warning


def test_cli_trace_info_and_simulate_say_how_to_switch(tmp_path):
    path = tmp_path / "muri.csv"
    path.write_text(MURI_MS)
    out = tmp_path / "info.json"
    info = subprocess.run(
        [sys.executable, "-m", "engine", "trace", "info", str(path), "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert info.returncode == 0, info.stderr
    assert "warning: If these times are seconds" in info.stdout and "add --time-unit ms." in info.stdout
    assert "milliseconds" in json.loads(out.read_text())["unit_warning"]
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "simulate",
            "--cluster",
            "2x4:V100-32",
            "--trace",
            str(path),
            "--scheduler",
            "fifo",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert f"warning: {path}: If these times are seconds" in run.stderr
    clean = subprocess.run(
        [sys.executable, "-m", "engine", "trace", "info", str(path), "--time-unit", "ms"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert clean.returncode == 0 and "warning" not in clean.stdout
