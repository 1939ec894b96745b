"""The playground in a real browser: preset -> run -> play -> download, then a trace upload."""

from __future__ import annotations

import csv
import os
import re
import shutil
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
#: The time readout the cursor carries (its text at the top end).
CURSOR_TEXT = "el => el.querySelector('.js-plotly-plot').data.find(t => t.name === 'cursor').text[0]"


def test_preset_compare_play_scrub_download(page: Page, app_url: str, tmp_path: Path, shot):
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
    page.wait_for_function(
        f"() => ({CURSOR_X})(document.querySelector('[data-testid=\"stPlotlyChart\"]')) > 0", timeout=30_000
    )
    timeline.locator(".updatemenu-button").nth(1).click()  # pause
    shot(page, "playing")

    # Scrub: drag the slider's grip to about 60 % of its rail; the cursor and its time readout follow.
    rail = timeline.locator(".slider-rail-rect").first.bounding_box()
    grip = timeline.locator(".slider-grip-rect").first.bounding_box()
    page.mouse.move(grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] / 2)
    page.mouse.down()
    page.mouse.move(rail["x"] + 0.6 * rail["width"], grip["y"] + grip["height"] / 2, steps=8)
    page.mouse.up()
    page.wait_for_function(
        f"() => {{ const el = document.querySelector('[data-testid=\"stPlotlyChart\"]'); "
        f"return ({CURSOR_X})(el) > 0 && ({CURSOR_TEXT})(el) !== '0 s'; }}",
        timeout=30_000,
    )
    readout = timeline.evaluate(CURSOR_TEXT)
    assert re.fullmatch(r"[0-9.,]+ (s|min|h|d)", readout), readout
    ticks = timeline.evaluate(
        "el => el.querySelector('.js-plotly-plot').layout.sliders[0].steps.map(s => s.label).filter(l => l)"
    )
    assert len(ticks) >= 2 and all(re.fullmatch(r"[0-9.,]+ (s|min|h|d)", t) for t in ticks), ticks  # e.g. "4.6 h"

    timeline.scroll_into_view_if_needed()
    page.mouse.move(5, 5)  # no hover label in the picture
    picture = README_SCREENSHOT if os.environ.get("UPDATE_SCREENSHOT") == "1" else tmp_path / "compare.png"
    page.screenshot(path=str(picture))
    assert picture.stat().st_size > 10_000  # a real picture, not an empty page
    shot(page, "scrubbed")

    # Download the per-job results.
    with page.expect_download(timeout=SLOW_MS) as info:
        page.get_by_role("button", name="Results (CSV, one row per job)").click()
    path = tmp_path / "results.csv"
    info.value.save_as(path)
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and {"scheduler", "job_id", "wait_s", "jct_s"} <= set(rows[0])
    assert len({r["scheduler"] for r in rows}) >= 2


def test_upload_a_trace_and_see_its_report(page: Page, app_url: str, tmp_path: Path, shot):
    trace = write_csv(generate("2x4:V100-32", 60, load=0.9, seed=11), tmp_path / "my_trace.csv")
    page.goto(f"{app_url}/workload")
    expect(page.get_by_role("heading", name="Workload", exact=True)).to_be_visible(timeout=SLOW_MS)
    expect(page.get_by_text("Current scenario")).to_be_visible()
    _upload(page, trace)
    page.get_by_role("button", name="Load trace").click()
    expect(page.get_by_text("Loaded 60 jobs from my_trace.csv")).to_be_visible(timeout=SLOW_MS)
    expect(page.get_by_text("Trace report: my_trace.csv")).to_be_visible()
    expect(page).to_have_url(re.compile(r"w\.trace_sha256=[0-9a-f]{64}"))
    expect(page.get_by_text("trace my_trace.csv", exact=False).first).to_be_visible()  # the sidebar follows
    shot(page, "loaded")


def _upload(page: Page, path: Path) -> None:
    """Open the upload tab once the page has finished running (its 5 workload charts drawn: a tab clicked while
    the page still runs can be reset) and choose ``path``."""
    page.wait_for_function(CHARTS_DRAWN, arg=5, timeout=SLOW_MS)
    wait_idle(page)
    page.get_by_role("tab", name="Upload a trace").click()
    uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text="Trace file")
    uploader.locator('input[type="file"]').set_input_files(str(path))
    # the server's own line, so a click that follows loads this file and not the one before
    expect(page.get_by_text(f"Ready to load: {path.name}")).to_be_visible(timeout=SLOW_MS)
    wait_idle(page)


