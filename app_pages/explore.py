"""Explore: sweeps (metric against load per scheduler, over seeds) and capacity plans of the current scenario,
run on Ray (``engine.analysis.sweep``, ``engine.analysis.plan``)."""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd
import streamlit as st

from app_pages.lib import common, energy, reliability, workers
from engine import EngineError
from engine.analysis.metrics import (
    ALL_METRICS,
    DEADLINE_METRICS,
    ELASTIC_METRICS,
    ENERGY_METRICS,
    METRICS,
    RELIABILITY_METRICS,
)
from engine.analysis.plan import TARGET_METRICS, Target, plan, plan_mix
from engine.analysis.sweep import SweepSpec, parse_numbers, run_sweep
from engine.sim.cluster import parse_shorthand
from engine.units import parse_duration, plural
from engine.viz import explore, tables

#: Bounds on what one click may ask of the server.
MAX_JOB_RUNS = 2_000_000  # cells x jobs per workload
MAX_PLAN_NODES = 512
#: Capacity plan answers shown side by side; more go on the next row.
CARDS_PER_ROW = 4
_SWEEP, _PLAN, _MIX = "explore_sweep", "explore_plan", "explore_mix"

st.title("Explore")
sc = common.scenario()
w = sc.workload
st.caption(
    "Many runs at once, on Ray: a local Ray on this server's cores (started by the first run, which "
    "takes a few seconds more), or the Ray cluster the server was started with (RAY_ADDRESS)."
)
if w.source == "preset":
    st.info(
        "Explore sweeps a generated workload or an uploaded trace. This scenario's workload comes from a "
        "preset: generate or upload one on the Workload page first."
    )
    st.stop()
is_trace = w.source == "trace"
load_label = "load scale" if is_trace else "offered load"
schedulers = common.scheduler_choices()
judged = [k for k, m in METRICS.items() if m.better is not None]
#: A plan's target metrics: the reliability ones too when the scenario's runs meet failures, the deadline ones
#: when a deadline law draws the jobs' deadlines (set on the Workload page).
targets = (
    judged
    + [k for k, m in RELIABILITY_METRICS.items() if m.better is not None and sc.options.failures.active]
    + [k for k, m in DEADLINE_METRICS.items() if m.better is not None and w.deadlines != "none"]
)


def _target_value(text: str, metric: str) -> float:
    """The plan target typed for ``metric``: a duration (``30 min``) for a metric in seconds, else a number."""
    try:
        value = parse_duration(text) if TARGET_METRICS[metric].unit == "s" else float(text)
    except ValueError as exc:
        raise EngineError(
            f"target value: {exc}"
            if TARGET_METRICS[metric].unit == "s"
            else f"target value {text[:40]!r}: expected a number in {explore.metric_title(metric)}"
        ) from None
    if not math.isfinite(value):
        raise EngineError("the target value must be a finite number")
    return value


def _progress_bar(what: str):
    bar = st.progress(0.0, text=f"starting {what} on Ray…")

    def update(done: int, total: int) -> None:
        bar.progress(min(1.0, done / max(total, 1)), text=f"{done:,} / {total:,} {what} runs done")

    return bar, update


def sweep_tradeoff(frame: pd.DataFrame) -> None:
    """Wait (or another metric) against cost, energy or carbon, one point per cell's mean over seeds, with the
    Pareto front; only for a sweep run with an energy model."""
    if "cost_usd" not in frame.columns:
        st.caption(
            "Turn on Count energy, cost and carbon (or set an energy model) on the Cluster page and sweep again "
            "to add cost, energy and carbon to every row and draw wait against cost."
        )
        return
    st.markdown("**Wait against cost**: the points no other beats on both lie on the dotted Pareto front.")
    c = st.columns(2)
    costs = list(ENERGY_METRICS)
    x = c[0].selectbox(
        "Cost axis",
        costs,
        index=costs.index("cost_usd"),
        key="sweep_tradeoff_x",
        format_func=lambda k: ENERGY_METRICS[k].label,
    )
    y = c[1].selectbox(
        "Against",
        judged,
        index=judged.index("mean_wait_s"),
        key="sweep_tradeoff_y",
        format_func=lambda k: METRICS[k].label,
    )
    common.plot(explore.tradeoff_figure(frame, x, y), "sweep_tradeoff")


