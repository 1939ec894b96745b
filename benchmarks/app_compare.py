"""Browser benchmark of the Compare page: click "Run comparison" -> every chart drawn.

Starts ``streamlit run app.py`` on a free local port, drives Debian's chromium with Playwright (never a
downloaded browser) and measures, for 5 schedulers on 2,000 generated jobs and 64 GPUs, the seconds from the
click on "Run comparison" until all 4 charts of the page (timeline, queue/utilisation, wait and JCT CDFs,
per-user waits) are drawn by Plotly:

* ``typical``: the way people use it: a new tab opens the Workload page of the scenario (so the jobs are
  generated and Plotly's JavaScript is loaded), then goes to Compare through the sidebar and clicks Run;
  the 5 simulations are *not* cached (each repetition uses a new workload seed);
* ``cold_link``: a new tab opens a Compare link directly and clicks Run: the click also pays for generating
  the jobs and for loading Plotly's JavaScript (about 4.6 MB) the first time;
* ``widget``: after a widget change (colour by job type) on a finished comparison, the time until the charts
  are redrawn, and whether the results were kept (no rerun of the simulations needed).

Usage: ``.venv/bin/python -m benchmarks.app_compare [--jobs 2000] [--repeat 3]``. Prints one line per
measurement and a JSON summary. The target is under 3 s from click to all charts drawn. Timings depend on the
machine's load: run it on a quiet machine and report ``os.getloadavg()`` with the numbers (it is printed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
#: Flags for Debian's chromium in a container (no sandbox, no GPU, no background traffic).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCHEDULERS = ("fifo", "first-fit", "best-fit", "sjf", "easy-backfill")
#: Charts the Compare page draws after a run: timeline, queue/utilisation, wait and JCT CDFs (one chart, two
#: panels), per-user box.
COMPARE_CHARTS = 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_app(timeout_s: float = 90.0, script: str = "app.py") -> Iterator[str]:
    """Run ``streamlit run SCRIPT`` (default: the playground) on a free port; yields its base URL once its
    health check answers."""
    port = free_port()
    (REPO / "runs").mkdir(exist_ok=True)  # git-ignored; the server's log goes there for post-mortems
    log = open(REPO / "runs" / f"streamlit-{port}.log", "wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            script,
            "--server.port",
            str(port),
            "--server.headless",
            "true",
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with code {proc.returncode} before answering")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not answer on {url} within {timeout_s:.0f} s")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def scenario_url(
    base: str, page: str, n_jobs: int, seed: int = 0, cluster: str = "8x8:A100-80", schedulers=SCHEDULERS
) -> str:
    """A page of the app with a scenario in its query parameters (what a shared link carries)."""
    query = {"cluster": cluster, "sched": ",".join(schedulers), "w.n_jobs": n_jobs}
    if seed:
        query["w.seed"] = seed
    return f"{base}/{page}?" + urlencode(query)


#: True once ``n`` Plotly charts exist and Plotly has finished laying each out (``_fullLayout``).
CHARTS_DRAWN = """n => {
  const plots = document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot');
  return plots.length >= n && Array.from(plots).every(p => p._fullLayout && p.querySelector('.main-svg'));
}"""


#: True once the first Plotly chart (the timeline) has a legend titled ``title``.
LEGEND_TITLE = """title => {
  const p = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
  return !!(p && p._fullLayout && p._fullLayout.legend && p._fullLayout.legend.title.text === title);
}"""


def wait_idle(page, timeout_ms: int = 120_000) -> None:
    """Wait until Streamlit has finished its rerun (the "running" indicator is gone)."""
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout_ms)


def time_run(page, timeout_ms: int = 120_000) -> float:
    """Click "Run comparison" and return seconds until every Compare chart is drawn."""
    page.get_by_role("button", name="Run comparison").wait_for(timeout=timeout_ms)
    t0 = time.perf_counter()
    page.get_by_role("button", name="Run comparison").click()
    page.wait_for_selector("text=Key metrics", timeout=timeout_ms)
    page.wait_for_function(CHARTS_DRAWN, arg=COMPARE_CHARTS, timeout=timeout_ms)
    return time.perf_counter() - t0


#: The baseline, measured in the same run: a page shaped like the peer tool (7 schedulers on 1,000 jobs, then
#: four bar charts of one metric each, nothing kept across reruns), built on this project's engine so that
#: only the page design differs. Written to runs/ and served by its own ``streamlit run``.
BASELINE_PAGE = """
import streamlit as st
import plotly.graph_objects as go
from engine import make_scheduler, simulate
from engine.analysis.metrics import summarize
from engine.traces.generator import generate

