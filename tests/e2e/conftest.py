"""End-to-end fixtures: the app served by ``streamlit run`` and Debian's chromium driven by Playwright."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.app_compare import CHROMIUM, CHROMIUM_ARGS, serve_app


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Launch the system chromium (CI installs it with apt-get); never a downloaded browser."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS, "headless": True}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1400, "height": 1000}, "accept_downloads": True}


@pytest.fixture(scope="session")
def app_url() -> str:
    with serve_app() as url:
        yield url
