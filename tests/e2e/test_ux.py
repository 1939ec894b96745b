"""What new users tripped on, driven in a real browser: a timeline that pauses without a browser error, its
legend clear of the Plotly toolbar, nothing fetched from the internet, an agent's verdict in one line."""

from __future__ import annotations

import re
from urllib.parse import urlencode, urlparse

import pytest
from playwright.sync_api import Page, expect

from benchmarks.app_compare import CHARTS_DRAWN, COMPARE_CHARTS, wait_idle
from engine import SCHEDULERS

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
SLOW_MS = 120_000
#: A trained agent shipped in models/.
AGENT = "rl:wait-mlp"
CURSOR_X = "el => el.querySelector('.js-plotly-plot').data.find(t => t.name === 'cursor').x[0]"


def _record_problems(page: Page, app_url: str) -> dict[str, list[str]]:
    """Browser errors (console errors, uncaught exceptions and promise rejections) and requests that leave the
    app's server, collected while the test runs."""
    seen: dict[str, list[str]] = {"errors": [], "outside": []}
    page.on(
        "console",
        lambda m: (
            m.type == "error"
            and not _streamlit_probe(m.location.get("url", ""))
            and seen["errors"].append(f"{m.text} ({m.location.get('url')})")
        ),
    )
    page.on("pageerror", lambda e: seen["errors"].append(f"pageerror: {e}"))
    page.on(
        "request",
        lambda r: (
            r.url.startswith(("http://", "https://"))
            and not r.url.startswith(app_url)
            and seen["outside"].append(r.url)
        ),
    )
    return seen


def _streamlit_probe(url: str) -> bool:
    """Streamlit's frontend, opened at /PAGE, first looks for its server under /PAGE/_stcore/ (a 404 it expects)."""
    return re.match(r"/[^/]+/_stcore/", urlparse(url).path) is not None


def _boxes_overlap(a: dict, b: dict) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def test_compare_timeline_pauses_cleanly_and_its_legend_is_clear_of_the_toolbar(page: Page, app_url: str, shot):
    seen = _record_problems(page, app_url)
    query = urlencode(
        {
            "cluster": "2x4:V100-32",
            "sched": f"fifo,sjf,first-fit,{AGENT}",
            "w.n_jobs": 60,
            "w.users": 12,
            "color": "user",
        }
    )
    page.goto(f"{app_url}/compare?{query}")
    expect(page.get_by_role("heading", name="Compare schedulers", exact=True)).to_be_visible(timeout=SLOW_MS)
    page.get_by_role("button", name="Run comparison").click()
    expect(page.get_by_text("Key metrics")).to_be_visible(timeout=SLOW_MS)
    page.wait_for_function(CHARTS_DRAWN, arg=COMPARE_CHARTS, timeout=SLOW_MS)
    wait_idle(page)
    # The agent's verdict is one line; the card's sentence, setting by setting, is behind an expander.
    verdict = page.get_by_role("alert").filter(has_text=f"{AGENT}:")
    expect(verdict).to_have_count(1)
    assert re.fullmatch(
        rf"{AGENT}: (Beats|Does not beat) the best hand-written policy[^\n]*\.", verdict.inner_text().strip()
    ), verdict.inner_text()
    details = page.get_by_text(re.compile(rf"^{re.escape(AGENT)} (does not beat|has a lower objective than) the best"))
    expect(details).to_be_hidden()
    page.get_by_text(f"How {AGENT} was tested, setting by setting").click()
    expect(details).to_be_visible()
    # The job story names the job by its id in the trace (the generator's TYPE-INDEX), and one is picked by it.
    picked = page.get_by_role("textbox", name="Job (its id in the trace)").input_value()
    assert re.fullmatch(r"[a-z]+-\d+", picked), picked
    expect(page.get_by_text(f"fifo: Job {picked} (")).to_be_visible()
    page.get_by_role("textbox", name="Job (its id in the trace)").fill("batch-3")
    page.keyboard.press("Enter")
    expect(page.get_by_text("fifo: Job batch-3 (")).to_be_visible(timeout=SLOW_MS)
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
    racks = (
        '{"groups":[{"nodes":2,"gpus_per_node":4,"gpu_type":"A100-80","rack":"r1"},'
        '{"nodes":2,"gpus_per_node":4,"gpu_type":"T4","rack":"r2"}]}'
    )
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