if st.button("Run comparison"):
    jobs = generate("8x8:A100-80", 1000, load=0.9, seed=int(st.session_state.get("n", 0)))
    st.session_state["n"] = st.session_state.get("n", 0) + 1
    names = ["fifo", "first-fit", "best-fit", "least-loaded", "random", "sjf", "easy-backfill"]
    s = {n: summarize(simulate(__import__("engine").parse_cluster("8x8:A100-80"), jobs, make_scheduler(n)))
         for n in names}
    for key in ("mean_wait_s", "mean_jct_s", "utilization", "makespan_s"):
        st.plotly_chart(go.Figure(go.Bar(x=names, y=[getattr(s[n], key) for n in names])), key=key)
"""
BASELINE_CHARTS = 4


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=3, help="repetitions of the typical measurement")
    p.add_argument(
        "--schedulers",
        default=",".join(SCHEDULERS),
        help="comma-separated schedulers, e.g. fifo,first-fit,best-fit,sjf,rl:wait-mlp (an agent)",
    )
    args = p.parse_args(argv)
    schedulers = tuple(s for s in args.schedulers.split(",") if s)
    from playwright.sync_api import sync_playwright

    out: dict = {
        "jobs": args.jobs,
        "gpus": 64,
        "schedulers": list(schedulers),
        "loadavg_before": [round(x, 2) for x in os.getloadavg()],
    }
    viewport = {"width": 1400, "height": 1000}
    with serve_app() as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport=viewport)
        page.goto(scenario_url(base, "compare", args.jobs, seed=1000, schedulers=schedulers))
        out["cold_link_s"] = time_run(page)
        print(f"cold link: click -> {COMPARE_CHARTS} charts drawn in {out['cold_link_s']:.2f} s")
        page.close()
        typical = []
        for i in range(args.repeat):
            page = browser.new_page(viewport=viewport)
            page.goto(scenario_url(base, "workload", args.jobs, seed=i + 1, schedulers=schedulers))
            page.wait_for_function(CHARTS_DRAWN, arg=5, timeout=120_000)
            page.get_by_role("link", name="Compare").click()
            typical.append(time_run(page))
            print(
                f"typical: click -> {COMPARE_CHARTS} charts drawn in {typical[-1]:.2f} s "
                f"({len(schedulers)} new simulations)"
            )
            if i < args.repeat - 1:
                page.close()
        out["typical_s"] = [round(t, 3) for t in typical]
        out["typical_median_s"] = round(statistics.median(typical), 3)
        # Results survive a widget change: switch the colouring; the KPI table stays, nothing reruns.
        t0 = time.perf_counter()
        page.get_by_text("job type", exact=True).click()
        # Redrawn = the timeline's legend is titled by the new colouring (checking for an idle page right after
        # the click can pass before the rerun has started).
        page.wait_for_function(LEGEND_TITLE, arg="job type", timeout=120_000)
        page.wait_for_function(CHARTS_DRAWN, arg=COMPARE_CHARTS)
        out["widget_change_s"] = round(time.perf_counter() - t0, 3)
        wait_idle(page)
        out["results_kept_after_widget_change"] = (
            page.get_by_text("Key metrics").count() == 1
            and page.get_by_role("button", name="Run comparison").count() == 1
            and page.get_by_text("Pick schedulers and press").count() == 0
        )
        print(
            f"widget change: charts redrawn in {out['widget_change_s']:.2f} s; "
            f"results kept: {out['results_kept_after_widget_change']}"
        )
        browser.close()
    # The baseline page, same browser, same machine, right after.
    baseline_script = REPO / "runs" / "bench_baseline_page.py"
    baseline_script.write_text(BASELINE_PAGE)
    with serve_app(script=str(baseline_script)) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        base_times = []
        for _ in range(args.repeat + 1):  # the first click also loads Plotly's JavaScript, like cold_link
            page = browser.new_page(viewport=viewport)
            page.goto(base)
            page.get_by_role("button", name="Run comparison").wait_for(timeout=120_000)
            t0 = time.perf_counter()
            page.get_by_role("button", name="Run comparison").click()
            page.wait_for_function(CHARTS_DRAWN, arg=BASELINE_CHARTS, timeout=120_000)
            base_times.append(time.perf_counter() - t0)
            print(f"baseline (peer-shaped page): click -> {BASELINE_CHARTS} bar charts in {base_times[-1]:.2f} s")
            page.close()
        browser.close()
    out["baseline_s"] = [round(t, 3) for t in base_times]
    out["baseline_median_s"] = round(statistics.median(base_times), 3)
    out["typical_over_baseline"] = round(out["typical_median_s"] / out["baseline_median_s"], 2)
    out["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