sweep_tab, plan_tab, mix_tab = st.tabs(["Sweep", "Capacity plan", "Cheapest cluster"])

# ---------------------------------------------------------------- sweep
with sweep_tab:
    with st.form("sweep_form"):
        c = st.columns([2, 1])
        loads_text = c[0].text_input(
            "Load scales" if is_trace else "Offered loads",
            "0.5,1,2" if is_trace else "0.5,0.7,0.9,1.1",
            key="sweep_loads",
            help="Comma-separated. "
            + (
                "Each divides the trace's submit times (2 = arrivals twice as dense)."
                if is_trace
                else "Each is a workload generated like the current one at that load."
            ),
        )
        seeds = c[1].number_input(
            "Seeds",
            1,
            20,
            3,
            key="sweep_seeds",
            help="Seeds 0..K-1: "
            + ("simulation seeds (the trace stays the same)." if is_trace else "workload and simulation seeds."),
        )
        chosen = st.multiselect(
            "Schedulers", schedulers, default=[s for s in sc.schedulers if s in schedulers], key="sweep_schedulers"
        )
        extra = st.text_area(
            "More clusters (one NODESxGPUS:TYPE[,...] per line, e.g. 4x8:A100-80)",
            "",
            key="sweep_clusters",
            help="The current scenario's cluster is always in the grid.",
        )
        mtbf_text = st.text_input(
            "Node MTBFs to compare, hours (empty: the scenario's failures)",
            "",
            key="sweep_mtbf",
            help="Comma-separated, e.g. 100,1000,10000: the grid runs once per value, the scenario's other failure "
            "settings kept (repairs, lemons, job crashes, checkpoints); each curve is one scheduler at one MTBF.",
        )
        both = st.checkbox(
            "Also every cell without failures",
            key="sweep_no_failures",
            disabled=not sc.options.failures.active,
            help="The same grid again with nodes that never fail and jobs that never crash: each "
            f"scheduler's curve beside its own{reliability.NO_FAILURES} one. Set failures on the "
            "Cluster page (Reliability).",
        )
        run_clicked = st.form_submit_button("▶ Run sweep", type="primary")
    if run_clicked:
        with common.engine_errors("sweep", stop=False):
            # Shorthand only: a .json path or openb:PATH typed here would make the server read its own files.
            more = [parse_shorthand(line).to_shorthand() for line in extra.splitlines() if line.strip()]
            for shorthand in more:  # each within the scenario's limits on nodes and GPUs, as the sidebar's cluster
                common.cluster_of(replace(sc, cluster=shorthand))
            mtbfs = parse_numbers(mtbf_text, "node MTBFs") if mtbf_text.strip() else ()
            spec = SweepSpec(
                base=replace(sc, schedulers=tuple(chosen)),
                clusters=(sc.cluster, *(m for m in more if m != sc.cluster)),
                loads=parse_numbers(loads_text, load_label),
                seeds=int(seeds),
                axes=((reliability.MTBF_AXIS, mtbfs),) if mtbfs else (),
            )
            trace_jobs = common.loaded_trace(sc).jobs if is_trace else None
            # The grid again without failures (and without the MTBF axis: nodes never fail there).
            off = replace(spec, axes=(), base=replace(spec.base, options=reliability.without_failures(sc.options)))
            copies = 2 if both and sc.options.failures.active else 1
            cells = spec.cells + (off.cells if copies == 2 else 0)
            runs = cells * (len(trace_jobs) if is_trace else w.n_jobs)
            max_cells = workers.max_sweep_cells()
            if cells > max_cells or runs > MAX_JOB_RUNS:
                raise EngineError(
                    f"this grid has {cells:,} cells ({runs:,} job runs); the app runs at most "
                    f"{max_cells:,} cells and {MAX_JOB_RUNS:,} job runs at once (the CLI has no "
                    "such limit: download the spec below and use python -m engine sweep --spec)"
                )
            bar, update = _progress_bar("cell")
            with_energy = energy.energy_of(sc) is not None

            def sweep_of(grid: SweepSpec) -> pd.DataFrame:
                """The grid's frame: one piece of this session's work, each cell within the bounds per run, all
                cancelled when this run of the page is told to stop."""
                with workers.session_slot("the sweep"):
                    bounds = workers.cell_bounds()
                    return run_sweep(grid, trace_jobs=trace_jobs, on_progress=update, energy=with_energy, **bounds)

            frame = sweep_of(spec)
            if mtbfs:
                frame = reliability.by_mtbf(frame)
            if copies == 2:
                frame = reliability.beside_no_failures(frame, sweep_of(off))
            bar.empty()
            st.session_state[_SWEEP] = {"spec": spec, "frame": frame, "workload": common.run_key(sc)}
    saved = st.session_state.get(_SWEEP)
    if saved is None:
        st.info("Choose the loads, seeds and schedulers, then press **Run sweep**.")
    else:
        spec, frame = saved["spec"], saved["frame"]
        meta, failures = frame.attrs["meta"], frame.attrs["failures"]
        if saved["workload"] != common.run_key(sc):
            st.warning(
                "This sweep was run on an earlier cluster, workload or failure model; press **Run sweep** to update it."
            )
        st.success(
            f"{meta['completed']:,} of {meta['cells']:,} cells completed on Ray ({meta['cpus']} CPUs) "
            f"in {meta['wall_s']:.1f} s."
        )
        if failures:
            st.warning(f"{len(failures)} cell(s) failed; the others are shown.")
            st.dataframe(
                tables.failures_table(failures, load_label), width="stretch", hide_index=True, key="sweep_failures"
            )
        if not frame.empty:
            shown = judged + [
                k
                for k in (*ENERGY_METRICS, *RELIABILITY_METRICS, *DEADLINE_METRICS, *ELASTIC_METRICS)
                if k in frame.columns
            ]
            metric = st.selectbox(
                "Metric",
                shown,
                index=shown.index("p95_wait_s"),
                key="sweep_metric",
                format_func=lambda k: ALL_METRICS[k].label,
            )
            common.plot(explore.sweep_curves_figure(frame, metric, load_label=load_label), "sweep_curves")
            varied = [a for a in explore.HEATMAP_AXES if frame[a].nunique() > 1]
            if len(varied) >= 2:
                c = st.columns(2)
                x = c[0].selectbox(
                    "Heatmap across", varied, index=varied.index("load") if "load" in varied else 0, key="sweep_heat_x"
                )
                down = [a for a in varied if a != x]
                y = c[1].selectbox(
                    "and down", down, index=down.index("scheduler") if "scheduler" in down else 0, key="sweep_heat_y"
                )
                common.plot(explore.sweep_heatmap_figure(frame, metric, x, y), "sweep_heatmap")
            sweep_tradeoff(frame)
            st.dataframe(tables.sweep_table(frame, load_label), width="stretch", hide_index=True, key="sweep_table")
        d = st.columns(2)
        d[0].download_button(
            "Results (CSV, one row per cell)",
            frame.to_csv(index=False),
            file_name="sweep.csv",
            mime="text/csv",
            key="sweep_csv",
            on_click="ignore",
            width="stretch",
        )
        d[1].download_button(
            "Sweep spec (JSON, for python -m engine sweep --spec)",
            spec.to_json(),
            file_name="sweep.json",
            mime="application/json",
            key="sweep_spec",
            on_click="ignore",
            width="stretch",
        )
        st.caption(
            "`python -m engine sweep --spec sweep.json --out results.csv` reruns this grid from the command "
            "line (with the trace file beside it for an uploaded trace), on a laptop or on a Ray cluster "
            "(`--address`)."
        )