def test_upload_an_unknown_csv_through_the_column_mapping(page: Page, app_url: str, tmp_path: Path, shot):
    trace = tmp_path / "cluster_log.csv"
    trace.write_text("id,created,finished,ngpu,owner\n1,0,600,1,ana\n2,60,1800,2,bo\n3,120,900,1,ana\n")
    page.goto(f"{app_url}/workload")
    expect(page.get_by_role("heading", name="Workload", exact=True)).to_be_visible(timeout=SLOW_MS)
    _upload(page, trace)
    # The file's columns, a preview, and dropdowns holding the guessed mapping.
    expect(page.get_by_text("not those of a trace format the playground knows")).to_be_visible(timeout=SLOW_MS)
    expect(page.get_by_text("Columns in cluster_log.csv")).to_be_visible()
    expect(page.get_by_role("combobox", name="submit time (or start)")).to_have_value("created")
    expect(page.get_by_role("combobox", name="end time")).to_have_value("finished")
    expect(page.get_by_role("combobox", name="GPUs")).to_have_value("ngpu")
    expect(page.get_by_text("duration will be finished − created")).to_be_visible()
    shot(page, "mapping")
    page.get_by_role("button", name="Load trace").click()
    expect(page.get_by_text("Loaded 3 jobs from cluster_log.csv (format: mapped)")).to_be_visible(timeout=SLOW_MS)
    expect(page.get_by_text("Trace report: cluster_log.csv")).to_be_visible()
    shot(page, "loaded")


def test_a_trace_with_jobs_that_never_run_is_stated_before_and_after_running(
    page: Page, app_url: str, tmp_path: Path, shot
):
    trace = tmp_path / "wide.csv"
    rows = [f"{10 * i},{300 + i},{16 if i % 10 == 3 else 1 + i % 4},u{i % 3}" for i in range(60)]
    trace.write_text("submit_s,duration_s,gpus,user\n" + "\n".join(rows) + "\n")
    page.goto(f"{app_url}/workload?cluster=2x4:T4&sched=fifo,sjf")
    expect(page.get_by_role("heading", name="Workload", exact=True)).to_be_visible(timeout=SLOW_MS)
    _upload(page, trace)
    page.get_by_role("button", name="Load trace").click()
    sentence = "6 of 60 jobs (10.0 %) can never run on this cluster: the widest (job 3) needs 16 GPUs of one type"
    expect(page.get_by_text(sentence)).to_be_visible(timeout=SLOW_MS)  # before anything ran
    shot(page, "workload")
    page.get_by_role("link", name="Compare").click()
    page.get_by_role("button", name="Run comparison").click()
    expect(page.get_by_text("Key metrics")).to_be_visible(timeout=SLOW_MS)
    expect(page.get_by_text(sentence)).to_be_visible()
    # The metrics table is drawn on a canvas; its cells are mirrored in an accessible grid.
    never = page.locator("tr").filter(has_text="Never ran (cannot fit the cluster)").first
    expect(never).to_be_attached()
    assert never.locator("td").all_text_contents()[-2:] == ["6", "6"]
    shot(page, "compare")


def test_train_for_a_few_seconds_see_the_curve_stop_and_use_the_agent(page: Page, app_url: str, shot):
    page.goto(f"{app_url}/train")
    expect(page.get_by_role("heading", name="Train an agent", exact=True)).to_be_visible(timeout=SLOW_MS)
    name = page.get_by_label("Model name")
    name.fill("e2e-quick")
    name.press("Enter")
    steps = page.get_by_role("spinbutton", name="Environment steps")
    steps.fill("100000")  # far more than the test waits for: it stops the run
    steps.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Start training").click()
    # The live view draws the return curve as the run logs it (at least two points of one series).
    page.wait_for_function(
        """() => Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot'))
                 .some(p => p._fullData && p._fullData.some(t => t.x && t.x.length >= 2))""",
        timeout=SLOW_MS,
    )
    shot(page, "curve")
    page.get_by_role("button", name="Stop").click()
    expect(page.get_by_text("Saved as rl:e2e-quick")).to_be_visible(timeout=SLOW_MS)
    expect(page.get_by_role("button", name="Resume")).to_be_enabled()
    shot(page, "stopped")
    page.get_by_role("link", name="Compare").click()
    expect(page.get_by_role("heading", name="Compare schedulers", exact=True)).to_be_visible(timeout=SLOW_MS)
    box = page.get_by_role("combobox", name="Schedulers (heuristics and trained agents)")
    box.click()
    box.press_sequentially("e2e-quick")  # the list is long (every hand-written policy): filter it as a user would
    expect(page.get_by_role("option", name="rl:e2e-quick")).to_be_visible(timeout=SLOW_MS)
    shutil.rmtree(REPO / "runs" / "e2e-quick", ignore_errors=True)  # its logs (the model is in a temporary folder)