#: The server starts its own local Ray on the first sweep or plan: tens of seconds on a busy 2-core machine.
RAY_MS = 240_000
#: True when no text in the page's metric cards is cut off (an ellipsis: its box is narrower than its text).
CARDS_FIT = """() => Array.from(document.querySelectorAll('[data-testid="stMetric"] *'))
    .filter(e => e.children.length === 0 && e.textContent.trim())
    .every(e => e.scrollWidth <= e.clientWidth + 1)"""


def test_explore_keeps_errors_in_their_tab_and_speaks_human_units(page: Page, app_url: str, shot):
    seen = _record_problems(page, app_url)
    query = urlencode({"cluster": "2x4:V100-32", "sched": "fifo,sjf", "w.n_jobs": 40})
    page.goto(f"{app_url}/explore?{query}")
    expect(page.get_by_role("heading", name="Explore", exact=True)).to_be_visible(timeout=SLOW_MS)

    # A bad sweep: its error stays in the Sweep tab; the Capacity plan tab still works.
    page.get_by_role("textbox", name="Offered loads").fill("0.5,abc")
    page.get_by_role("button", name="Run sweep").click()
    sweep_tab, plan_tab = page.get_by_role("tabpanel").nth(0), page.get_by_role("tabpanel").nth(1)
    expect(sweep_tab.get_by_text("expected comma-separated numbers")).to_be_visible(timeout=SLOW_MS)
    page.get_by_role("tab", name="Capacity plan").click()
    plan_tab = page.get_by_role("tabpanel").filter(has=page.get_by_role("button", name="Find the fewest nodes"))
    expect(plan_tab.get_by_role("textbox", name="Node shape (GPUS:TYPE)")).to_be_visible()
    expect(plan_tab.get_by_text("expected comma-separated numbers")).to_have_count(0)

    # A plan: the target typed as a duration, the current cluster grown by default, cards that fit.
    expect(plan_tab.get_by_role("checkbox", name="Grow the current cluster")).to_be_checked()
    plan_tab.get_by_role("textbox", name="Target value").fill("20 min")
    plan_tab.get_by_role("button", name="Find the fewest nodes").click()
    expect(page.get_by_text("against nodes (★ fewest nodes meeting the target)")).to_be_visible(timeout=RAY_MS)
    wait_idle(page)
    curve = plan_tab.locator('[data-testid="stPlotlyChart"]').first
    y_title = curve.evaluate("el => el.querySelector('.js-plotly-plot').layout.yaxis.title.text")
    target = curve.evaluate("el => el.querySelector('.js-plotly-plot').layout.shapes[0].y0")
    assert y_title in ("p95 wait (min)", "p95 wait (h)", "p95 wait (d)"), y_title
    assert target == {"p95 wait (min)": 20, "p95 wait (h)": 20 / 60, "p95 wait (d)": 20 / 1440}[y_title]
    assert page.evaluate(CARDS_FIT)
    expect(plan_tab.get_by_text("None", exact=True)).to_have_count(0)
    shot(page, "plan")

    # A sweep: the heatmap starts at load x scheduler, durations in their unit, the band never below zero.
    page.get_by_role("tab", name="Sweep").click()
    page.get_by_role("textbox", name="Offered loads").fill("0.6,1.2")
    page.get_by_role("spinbutton", name="Seeds").fill("2")
    page.get_by_role("button", name="Run sweep").click()
    expect(page.get_by_text("8 of 8 cells completed on Ray")).to_be_visible(timeout=RAY_MS)
    page.wait_for_function(CHARTS_DRAWN, arg=3, timeout=60_000)
    wait_idle(page)
    charts = sweep_tab.locator('[data-testid="stPlotlyChart"]')
    curves = charts.nth(0).evaluate("el => el.querySelector('.js-plotly-plot').data")
    assert min(y for t in curves if t["name"].endswith(" 95 % band") for y in t["y"]) >= 0
    assert any(t["name"].startswith("shaded: 95 % band over seeds, clipped to") for t in curves)
    heat = charts.nth(1).evaluate("el => el.querySelector('.js-plotly-plot').layout")
    assert (heat["xaxis"]["title"]["text"], heat["yaxis"]["title"]["text"]) == ("load", "scheduler")
    assert "1.2M" not in charts.nth(0).inner_text()
    shot(page, "sweep")
    assert not seen["errors"], "\n".join(seen["errors"])


