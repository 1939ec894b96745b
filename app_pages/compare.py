"""Compare: run the chosen schedulers on the current scenario and show them side by side."""

import json
import math

import pandas as pd
import streamlit as st

from app_pages.lib import common, energy
from app_pages.lib.text import as_text
from engine import SCHEDULERS
from engine.analysis import never_ran, seeds
from engine.analysis.job_story import job_story
from engine.analysis.metrics import (
    DEADLINE_METRICS,
    ELASTIC_METRICS,
    ENERGY_METRICS,
    METRICS,
    RELIABILITY_METRICS,
    summarize,
)
from engine.analysis.presets import PRESETS
from engine.viz import tables
from engine.viz.timeline import HEATMAP_BINS, HEATMAP_GPUS, HEATMAP_ROWS, WEBGL_BARS, WEBGL_JOBS, raster_bins

_SEEDS = "compare_seed_table"  # (workload key, schedulers, seeds, table) of the last multi-seed run
st.title("Compare schedulers")
sc = common.scenario()
if sc.workload.source == "preset" and sc.workload.preset in PRESETS:
    preset = PRESETS[sc.workload.preset]
    st.info(f"**{preset.title}**  \nWhat to look at: {preset.look_at}")

options = common.scheduler_choices()
agents = [o for o in options if o not in SCHEDULERS]
chosen = st.multiselect(
    "Schedulers (heuristics and trained agents)",
    options,
    default=[s for s in sc.schedulers if s in options],
    key="compare_schedulers",
    help="`rl:<model>` entries are trained agents: shipped ones and those trained on the Train page; oracle "
    "schedulers read true durations.",
)
if not agents:
    st.caption("No trained agents are available in this installation (the RL plug-in or models/ is missing).")
if tuple(chosen) != sc.schedulers:
    common.set_scenario(sc.with_schedulers(chosen))
    sc = common.scenario()

left, mid, right = st.columns([2, 1, 2], vertical_alignment="bottom")
color_by = left.radio(
    "Colour jobs by",
    ["user", "job_type"],
    horizontal=True,
    key="compare_color_by",
    format_func=lambda s: s.replace("_", " "),
)
n_seeds = mid.number_input(
    "Workload seeds",
    1,
    seeds.MAX_SEEDS,
    1,
    key="compare_seeds",
    disabled=sc.workload.source == "trace",
    help="Above 1: every scheduler also runs on the workloads of the next seeds, and a table "
    "gives each metric's mean with its 95 % confidence interval (a trace is one workload).",
)
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
    st.session_state.pop(_SEEDS, None)
    if n_seeds > 1 and sc.workload.source != "trace":
        with common.engine_errors("several workload seeds"):
            variants = seeds.seed_variants(sc, int(n_seeds))
            per_seed: dict[str, list] = {name: [] for name in chosen}
            for k, variant in enumerate(variants):
                bar.progress(
                    k / len(variants), text=f"workload seed {variant.workload.seed} ({k + 1}/{len(variants)})…"
                )
                for name in chosen:
                    per_seed[name].append(summarize(common.run_one(variant, name), energy=energy.energy_of(sc)))
        judged = [k for k in METRICS if METRICS[k].better is not None]
        if energy.energy_of(sc) is not None:
            judged += list(ENERGY_METRICS)
        if sc.options.failures.active:
            judged += [k for k in RELIABILITY_METRICS if RELIABILITY_METRICS[k].better is not None]
        if any(j.has_deadline for j in jobs):
            judged += [k for k in DEADLINE_METRICS if DEADLINE_METRICS[k].better is not None]
        if any(j.elastic for j in jobs):
            judged += [k for k in ELASTIC_METRICS if ELASTIC_METRICS[k].better is not None]
        st.session_state[_SEEDS] = (common.run_key(sc), tuple(chosen), len(variants), seeds.ci_frame(per_seed, judged))
    bar.empty()
    common.save_results(sc, results)

saved = common.saved_results()
if saved is None and not run and common.ran_before(sc):  # a reload: this server has these runs cached
    with common.engine_errors("could not rebuild the results"):
        common.save_results(sc, {name: common.run_one(sc, name) for name in sc.schedulers})
    saved = common.saved_results()
    st.caption("Results of this link's scenario, computed earlier on this server.")
if saved is None:
    st.info("Pick schedulers and press **Run comparison**. Presets on the Home page fill in a ready-made scenario.")
    st.stop()
ran_sc, results = saved
if st.session_state.get(common.FAILED_UPLOAD):
    st.warning(
        f"Your last upload ({as_text(st.session_state[common.FAILED_UPLOAD])}) did not load: these results are for "
        "the workload shown in the sidebar, not for that file."
    )
if common.run_key(ran_sc) != common.run_key(sc):
    st.warning(
        "These results are for an earlier cluster, workload or failure model; press **Run comparison** to update them."
    )
