"""End-to-end fixtures: the app served by ``streamlit run`` and Debian's chromium driven by Playwright."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.app_compare import CHROMIUM, CHROMIUM_ARGS, REPO, serve_app

SHOTS = REPO / "runs" / "e2e"


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
def app_url(tmp_path_factory) -> str:
    # Models trained by the browser tests go to a temporary folder, never to runs/models/ or models/.
    before = os.environ.get("ENGINE_USER_MODELS")
    os.environ["ENGINE_USER_MODELS"] = str(tmp_path_factory.mktemp("user_models"))
    try:
        with serve_app() as url:
            yield url
    finally:
        if before is None:
            os.environ.pop("ENGINE_USER_MODELS")
        else:
            os.environ["ENGINE_USER_MODELS"] = before


@pytest.fixture
def shot(request):
    """``shot(page, step)`` writes a screenshot of the step to ``runs/e2e/<test>-<step>.png`` (git-ignored)."""
    SHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, step: str) -> Path:
        path = SHOTS / f"{request.node.name}-{step}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


def pytest_collection_modifyitems(items):
    """Every test in this folder drives a real browser: marked ``e2e`` whether or not its file says so, so
    ``make test-fast`` (``-m "not e2e"``) never starts chromium."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.e2e)
