"""What new users tripped on, driven in a real browser: a timeline that pauses without a browser error, its
legend clear of the Plotly toolbar, nothing fetched from the internet, an agent's verdict in one line."""

from __future__ import annotations

import re
from urllib.parse import urlencode, urlparse

import pytest
from playwright.sync_api import Page, expect

from benchmarks.app_compare import CHARTS_DRAWN, COMPARE_CHARTS, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
SLOW_MS = 120_000
CURSOR_X = "el => el.querySelector('.js-plotly-plot').data.find(t => t.name === 'cursor').x[0]"


def _record_problems(page: Page, app_url: str) -> dict[str, list[str]]:
    """Browser errors (console errors, uncaught exceptions and promise rejections) and requests that leave the
    app's server, collected while the test runs."""
    seen: dict[str, list[str]] = {"errors": [], "outside": []}
    page.on("console", lambda m: m.type == "error" and not _streamlit_probe(m.location.get("url", ""))
            and seen["errors"].append(f"{m.text} ({m.location.get('url')})"))
    page.on("pageerror", lambda e: seen["errors"].append(f"pageerror: {e}"))
    page.on("request", lambda r: r.url.startswith(("http://", "https://")) and not r.url.startswith(app_url)
            and seen["outside"].append(r.url))
    return seen


def _streamlit_probe(url: str) -> bool:
    """Streamlit's frontend, opened at /PAGE, first looks for its server under /PAGE/_stcore/ (a 404 it expects)."""
    return re.match(r"/[^/]+/_stcore/", urlparse(url).path) is not None


def _boxes_overlap(a: dict, b: dict) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


def test_compare_timeline_pauses_cleanly_and_its_legend_is_clear_of_the_toolbar(page: Page, app_url: str, shot):
    seen = _record_problems(page, app_url)
    query = urlencode({"cluster": "2x4:V100-32", "sched": "fifo,sjf,first-fit,best-fit", "w.n_jobs": 60,
                       "w.users": 12, "color": "user"})
    page.goto(f"{app_url}/compare?{query}")
    expect(page.get_by_role("heading", name="Compare schedulers", exact=True)).to_be_visible(timeout=SLOW_MS)
    page.get_by_role("button", name="Run comparison").click()
    expect(page.get_by_text("Key metrics")).to_be_visible(timeout=SLOW_MS)
    page.wait_for_function(CHARTS_DRAWN, arg=COMPARE_CHARTS, timeout=SLOW_MS)
    wait_idle(page)
    timeline = page.locator('[data-testid="stPlotlyChart"]').first
    timeline.scroll_into_view_if_needed()

    # Play, then pause while it plays, three times: no browser error.
    for _ in range(3):
        timeline.locator(".updatemenu-button").first.click()
        page.wait_for_timeout(400)
        timeline.locator(".updatemenu-button").nth(1).click()
        page.wait_for_timeout(300)
    assert timeline.evaluate(CURSOR_X) > 0
    page.wait_for_timeout(500)

    # Hovering the chart shows the Plotly toolbar: it covers no legend entry.
    timeline.locator(".nsewdrag").first.hover()
    modebar = timeline.locator(".modebar").first
    expect(modebar).to_be_visible()
    bar = modebar.bounding_box()
    entries = timeline.locator(".legend .traces")
    assert entries.count() >= 2
    covered = [i for i in range(entries.count()) if _boxes_overlap(bar, entries.nth(i).bounding_box())]
    shot(page, "timeline")
    assert not seen["errors"], "\n".join(seen["errors"] + seen["outside"])
    assert not seen["outside"], seen["outside"]
    assert not covered, f"the toolbar covers legend entries {covered}"


def test_the_cluster_picture_names_its_nodes_and_racks(page: Page, app_url: str, shot):
    racks = ('{"groups":[{"nodes":2,"gpus_per_node":4,"gpu_type":"A100-80","rack":"r1"},'
             '{"nodes":2,"gpus_per_node":4,"gpu_type":"T4","rack":"r2"}]}')
    page.goto(f"{app_url}/cluster?{urlencode({'cluster': racks, 'sched': 'fifo'})}")
    expect(page.get_by_role("heading", name="Cluster", exact=True)).to_be_visible(timeout=SLOW_MS)
    page.wait_for_function(CHARTS_DRAWN, arg=1, timeout=SLOW_MS)
    wait_idle(page)
    picture = page.locator('[data-testid="stPlotlyChart"]').last
    picture.scroll_into_view_if_needed()
    x_ticks = picture.locator(".xtick text").all_text_contents()
    y_ticks = picture.locator(".ytick text").all_text_contents()
    shot(page, "picture")
    assert x_ticks == ["n0", "n1", "n2", "n3"], x_ticks
    assert y_ticks == ["GPU 0", "GPU 1", "GPU 2", "GPU 3"], y_ticks
    assert {"r1", "r2"} <= set(picture.locator(".annotation-text").all_text_contents())
