"""The playground in a real browser: preset -> run -> play -> download, then a trace upload."""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from benchmarks.app_compare import CHARTS_DRAWN, COMPARE_CHARTS, wait_idle
from engine.analysis.presets import PRESETS
from engine.traces import write_csv
from engine.traces.generator import generate

REPO = Path(__file__).resolve().parents[2]
#: The README's picture is refreshed only when asked (UPDATE_SCREENSHOT=1), so `make test` leaves the tree clean.
README_SCREENSHOT = REPO / "docs" / "screenshot-compare.png"
#: Streamlit reruns, the first import of the engine and chromium's start are slow on a busy CI machine.
SLOW_MS = 120_000

pytestmark = pytest.mark.e2e
#: The time of the timeline's cursor, read from the Plotly graph inside a chart element.
CURSOR_X = "el => el.querySelector('.js-plotly-plot').data.find(t => t.name === 'cursor').x[0]"


def test_preset_compare_play_download(page: Page, app_url: str, tmp_path: Path):
    page.goto(app_url)
    expect(page.get_by_role("heading", name="GPU scheduling playground", exact=True)).to_be_visible(timeout=SLOW_MS)
    expect(page.get_by_text("Current scenario")).to_be_visible()

    # One click on a preset opens Compare with its scenario (Home lists presets sorted by name; the
    # least-loaded lesson makes the clearest picture when it exists).
    names = sorted(PRESETS)
    pick = names.index("least-loaded-collapse") if "least-loaded-collapse" in names else 0
    page.get_by_role("button", name="Open in Compare").nth(pick).click()
    expect(page.get_by_role("heading", name="Compare schedulers", exact=True)).to_be_visible(timeout=SLOW_MS)
    expect(page).to_have_url(re.compile(r"/compare\?.*cluster="))
    page.get_by_role("button", name="Run comparison").click()
    expect(page.get_by_text("Key metrics")).to_be_visible(timeout=SLOW_MS)
    page.wait_for_function(CHARTS_DRAWN, arg=COMPARE_CHARTS, timeout=SLOW_MS)
    wait_idle(page)

    # Play the timeline: the cursor (the traces named "cursor") moves forward in time.
    timeline = page.locator('[data-testid="stPlotlyChart"]').first
    assert timeline.evaluate(CURSOR_X) == 0
    timeline.locator(".updatemenu-button").first.click()
    page.wait_for_function(f"() => ({CURSOR_X})(document.querySelector('[data-testid=\"stPlotlyChart\"]')) > 0",
                           timeout=30_000)

    timeline.scroll_into_view_if_needed()
    page.mouse.move(5, 5)  # no hover label in the picture
    shot = README_SCREENSHOT if os.environ.get("UPDATE_SCREENSHOT") == "1" else tmp_path / "compare.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000  # a real picture, not an empty page

    # Download the per-job results.
    with page.expect_download(timeout=SLOW_MS) as info:
        page.get_by_role("button", name="Results (CSV, one row per job)").click()
    path = tmp_path / "results.csv"
    info.value.save_as(path)
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and {"scheduler", "job_id", "wait_s", "jct_s"} <= set(rows[0])
    assert len({r["scheduler"] for r in rows}) >= 2


def test_upload_a_trace_and_see_its_report(page: Page, app_url: str, tmp_path: Path):
    trace = write_csv(generate("2x4:V100-32", 60, load=0.9, seed=11), tmp_path / "my_trace.csv")
    page.goto(f"{app_url}/workload")
    expect(page.get_by_role("heading", name="Workload", exact=True)).to_be_visible(timeout=SLOW_MS)
    expect(page.get_by_text("Current scenario")).to_be_visible()
    page.get_by_role("tab", name="Upload a trace").click()
    uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text="Trace file")
    uploader.locator('input[type="file"]').set_input_files(str(trace))
    expect(page.get_by_text("my_trace.csv").first).to_be_visible(timeout=SLOW_MS)
    wait_idle(page)
    page.get_by_role("button", name="Load trace").click()
    expect(page.get_by_text("Loaded 60 jobs from my_trace.csv")).to_be_visible(timeout=SLOW_MS)
    expect(page.get_by_text("Trace report: my_trace.csv")).to_be_visible()
    expect(page).to_have_url(re.compile(r"w\.trace_sha256=[0-9a-f]{64}"))
