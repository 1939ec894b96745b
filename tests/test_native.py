"""The compiled engine (engine/_native.py): used only while it matches its sources, and identical results."""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine import _native, make_scheduler, parse_cluster, simulate
from engine.schedulers import SCHEDULERS
from engine.sim.options import PreemptionModel, RunOptions
from engine.traces.generator import generate

REPO = Path(__file__).resolve().parents[1]
FIELDS = (
    "status",
    "first_start_s",
    "end_s",
    "run_s",
    "preemptions",
    "comm_overhead_gpu_s",
    "lost_gpu_s",
    "seg_job",
    "seg_start_s",
    "seg_end_s",
    "seg_gpu_ptr",
    "seg_gpu_ids",
    "seg_fraction",
    "series_t",
    "series_queue",
    "series_running",
    "series_busy_gpus",
    "series_stranded_gpus",
)


@pytest.fixture
def fake_tree(tmp_path, monkeypatch):
    """A copy of the listed sources under ``tmp_path``, each with an (empty) extension beside it."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    for module in _native.NATIVE_MODULES:
        src = tmp_path.joinpath(*module.split(".")).with_suffix(".py")
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(f"# {module}\n")
        Path(f"{src.with_suffix('')}{suffix}").write_bytes(b"")
    manifest = tmp_path / "engine" / "_compiled.json"
    monkeypatch.setattr(_native, "ROOT", tmp_path)
    monkeypatch.setattr(_native, "MANIFEST", manifest)
    hashes = {m: hashlib.sha256(f"# {m}\n".encode()).hexdigest() for m in _native.NATIVE_MODULES}
    manifest.write_text(json.dumps(hashes))
    return tmp_path


def test_extensions_built_from_the_current_sources_are_used(fake_tree):
    assert _native.stale_modules() == []


def test_an_edited_source_makes_its_module_stale(fake_tree):
    _native.source_of("engine.sim.occupancy").write_text("# edited after the build\n")
    assert _native.stale_modules() == ["engine.sim.occupancy"]


def test_a_missing_extension_or_manifest_makes_modules_stale(fake_tree):
    src = _native.source_of("engine.sim.simulator")
    Path(f"{src.with_suffix('')}{importlib.machinery.EXTENSION_SUFFIXES[0]}").unlink()
    assert _native.stale_modules() == ["engine.sim.simulator"]
    _native.MANIFEST.unlink()
    assert _native.stale_modules() == list(_native.NATIVE_MODULES)


def _run_in_child(code: str, pure: bool) -> str:
    env = {**os.environ, _native.PURE_ENV: "1" if pure else "0"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def test_pure_python_mode_loads_every_module_from_source():
    code = "from engine._native import compiled_modules; print(len(compiled_modules()))"
    assert _run_in_child(code, pure=True) == "0"


def _digest(scheduler: str) -> str:
    """SHA-256 over every per-job, per-segment and time-series array of one run with preemption costs on a
    mixed cluster (fractional, multi-GPU, type-restricted jobs)."""
    cluster = parse_cluster("1x8:A100-80,2x4:V100-32,2x8:T4")
    jobs = generate(cluster, 400, load=1.05, seed=5, allowed_share=0.2)
    result = simulate(
        cluster,
        jobs,
        make_scheduler(scheduler),
        seed=3,
        options=RunOptions(preemption=PreemptionModel(checkpoint_interval_s=600.0, restart_overhead_s=30.0)),
    )
    h = hashlib.sha256()
    for field in FIELDS:
        h.update(np.ascontiguousarray(getattr(result, field)).tobytes())
    h.update(repr((result.gpu_ids, result.decision_points, result.unschedulable_reasons)).encode())
    return h.hexdigest()


def test_compiled_and_interpreted_engines_give_identical_results():
    if not _native.compiled_modules():
        pytest.skip(
            "the engine runs interpreted here (not compiled: `make build` needs a C compiler; or "
            "ENGINE_PURE_PYTHON is set)"
        )
    names = sorted(SCHEDULERS)
    code = f"from tests.test_native import _digest; print(' '.join(_digest(s) for s in {names!r}))"
    interpreted = _run_in_child(code, pure=True).split()
    assert interpreted == [_digest(s) for s in names]
