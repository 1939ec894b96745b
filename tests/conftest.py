"""Shared fixtures: where the real traces live, and small helpers."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO.parent / "shared" / "traces"


@pytest.fixture(scope="session", autouse=True)
def shared_store_in_tmp(tmp_path_factory):
    """The run store the app shares with the API (``PLAYGROUND_STORE``) in a temporary folder: tests never write
    uploads into the checkout's runs/ nor see those of an earlier test session."""
    before = os.environ.get("PLAYGROUND_STORE")
    os.environ["PLAYGROUND_STORE"] = str(tmp_path_factory.mktemp("store") / "playground.sqlite")
    yield
    if before is None:
        os.environ.pop("PLAYGROUND_STORE")
    else:
        os.environ["PLAYGROUND_STORE"] = before


@pytest.fixture
def traces_dir() -> Path:
    """The real traces beside the checkout; tests that need them skip when a fresh clone has none."""
    if not TRACES.is_dir():
        pytest.skip(f"real traces not found at {TRACES} (they live in ../shared/traces beside the repo)")
    return TRACES


@pytest.fixture(scope="session")
def ray_local():
    """One local Ray for the whole test session (its start takes seconds): 2 CPUs, no dashboard, temporary files
    under /tmp, shut down at the end. Yields the cluster's address (for tests that join it with --address)."""
    import shutil
    import tempfile

    ray = pytest.importorskip("ray")
    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    context = ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=256 * 1024**2,
        _temp_dir=temp_dir,
    )
    try:
        yield context.address_info["gcs_address"]
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture
def registry():
    """Names registered during the test, and the plug-in modules that registered them, are removed afterwards
    (the registry is global, and a plug-in loaded again from sys.modules would not register again)."""
    from engine import SCHEDULERS

    before, modules = set(SCHEDULERS), set(sys.modules)
    yield SCHEDULERS
    for name in set(SCHEDULERS) - before:
        del SCHEDULERS[name]
    for name in set(sys.modules) - modules:
        path = str(getattr(sys.modules[name], "__file__", "") or "")
        if name.startswith("engine_plugin_") or not path.startswith((sys.prefix, str(REPO / "engine"))):
            del sys.modules[name]