# ---------------------------------------------------------------- capacity plan
with plan_tab:
    with common.engine_errors("cluster"):
        cluster = common.cluster_of(sc)
    first = cluster.groups[0]
    with st.form("plan_form"):
        c = st.columns([1, 1, 1])
        node = c[0].text_input("Node shape (GPUS:TYPE)", f"{first.gpus_per_node}:{first.gpu_type}", key="plan_node")
        metric = c[1].selectbox(
            "Target metric",
            targets,
            index=targets.index("p95_wait_s"),
            key="plan_metric",
            format_func=lambda k: TARGET_METRICS[k].label,
        )
        op = c[2].radio("must be", ["<=", ">="], horizontal=True, key="plan_op")
        c = st.columns([1, 1, 1])
        value_text = c[0].text_input(
            "Target value",
            "30 min",
            key="plan_value",
            help="A duration for waits and times (90 s, 30 min, 2 h, 1 d; a plain number "
            "is seconds), else a number in the metric's unit.",
        )
        max_nodes = c[1].number_input("At most nodes", 1, MAX_PLAN_NODES, 64, key="plan_max_nodes")
        grow = c[2].checkbox(
            "Grow the current cluster",
            value=True,
            key="plan_grow",
            help="The cluster you built, with its group of this node shape grown (or added); "
            "unticked, the cluster is made of this node shape only.",
        )
        chosen_plan = st.multiselect(
            "Schedulers", schedulers, default=[s for s in sc.schedulers if s in schedulers], key="plan_schedulers"
        )
        plan_clicked = st.form_submit_button("▶ Find the fewest nodes", type="primary")
    if plan_clicked:
        with common.engine_errors("capacity plan", stop=False):
            value = _target_value(value_text, metric)
            jobs = common.jobs_of(sc)
            bar, update = _progress_bar("plan")
            goal = Target(metric, op, float(value))
            with workers.session_slot("the capacity plan"):
                answer = plan(
                    jobs,
                    node,
                    chosen_plan,
                    goal,
                    cluster=cluster if grow else None,
                    max_nodes=int(max_nodes),
                    seed=sc.seed,
                    options=sc.options,
                    on_progress=update,
                    **workers.cell_bounds(),
                )
            bar.empty()
            st.session_state[_PLAN] = {"answer": answer, "target": goal, "workload": common.run_key(sc)}
    if sc.options.failures.active:
        st.caption(
            "Every run of the plan meets the scenario's failures (Cluster page, Reliability), so the target "
            f"holds under them. {reliability.describe(sc.options)}"
        )
    saved_plan = st.session_state.get(_PLAN)
    if saved_plan is None:
        st.info(
            "Set the node shape and the target, then press **Find the fewest nodes**. Each scheduler's runs "
            "go out in parallel rounds until two node counts one apart bracket the target."
        )
    else:
        answer, goal = saved_plan["answer"], saved_plan["target"]
        meta = answer.attrs["meta"]
        if saved_plan["workload"] != common.run_key(sc):
            st.warning("This plan was made for an earlier cluster, workload or failure model.")
        for start in range(0, len(answer), CARDS_PER_ROW):  # cards wide enough for their text
            cols = st.columns(CARDS_PER_ROW)
            for col, row in zip(cols, answer.iloc[start : start + CARDS_PER_ROW].itertuples()):
                if pd.isna(row.nodes):
                    col.metric(
                        row.scheduler, "not met", help=row.error or "not met with the most nodes allowed", border=True
                    )
                else:
                    col.metric(
                        row.scheduler,
                        plural(int(row.nodes), "node"),
                        border=True,
                        delta=f"{plural(int(row.gpus), 'GPU')} in all",
                        delta_color="off",
                        delta_arrow="off",
                    )
        if meta["fewest_gpus"] and len(answer) > 1:
            st.success(
                f"Fewest GPUs: {meta['fewest_gpus']} ({meta['runs']} runs in {meta['rounds']} rounds, "
                f"{meta['wall_s']:.1f} s)."
            )
        answers = {r.scheduler: None if pd.isna(r.nodes) else int(r.nodes) for r in answer.itertuples()}
        common.plot(explore.plan_figure(answer.attrs["probes"], answers, goal.metric, goal.value), "plan_curve")
        st.dataframe(tables.plan_table(answer), width="stretch", hide_index=True, key="plan_table")
        st.download_button(
            "Plan runs (CSV)",
            pd.DataFrame(answer.attrs["probes"]).to_csv(index=False),
            file_name="plan.csv",
            mime="text/csv",
            key="plan_csv",
            on_click="ignore",
        )


