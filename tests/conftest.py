"""Shared fixtures: where the real traces live, and small helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO.parent / "shared" / "traces"


@pytest.fixture
def traces_dir() -> Path:
    """The real traces beside the checkout; tests that need them skip when a fresh clone has none."""
    if not TRACES.is_dir():
        pytest.skip(f"real traces not found at {TRACES} (they live in ../shared/traces beside the repo)")
    return TRACES