def test_reopen_a_link_after_a_reload_shows_its_results(page: Page, app_url: str, shot):
    page.goto(f"{app_url}/compare?cluster=2x4:V100-32&sched=fifo,sjf&w.n_jobs=70&w.seed=77")
    page.get_by_role("button", name="Run comparison").click()
    expect(page.get_by_text("Key metrics")).to_be_visible(timeout=SLOW_MS)
    page.wait_for_function(CHARTS_DRAWN, arg=COMPARE_CHARTS, timeout=SLOW_MS)
    page.reload()
    expect(page.get_by_text("Key metrics")).to_be_visible(timeout=SLOW_MS)  # no click: the server had them
    expect(page.get_by_text("computed earlier on this server")).to_be_visible()
    page.wait_for_function(CHARTS_DRAWN, arg=COMPARE_CHARTS, timeout=SLOW_MS)
    shot(page, "reloaded")


def test_older_gavel_and_millisecond_traces_load_detected_and_warned(page: Page, app_url: str, tmp_path: Path, shot):
    """Gavel's older 7-field layout is detected and loads; a Tiresias/Muri CSV in milliseconds, detected and read
    as seconds, loads with a warning that says what looks wrong and which unit to choose."""
    gavel = tmp_path / "cluster_0.trace"
    gavel.write_text(
        "\n".join(
            "\t".join(
                [
                    "ResNet-50 (batch size 64)",
                    "python3 main.py",
                    "--num_steps",
                    str(g),
                    str(2931 * g),
                    f"{60.0 * i:.6f}",
                    "1",
                ]
            )
            for i, g in enumerate((1, 2, 4))
        )
    )
    page.goto(f"{app_url}/workload")
    expect(page.get_by_role("heading", name="Workload", exact=True)).to_be_visible(timeout=SLOW_MS)
    _upload(page, gavel)
    page.get_by_role("button", name="Load trace").click()
    expect(page.get_by_text("Loaded 3 jobs from cluster_0.trace (format: gavel)")).to_be_visible(timeout=SLOW_MS)
    muri = tmp_path / "muri.csv"
    muri.write_text(
        "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
        "1,1,0,100,resnet50,7200000,1\n2,2,86400000,100,vgg16,1800000,1\n"
        "3,4,259200000,100,bert,28800000,1\n"
    )
    _upload(page, muri)
    page.get_by_role("button", name="Load trace").click()
    expect(page.get_by_text("Trace report: muri.csv")).to_be_visible(timeout=SLOW_MS)
    expect(page.get_by_text("If these times are seconds, the median job would run 83.3 d")).to_be_visible()
    expect(page.get_by_text("They look like milliseconds: choose the time unit ms.")).to_be_visible()
    shot(page, "unit-warning")


def test_a_pollux_workload_loads_detected_with_run_times_from_the_application_profiles(
    page: Page, app_url: str, tmp_path: Path, shot
):
    """A Pollux-style workload names an application and a replica count instead of a run time: it is detected and
    loads (run times from the application profiles); a row of an application without a profile is dropped."""
    workload = tmp_path / "workload-1.csv"
    workload.write_text(
        "name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,6,2048\n"
        "ncf-1,135,ncf,1,32768\nbert-2,5813,bert,12,384\nresnet-3,6000,resnet50,2,64\n"
    )
    page.goto(f"{app_url}/workload")
    expect(page.get_by_role("heading", name="Workload", exact=True)).to_be_visible(timeout=SLOW_MS)
    _upload(page, workload)
    page.get_by_role("button", name="Load trace").click()
    expect(page.get_by_text("Loaded 3 jobs from workload-1.csv (format: pollux)")).to_be_visible(timeout=SLOW_MS)
    expect(page.get_by_text("Trace report: workload-1.csv")).to_be_visible()
    shot(page, "pollux")