elif set(results) != set(chosen):
    st.caption("Showing the last run; press **Run comparison** to include your new choice of schedulers.")
for name in results:  # a trained agent's card says plainly whether it beats the best hand-written policy
    verdict = common.agent_verdict(name) if name.startswith("rl:") else None
    if verdict is not None:
        (st.success if verdict.beats else st.warning)(f"**{as_text(name)}**: {verdict.line}")
        with st.expander(f"How {as_text(name)} was tested, setting by setting"):
            st.markdown(verdict.details)

# ---------------------------------------------------------------- never ran, KPI table
# Energy, cost and carbon change no simulated number: the current scenario's model applies to runs of its workload.
model = energy.energy_of(sc if common.run_key(ran_sc) == common.run_key(sc) else ran_sc)
views = common.engine_call(
    common.comparison_for,
    ran_sc,
    results,
    model,
    what="energy and cost (set the GPU types' watts and prices on the Cluster page)",
)
if views is None:  # a GPU type without watts or a price: the other metrics still show
    model, views = None, common.comparison_for(ran_sc, results)
summaries, table = views.summaries, views.table
missing = never_ran.of_result(next(iter(results.values())))  # the same jobs never run under every scheduler
if missing.count:
    st.warning(missing.sentence(), icon="⚠️")
st.subheader("Key metrics")
rows = [k for k in METRICS if METRICS[k].better is not None or k == "unschedulable"]
if model is not None:
    rows += list(ENERGY_METRICS)
failing = RELIABILITY_METRICS.keys() <= set(table.index)  # the runs modelled failures (set on the Cluster page)
if failing:
    rows += list(RELIABILITY_METRICS)
if DEADLINE_METRICS.keys() <= set(table.index):  # some job has a deadline (set on the Workload page)
    rows += list(DEADLINE_METRICS)
if ELASTIC_METRICS.keys() <= set(table.index):  # some job is elastic (set on the Workload page)
    rows += list(ELASTIC_METRICS)
shown = tables.metrics_table(table, rows)
best = tables.best_shown(table, rows)


def _highlight(frame: pd.DataFrame) -> pd.DataFrame:
    styles = pd.DataFrame("", index=frame.index, columns=frame.columns)
    for i, key in enumerate(rows):
        for col in best.get(key, ()):
            styles.loc[i, col] = "background-color: #c7e9c0; font-weight: 600"
    return styles


st.dataframe(
    shown.style.apply(_highlight, axis=None),
    width="stretch",
    hide_index=True,
    key="kpi_table",
    height=38 + 35 * len(rows),
    column_config={"metric": st.column_config.TextColumn("metric", width="large")},
)
st.caption(
    "Best value per metric in green, every value that looks the same as it too (↓ lower is better, ↑ higher "
    "is better); GPU utilisation is never green on its own, as jobs running longer on slower GPUs raise it. "
    "Durations in s, min, h or d as each value needs. Wait and JCT are over the jobs that ran. Definitions "
    "are on the Learn page."
    + (
        ""
        if model
        else " Energy, cost and carbon: turn on Count energy, cost and carbon (or set an energy model) on the Cluster page."
    )
    + (
        ""
        if failing
        else " Node failures, interruptions and lost work: set a failure model on the Cluster page (Reliability)."
    )
    + (
        f" No scheduler here resizes elastic jobs, so each ran at its requested GPUs: {common.resizers()} do."
        if ELASTIC_METRICS.keys() <= set(table.index)
        and not any(n in SCHEDULERS and SCHEDULERS[n].resizes for n in results)
        else ""
    )
)


def per_user_energy(views: common.Comparison) -> None:
    """Each user's energy, cost and carbon under each scheduler (with an energy model), in an expander."""
    if views.energy is None:
        return
    with st.expander("Energy, cost and carbon per user"):
        st.dataframe(
            tables.user_energy_table(views.job_frames), hide_index=True, width="stretch", key="user_energy_table"
        )
        st.caption(
            "The sums over each user's jobs: a job pays for the share of each GPU it holds, idle draw "
            "included; the idle capacity no job held is the run's idle energy, in the table above. Per completed "
            "job and per useful GPU-hour divide those sums by the user's completed jobs and by the GPU-hours that "
            "did work the jobs kept (lost work and failed runs are paid for, not counted as useful)."
        )


per_user_energy(views)
multi = st.session_state.get(_SEEDS)
if multi is not None and multi[0] == common.run_key(ran_sc) and multi[1] == tuple(results):
    st.subheader(f"Over {multi[2]} workload seeds: mean ± 95 % confidence interval")
    st.dataframe(
        multi[3],
        hide_index=True,
        width="stretch",
        key="seeds_table",
        column_config={"metric": st.column_config.TextColumn("metric", width="large")},
    )
    st.caption(
        f"Workload seeds {ran_sc.workload.seed} to {ran_sc.workload.seed + multi[2] - 1}, the same jobs for "
        "every scheduler; intervals that overlap mean the difference may be the luck of the workload."
    )

