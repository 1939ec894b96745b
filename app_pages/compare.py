"""Compare: run the chosen schedulers on the current scenario and show them side by side."""

import json
import math

import pandas as pd
import streamlit as st

from app_pages import common
from engine import SCHEDULERS
from engine.analysis.metrics import METRICS, best_columns
from engine.analysis.presets import PRESETS
from engine.viz import charts

st.title("Compare schedulers")
sc = common.scenario()
if sc.workload.source == "preset" and sc.workload.preset in PRESETS:
    preset = PRESETS[sc.workload.preset]
    st.info(f"**{preset.title}**  \nWhat to look at: {preset.look_at}")

heuristics = sorted(SCHEDULERS)
agents = common.trained_agents()
options = heuristics + agents
chosen = st.multiselect(
    "Schedulers (heuristics and trained agents)", options,
    default=[s for s in sc.schedulers if s in options], key="compare_schedulers",
    help="`rl:<model>` entries are trained agents from models/; oracle schedulers read true durations.")
if not agents:
    st.caption("No trained agents are available in this installation (the RL plug-in or models/ is missing).")
if tuple(chosen) != sc.schedulers:
    common.set_scenario(sc.with_schedulers(chosen))
    sc = common.scenario()

left, right = st.columns([1, 1])
color_by = left.radio("Colour jobs by", ["user", "job_type"], horizontal=True, key="compare_color_by",
                      format_func=lambda s: s.replace("_", " "))
run = right.button("▶ Run comparison", type="primary", key="compare_run", disabled=not chosen, width="stretch")

if run:
    results = {}
    bar = st.progress(0.0, text="building the workload…")
    with common.engine_errors("could not build the scenario"):
        jobs = common.jobs_of(sc)
    for i, name in enumerate(chosen):
        bar.progress(i / len(chosen), text=f"simulating {name} ({i + 1}/{len(chosen)}) on {len(jobs)} jobs…")
        with common.engine_errors(f"scheduler {name}"):
            results[name] = common.run_one(sc, name)
    bar.empty()
    common.save_results(sc, results)

saved = common.saved_results()
if saved is None:
    st.info("Pick schedulers and press **Run comparison**. Presets on the Home page fill in a ready-made scenario.")
    st.stop()
ran_sc, results = saved
if ran_sc.workload_key() != sc.workload_key():
    st.warning("These results are for an earlier cluster or workload; press **Run comparison** to update them.")
elif set(results) != set(chosen):
    st.caption("Showing the last run; press **Run comparison** to include your new choice of schedulers.")
for name in results:  # a trained agent's card says plainly whether it beats the best hand-written policy
    verdict = common.agent_verdict(name) if name.startswith("rl:") else None
    if verdict is not None:
        (st.success if verdict[0] else st.warning)(verdict[1])

# ---------------------------------------------------------------- KPI table
views = common.comparison_for(ran_sc, results)
summaries, table = views.summaries, views.table
best = best_columns(table)
st.subheader("Key metrics")
rows = [k for k in METRICS if METRICS[k].better is not None]


def _label(key: str) -> str:
    m = METRICS[key]
    arrow = "↓" if m.better == "lower" else "↑"
    return f"{m.label} ({m.unit}) {arrow}"


shown = table.loc[rows].copy()
shown.index = [_label(k) for k in rows]


def _highlight(frame: pd.DataFrame) -> pd.DataFrame:
    styles = pd.DataFrame("", index=frame.index, columns=frame.columns)
    for key, label in zip(rows, frame.index):
        for col in best.get(key, ()):
            styles.loc[label, col] = "background-color: #c7e9c0; font-weight: 600"
    return styles


def _number(v: float) -> str:
    return "–" if v != v else f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


st.dataframe(shown.style.apply(_highlight, axis=None).format(_number), width="stretch",
             key="kpi_table")
st.caption("Best value per metric in green (↓ lower is better, ↑ higher is better). "
           "Definitions are on the Learn page.")

# ---------------------------------------------------------------- timelines
st.subheader("Per-GPU timelines")
DRAWINGS = {"auto": None, "bars (SVG)": "bars", "bars (WebGL)": "webgl", "raster": "raster",
            "busy-share heatmap": "heatmap"}
drawing = st.selectbox("Timeline drawing", list(DRAWINGS), key="compare_drawing",
                       help="auto: bars for small runs, a raster for large ones, a heatmap above "
                            f"{charts.HEATMAP_GPUS} GPUs. Bars of many thousands of jobs are slow to draw.")
timeline = common.timeline_for(ran_sc, results, color_by, DRAWINGS[drawing])
mode = timeline.layout.meta["mode"]
if mode == "raster" and drawing == "auto":
    st.info(f"More than {charts.WEBGL_JOBS:,} jobs in a run or {charts.WEBGL_BARS:,} bars in all: to stay "
            f"responsive, each timeline is a raster of {charts.raster_bins(len(results))} time cells per GPU, coloured like the "
            "job that holds the GPU (hover a cell for the job). Choose *bars* above to draw every job.")
elif mode == "heatmap":
    st.info("A large run: each timeline is shown as a GPU × time heatmap of the busy share "
            f"(at most {charts.HEATMAP_ROWS} rows of GPUs and {charts.HEATMAP_BINS} time bins).")
st.caption("One row per GPU, one bar per job; press ▶ play or drag the slider to move the cursor through time. "
           "The small chart under each timeline is its queue length.")
common.plot(timeline, "timeline_chart")

# ---------------------------------------------------------------- over time and distributions
st.subheader("Queue and utilisation over time")
common.plot(common.chart_for(ran_sc, results, "series"), "series_chart")

common.plot(common.chart_for(ran_sc, results, "cdfs"), "cdf_chart")
common.plot(common.chart_for(ran_sc, results, "user_box"), "user_box")
st.caption("Gini of per-user mean wait: 0 = every user waits the same. Jain's index: 1 = perfectly fair.")

# ---------------------------------------------------------------- downloads
st.subheader("Downloads")
all_jobs = pd.concat([f.assign(scheduler=name) for name, f in views.job_frames.items()], ignore_index=True)
d1, d2, d3 = st.columns(3)
# The CSV is built only when someone downloads it (it takes longer than drawing a chart).
d1.download_button("Results (CSV, one row per job)", lambda: all_jobs.to_csv(index=False), file_name="results.csv",
                   mime="text/csv", key="download_csv", width="stretch")
payload = {"scenario": ran_sc.to_dict(),
           "summaries": {n: {k: None if isinstance(v, float) and not math.isfinite(v) else v
                             for k, v in s.to_dict().items()} for n, s in summaries.items()}}
d2.download_button("Results (JSON, metrics)", json.dumps(payload, indent=2, default=float),
                   file_name="results.json", mime="application/json", key="download_json", width="stretch")
d3.download_button("Scenario (JSON)", ran_sc.to_json(), file_name="scenario.json", mime="application/json",
                   key="download_scenario", width="stretch")