# ---------------------------------------------------------------- cheapest cluster of two node shapes
def _mix_cards(answer: pd.DataFrame) -> None:
    """Per scheduler: the cheapest cluster that meets the target with its $/h, and the runner-up with its own."""
    for start in range(0, len(answer), CARDS_PER_ROW):
        cols = st.columns(CARDS_PER_ROW)
        for col, row in zip(cols, answer.iloc[start : start + CARDS_PER_ROW].itertuples()):
            if not isinstance(row.cluster, str):
                col.metric(
                    row.scheduler,
                    "not met",
                    border=True,
                    help=row.error if isinstance(row.error, str) else "not met with the most nodes allowed",
                )
                continue
            second = (
                "no runner-up found"
                if not isinstance(row.runner_up, str)
                else f"runner-up {row.runner_up}: ${row.runner_up_price_per_h:,.2f}/h"
            )
            col.metric(
                row.scheduler,
                f"${row.cluster_price_per_h:,.2f}/h",
                border=True,
                delta=second,
                delta_color="off",
                delta_arrow="off",
            )
            col.caption(f"{row.cluster} ({plural(int(row.gpus), 'GPU')})")


def cheapest_cluster(sc, schedulers: list[str]) -> None:
    """The cheapest mix of two node shapes (``plan_mix``, minimising ``cluster_price_per_h`` under the scenario's
    price list) on which each scheduler meets a target, with the runner-up."""
    with st.form("mix_form"):
        c = st.columns(3)
        first = c[0].text_input("Node shape A (GPUS:TYPE)", "8:A100-80", key="mix_node_a")
        second = c[1].text_input("Node shape B (GPUS:TYPE)", "8:H100-80", key="mix_node_b")
        max_nodes = c[2].number_input("At most nodes of each", 1, MAX_PLAN_NODES, 16, key="mix_max_nodes")
        c = st.columns(3)
        metric = c[0].selectbox(
            "Target metric",
            targets,
            index=targets.index("p95_wait_s"),
            key="mix_metric",
            format_func=lambda k: TARGET_METRICS[k].label,
        )
        op = c[1].radio("must be", ["<=", ">="], horizontal=True, key="mix_op")
        value_text = c[2].text_input("Target value", "30 min", key="mix_value")
        chosen = st.multiselect(
            "Schedulers", schedulers, default=[s for s in sc.schedulers if s in schedulers][:2], key="mix_schedulers"
        )
        clicked = st.form_submit_button("▶ Find the cheapest cluster", type="primary")
    if clicked:
        with common.engine_errors("cheapest cluster", stop=False):
            goal = Target(metric, op, _target_value(value_text, metric))
            bar, update = _progress_bar("plan")
            jobs = common.jobs_of(sc)  # a piece of work of its own, before the plan's
            with workers.session_slot("the cheapest cluster"):
                answer = plan_mix(
                    jobs,
                    [first.strip(), second.strip()],
                    chosen,
                    goal,
                    max_nodes=int(max_nodes),
                    seed=sc.seed,
                    options=sc.options,
                    on_progress=update,
                    **workers.cell_bounds(),
                )
            bar.empty()
            st.session_state[_MIX] = {"answer": answer, "workload": common.run_key(sc)}
    saved = st.session_state.get(_MIX)
    if saved is None:
        st.info(
            "Two node shapes and a target: the cheapest cluster per hour (price list of the Cluster page's "
            "energy model) built from any number of each that meets the target, and the runner-up."
        )
        return
    answer, meta = saved["answer"], saved["answer"].attrs["meta"]
    if saved["workload"] != common.run_key(sc):
        st.warning("This plan was made for an earlier cluster, workload or failure model.")
    _mix_cards(answer)
    st.caption(
        f"{meta['runs']} runs in {meta['rounds']} rounds ({meta['wall_s']:.1f} s), prices from "
        f"{meta['price_list']}: no mix of {' and '.join(meta['shapes'])} cheaper than the answer meets "
        f"{meta['target']}."
    )


with mix_tab:
    cheapest_cluster(sc, schedulers)