# ---------------------------------------------------------------- timelines
st.subheader("Per-GPU timelines")
DRAWINGS = {
    "auto": None,
    "bars (SVG)": "bars",
    "bars (WebGL)": "webgl",
    "raster": "raster",
    "busy-share heatmap": "heatmap",
}
drawing = st.selectbox(
    "Timeline drawing",
    list(DRAWINGS),
    key="compare_drawing",
    help="auto: bars for small runs, a raster for large ones, a heatmap above "
    f"{HEATMAP_GPUS} GPUs. Bars of many thousands of jobs are slow to draw.",
)
timeline = common.timeline_for(ran_sc, results, color_by, DRAWINGS[drawing])
mode = timeline.layout.meta["mode"]
if mode == "raster" and drawing == "auto":
    st.info(
        f"More than {WEBGL_JOBS:,} jobs in a run or {WEBGL_BARS:,} bars in all: to stay "
        f"responsive, each timeline is a raster of {raster_bins(len(results))} time cells per GPU, coloured like the "
        "job that holds the GPU (hover a cell for the job). Choose *bars* above to draw every job."
    )
elif mode == "heatmap":
    st.info(
        "A large run: each timeline is shown as a GPU × time heatmap of the busy share "
        f"(at most {HEATMAP_ROWS} rows of GPUs and {HEATMAP_BINS} time bins)."
    )
ran_jobs = next(iter(results.values())).jobs
st.caption(
    "One row per GPU, one bar per job; press ▶ play or drag the slider to move the cursor through time. "
    "The small chart under each timeline is its queue length."
    + (
        " A tick marks where each job that ran was due: green if it met its deadline, red if it missed it."
        if any(j.has_deadline for j in ran_jobs)
        else ""
    )
    + (
        " A triangle marks each resize of an elastic job (up: it grew, down: it shrank); its bar goes on at the"
        " new size."
        if any(j.elastic for j in ran_jobs)
        else ""
    )
)
common.quiet_animation_interrupts()
common.plot(timeline, "timeline_chart")

# ---------------------------------------------------------------- over time and distributions
st.subheader("Queue, utilisation and power over time" if model else "Queue and utilisation over time")
common.plot(common.chart_for(ran_sc, results, "series", model), "series_chart")

common.plot(common.chart_for(ran_sc, results, "cdfs", model), "cdf_chart")
common.plot(common.chart_for(ran_sc, results, "user_box", model), "user_box")
st.caption("Gini of per-user mean wait: 0 = every user waits the same. Jain's index: 1 = perfectly fair.")

# ---------------------------------------------------------------- one job
st.subheader("Why is this job waiting?")
first_frame = next(iter(views.job_frames.values()))
longest = int(first_frame["wait_s"].idxmax()) if first_frame["wait_s"].notna().any() else 0
# A job is called by its id in the trace (its name); a job without one by its index in the workload.
job_ids = [n or str(i) for i, n in enumerate(first_frame["name"])]
index_of = {label: i for i, label in reversed(list(enumerate(job_ids)))}  # the first job of a repeated id
pick_job = st.text_input(
    "Job (its id in the trace)",
    job_ids[longest] if job_ids else "",
    key="compare_job",
    help="Starts at the job that waited longest under the first scheduler.",
)
if pick_job.strip() not in index_of:
    st.error(as_text(f"job {pick_job[:40]!r}: no job has this id; ids look like {', '.join(job_ids[:3])}"), icon="⚠️")
else:
    for name, result in results.items():
        story = common.engine_call(job_story, result, index_of[pick_job.strip()], what="job")
        if story is not None:
            st.text(f"{name}: {story.sentence()}")

# ---------------------------------------------------------------- downloads
st.subheader("Downloads")
all_jobs = pd.concat([f.assign(scheduler=name) for name, f in views.job_frames.items()], ignore_index=True)
d1, d2, d3 = st.columns(3)
# The CSV is built only when someone downloads it (it takes longer than drawing a chart).
d1.download_button(
    "Results (CSV, one row per job)",
    lambda: all_jobs.to_csv(index=False),
    file_name="results.csv",
    mime="text/csv",
    key="download_csv",
    on_click="ignore",
    width="stretch",
)
payload = {
    "scenario": ran_sc.to_dict(),
    "never_ran": missing.to_dict(),
    "energy_model": None if model is None else model.to_dict(),
    "summaries": {
        n: {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in s.to_dict().items()}
        for n, s in summaries.items()
    },
}
d2.download_button(
    "Results (JSON, metrics)",
    json.dumps(payload, indent=2, default=float),
    file_name="results.json",
    mime="application/json",
    key="download_json",
    on_click="ignore",
    width="stretch",
)
d3.download_button(
    "Scenario (JSON)",
    ran_sc.to_json(),
    file_name="scenario.json",
    mime="application/json",
    key="download_scenario",
    on_click="ignore",
    width="stretch",
)
