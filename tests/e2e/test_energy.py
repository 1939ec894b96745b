"""Energy, cost and carbon in a real browser: the Cluster page sets the scenario's energy model (PUE, a carbon CSV,
the count switch, idle nodes' power-down) into the link; Compare shows the energy rows and the power panel and
exports them; Explore draws wait against cost with its Pareto front and finds the cheapest mix of two node shapes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from benchmarks.app_compare import CHARTS_DRAWN, REPO, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
SLOW_MS = 120_000
RAY_MS = 240_000
ENERGY = {"cluster": "1x4:A100-80,2x4:T4", "sched": "first-fit,cost-aware", "w.n_jobs": 40, "o.energy.pue": 1.2}


def test_cluster_page_sets_pue_and_a_carbon_csv_into_the_link(page: Page, app_url: str, shot):
    page.goto(f"{app_url}/cluster?cluster=2x4%3AT4")
    expect(page.get_by_role("heading", name="Energy and cost", exact=True)).to_be_visible(timeout=SLOW_MS)
    wait_idle(page)
    page.get_by_role("spinbutton", name="PUE (facility power ÷ IT power)").fill("1.3")
    page.get_by_text("hourly CSV").click()
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').last.set_input_files(
        str(REPO / "sample_traces" / "carbon" / "daily.csv")
    )
    page.get_by_role("button", name="Apply energy and cost").click()
    expect(page).to_have_url(re.compile(r"o\.energy\.pue=1\.3"), timeout=SLOW_MS)
    expect(page).to_have_url(re.compile(r"o\.energy\.carbon_g_per_kwh=.*g_per_kwh"))
    expect(page.get_by_text(re.compile(r"Carbon: 24 values, one every 60 min"))).to_be_visible()
    shot(page, "energy")


def test_compare_shows_energy_rows_and_the_power_panel_and_exports_them(page: Page, app_url: str, tmp_path: Path):
    page.goto(f"{app_url}/compare?{urlencode(ENERGY)}")
    expect(page.get_by_role("heading", name="Compare schedulers", exact=True)).to_be_visible(timeout=SLOW_MS)
    page.get_by_role("button", name="Run comparison").click()
    expect(page.get_by_role("heading", name="Queue, utilisation and power over time")).to_be_visible(timeout=SLOW_MS)
    page.wait_for_function(CHARTS_DRAWN, arg=2, timeout=SLOW_MS)
    wait_idle(page)
    kpi = page.locator('[data-testid="stDataFrame"]').first
    expect(kpi).to_contain_text("Cost of GPUs held")
    expect(kpi).to_contain_text("kg CO2")
    expect(page.get_by_text("kW (PUE 1.2)")).to_be_visible()
    with page.expect_download(timeout=60_000) as info:
        page.get_by_role("button", name="Results (JSON, metrics)").click()
    info.value.save_as(tmp_path / "results.json")
    payload = json.loads((tmp_path / "results.json").read_text())
    assert payload["energy_model"]["pue"] == 1.2
    assert all(s["cost_usd"] > 0 and s["co2_kg"] > 0 for s in payload["summaries"].values())


def test_explore_draws_wait_against_cost_and_finds_the_cheapest_cluster(page: Page, app_url: str):
    page.goto(f"{app_url}/explore?{urlencode(ENERGY)}")
    expect(page.get_by_role("heading", name="Explore", exact=True)).to_be_visible(timeout=SLOW_MS)
    page.get_by_role("textbox", name="Offered loads").fill("0.5,1.2")
    page.get_by_role("spinbutton", name="Seeds").fill("1")
    page.get_by_role("button", name="Run sweep").click()
    expect(page.get_by_text("4 of 4 cells completed on Ray")).to_be_visible(timeout=RAY_MS)
    expect(page.get_by_text(re.compile(r"against Cost of GPUs held .*Pareto front"))).to_be_visible(timeout=SLOW_MS)

    page.get_by_role("tab", name="Cheapest cluster").click()
    page.get_by_role("textbox", name="Node shape A (GPUS:TYPE)").fill("4:T4")
    page.get_by_role("textbox", name="Node shape B (GPUS:TYPE)").fill("4:A100-80")
    page.get_by_role("spinbutton", name="At most nodes of each").fill("4")
    page.get_by_role("button", name="Find the cheapest cluster").click()
    expect(page.get_by_text(re.compile(r"no mix of 4:T4 and 4:A100-80 cheaper than the answer meets"))).to_be_visible(
        timeout=RAY_MS
    )
    expect(page.get_by_text(re.compile(r"^\$[\d,]+\.\d\d/h$")).first).to_be_visible()


def test_the_count_switch_and_power_down_travel_in_the_link_to_compare(page: Page, app_url: str):
    page.goto(f"{app_url}/cluster?cluster=2x4%3AT4&sched=first-fit&w.n_jobs=30")
    expect(page.get_by_role("heading", name="Energy and cost", exact=True)).to_be_visible(timeout=SLOW_MS)
    wait_idle(page)
    page.get_by_text("Count energy, cost and carbon").click()
    expect(page).to_have_url(re.compile(r"o\.energy\.count=true"), timeout=SLOW_MS)
    wait_idle(page)
    page.get_by_text("Power idle nodes down").click()
    page.get_by_role("spinbutton", name="after idle (s)").fill("900")
    page.get_by_role("button", name="Apply energy and cost").click()
    expect(page).to_have_url(re.compile(r"o\.power_down\.idle_timeout_s=900"), timeout=SLOW_MS)
    page.goto(page.url.replace("/cluster?", "/compare?"))
    expect(page.get_by_role("heading", name="Compare schedulers", exact=True)).to_be_visible(timeout=SLOW_MS)
    page.get_by_role("button", name="Run comparison").click()
    kpi = page.locator('[data-testid="stDataFrame"]').first
    expect(kpi).to_contain_text("Energy per completed job", timeout=SLOW_MS)
    expect(kpi).to_contain_text("Cost per useful GPU-hour")