def test_learn_explains_and_runs_the_trained_agents_in_human_units(page: Page, app_url: str, shot):
    seen = _record_problems(page, app_url)
    page.goto(f"{app_url}/learn")
    expect(page.get_by_role("heading", name="Learn", exact=True)).to_be_visible(timeout=SLOW_MS)
    # Descriptions wrap in their cells: the longest one shows in full.
    longest = max((s.summary for s in SCHEDULERS.values()), key=len)
    # (matched by its text, not its accessible name, which the browser may clip for a long description)
    cell = page.get_by_role("cell").filter(has_text=longest[:40]).first
    expect(cell).to_be_visible(timeout=SLOW_MS)  # the table follows the heading; on a busy machine, seconds later
    assert cell.inner_text() == longest
    assert cell.evaluate("e => e.scrollWidth <= e.clientWidth + 1 && e.scrollHeight <= e.clientHeight + 1")
    agent_rows = page.locator('[data-testid="stTable"]').nth(1).locator("tbody tr")
    expect(agent_rows.first).to_be_visible()  # the page streams: the agents' table may come after the first one
    agents = [row.split("\t")[0].strip() for row in agent_rows.all_inner_texts()]
    assert agents and all(a.startswith("rl:") for a in agents), agents
    expect(
        page.get_by_text("Does not beat the best hand-written policy").first.or_(
            page.get_by_text("Beats the best hand-written policy").first
        )
    ).to_be_visible()
    # An agent runs the worked example; its durations read as durations.
    page.get_by_role("combobox", name="Scheduler").click()
    page.keyboard.type(agents[0])
    page.get_by_role("option", name=agents[0], exact=True).click()
    page.wait_for_function(
        "name => Array.from(document.querySelectorAll('.js-plotly-plot')).some(p => p.layout.annotations"
        " && p.layout.annotations.some(a => a.text === name))",
        arg=agents[0],
        timeout=SLOW_MS,
    )
    wait_idle(page)
    page.keyboard.press("Escape")
    timeline = page.locator('[data-testid="stPlotlyChart"]').first
    timeline.scroll_into_view_if_needed()
    timeline.locator(".updatemenu-button").first.click()
    page.wait_for_timeout(300)
    timeline.locator(".updatemenu-button").nth(1).click()
    page.wait_for_timeout(300)
    shot(page, "agent")
    assert not seen["errors"], "\n".join(seen["errors"])


def test_home_counts_heuristics_and_agents_apart(page: Page, app_url: str):
    page.goto(app_url)
    expect(page.get_by_role("heading", name="GPU scheduling playground", exact=True)).to_be_visible(timeout=SLOW_MS)
    text = page.get_by_text(re.compile(r"\d+ heuristics? and")).first.inner_text()
    match = re.search(r"(\d+) heuristics? and (\d+) trained RL agents?", text)
    assert match and int(match.group(1)) == len(SCHEDULERS), text
