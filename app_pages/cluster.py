"""Cluster: edit node groups, pick a preset, see the GPU catalog and a picture of the racks, and set what the
GPUs draw and cost (the scenario's energy model)."""

import json
from dataclasses import replace

import pandas as pd
import streamlit as st

from app_pages.lib import common, energy, reliability
from app_pages.lib.text import as_text
from engine.analysis.scenario import Scenario
from engine.sim.cluster import CATALOG_PRICES, CLUSTER_SOURCES, DEFAULT_CATALOG, PRICE_LISTS, Cluster, NodeGroup
from engine.sim.options import (
    FAILURE_PRESETS,
    JOB_FAILURE_PRESETS,
    MAX_G_PER_KWH,
    MAX_PUE,
    CarbonSeries,
    EnergyModel,
    FailureModel,
    PowerDownModel,
)
from engine.viz.cluster import cluster_figure

st.title("Cluster")
sc = common.scenario()

OPENB_NODES = common.REPO.parent / "shared" / "traces" / "alibaba-gpu-v2023-openb" / "openb_node_list_gpu_node.csv"
PRESETS = {
    "small heterogeneous (2×8 A100, 4×4 V100, 2×4 T4)": "2x8:A100-80,4x4:V100-32,2x4:T4",
    "64 × A100 (8 nodes × 8)": "8x8:A100-80",
    "tiny (2 nodes × 4 T4)": "2x4:T4",
}
if "openb" in CLUSTER_SOURCES and OPENB_NODES.is_file():
    # A scenario (and so a link) carries the cluster itself, never a path: the server reads its own file here.
    PRESETS["Alibaba PAI, 2023 (openb node list: 1,213 nodes)"] = json.dumps(
        CLUSTER_SOURCES["openb"](str(OPENB_NODES)).to_dict(), separators=(",", ":")
    )

c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
preset = c1.selectbox(
    "Start from a preset", list(PRESETS), index=None, placeholder="choose a preset…", key="cluster_preset"
)
if c2.button("Use preset", disabled=preset is None, key="cluster_use_preset", width="stretch"):
    common.set_scenario(replace(sc, cluster=PRESETS[preset], name=""))
    st.rerun()

with common.engine_errors("the cluster is invalid"):
    cluster = common.cluster_of(sc)

# ---------------------------------------------------------------- node groups
st.subheader("Node groups")
st.caption(
    "Each row is a group of identical nodes. Leave *rack* empty to fill racks of "
    f"{cluster.nodes_per_rack} nodes automatically. Add or delete rows at the bottom of the table; edits take "
    "effect when you press *Apply node groups*."
)
groups = pd.DataFrame(
    [
        {"gpu_type": g.gpu_type, "nodes": g.nodes, "gpus_per_node": g.gpus_per_node, "rack": g.rack or ""}
        for g in cluster.groups
    ]
)
# The edits wait in a form until Apply: a rerun for each edit rebuilt the table while the user went on typing, and
# the edits typed meanwhile were lost.
with st.form("cluster_groups_form", border=False):
    edited = st.data_editor(
        groups,
        num_rows="dynamic",
        hide_index=True,
        width="stretch",
        key=f"cluster_groups_{hash(sc.cluster)}",
        column_config={
            "gpu_type": st.column_config.SelectboxColumn("GPU type", options=list(cluster.catalog), required=True),
            "nodes": st.column_config.NumberColumn("nodes", min_value=1, max_value=10_000, step=1, required=True),
            "gpus_per_node": st.column_config.NumberColumn(
                "GPUs per node", min_value=1, max_value=64, step=1, required=True
            ),
            "rack": st.column_config.TextColumn("rack (optional)"),
        },
    )
    applied = st.form_submit_button("Apply node groups", type="primary")


def _groups_of(table: pd.DataFrame) -> tuple[NodeGroup, ...]:
    """The node groups the edited table holds (rows without GPU type, nodes or GPUs per node are left out)."""
    rows = table.dropna(subset=["gpu_type", "nodes", "gpus_per_node"])
    return tuple(
        NodeGroup(
            r.gpu_type,
            int(r.nodes),
            int(r.gpus_per_node),
            str(r.rack).strip() if isinstance(r.rack, str) and r.rack.strip() else None,
        )
        for r in rows.itertuples()
    )


if applied and not edited.reset_index(drop=True).equals(groups):
    edited_cluster = common.engine_call(replace, cluster, groups=_groups_of(edited), what="node groups")
    spec = None if edited_cluster is None else edited_cluster.to_spec()
    if spec is not None and spec != sc.cluster:
        new = replace(sc, cluster=spec)
        if common.engine_call(new.build_cluster, what="node groups") is not None:
            common.set_scenario(new)
            st.rerun()

with st.expander("Cluster as text (shorthand or JSON)"):
    text = st.text_area(
        "Cluster spec",
        sc.cluster,
        key=f"cluster_text_{hash(sc.cluster)}",
        height=80,
        help="e.g. 4x8:A100-80,2x4:V100-32 (nodes × GPUs per node : type), or the JSON form",
    )
    if st.button("Apply", key="cluster_text_apply") and text.strip() != sc.cluster:
        new = common.engine_call(replace, sc, cluster=text.strip(), what="cluster")
        if new is not None and common.engine_call(new.build_cluster, what="cluster") is not None:
            common.set_scenario(new)
            st.rerun()

# ---------------------------------------------------------------- totals and picture
lay = cluster.layout
vram = cluster.vram_gib
m = st.columns(4)
m[0].metric("Racks", len(lay.rack_names))
m[1].metric("Nodes", cluster.n_nodes)
m[2].metric("GPUs", cluster.n_gpus)
m[3].metric("GPU memory", f"{vram / 1024:.1f} TiB" if vram >= 10_240 else f"{vram:.0f} GiB")
common.plot(cluster_figure(cluster), "cluster_picture")

st.subheader("GPU catalog")
st.caption(
    "Speed is relative training throughput (V100 = 1). Inference and interactive jobs gain less from a "
    "faster GPU; see engine/sim/cluster.py for the model."
)
catalog = pd.DataFrame(
    [
        {
            "GPU type": t.name,
            "memory (GiB)": t.vram_gib,
            "relative speed": t.speed,
            "in this cluster": cluster.gpus_by_type().get(t.name, 0),
            "built in": t.name in DEFAULT_CATALOG,
        }
        for t in cluster.catalog.values()
    ]
)
st.dataframe(catalog, hide_index=True, width="stretch", key="gpu_catalog")


# ---------------------------------------------------------------- energy and cost


def _price_list_label(name: str) -> str:
    if name == CATALOG_PRICES:
        return "catalog (each GPU type's $ per GPU-hour, in the table above)"
    return f"{name} ({PRICE_LISTS[name].date})"


#: Bounds of the power-down widgets: seconds idle before a node powers down, seconds to wake, watts per GPU asleep.
MAX_IDLE_TIMEOUT_S, MAX_WAKE_S, MAX_SLEEP_W = 7 * 86_400.0, 3_600.0, 1_000.0


def _count_energy_changed() -> None:
    sc = common.scenario()
    on = st.session_state["cluster_count_energy"]
    model = replace(sc.options.energy, count=True) if on else EnergyModel()
    common.set_scenario(replace(sc, options=replace(sc.options, energy=model)))


def count_energy_switch(sc: Scenario) -> None:
    """The explicit switch: on, results count energy, cost and carbon (``options.energy.count``, in the link) even
    at the default model; off, the model goes back to its defaults and results leave them out. It shows the
    scenario's state at every run (a link or the form below may have changed it)."""
    st.session_state["cluster_count_energy"] = energy.energy_of(sc) is not None
    st.toggle(
        "Count energy, cost and carbon",
        key="cluster_count_energy",
        on_change=_count_energy_changed,
        help="Compare, Explore and the downloads add energy (kWh), cost ($) and carbon (kg CO2) to every run. "
        "Turning it off puts the model below back to its defaults.",
    )


def power_down_inputs(model: PowerDownModel) -> PowerDownModel:
    """The power-down widgets of the energy form (idle nodes power down and wake for a job), read as a model:
    the default one (off) unless the box is ticked."""
    on = st.checkbox(
        "Power idle nodes down",
        value=model.active,
        key="cluster_power_down",
        help="A node no job has held for the timeout powers down (its GPUs draw the sleep W); a job started on it "
        "waits the wake-up delay first, counted as wait. Every scheduler runs under it.",
    )
    c = st.columns(3)
    timeout_s = c[0].number_input(
        "after idle (s)",
        0.0,
        MAX_IDLE_TIMEOUT_S,
        min(float(model.idle_timeout_s if model.active else 600.0), MAX_IDLE_TIMEOUT_S),
        60.0,
        key="cluster_power_down_after",
    )
    wake_s = c[1].number_input(
        "wake-up delay (s)",
        0.0,
        MAX_WAKE_S,
        min(float(model.wake_s), MAX_WAKE_S),
        10.0,
        key="cluster_wake_s",
        help="300 s by default: an estimate of a server's power-on to ready",
    )
    sleep_w = c[2].number_input(
        "W per GPU while down", 0.0, MAX_SLEEP_W, min(float(model.sleep_w), MAX_SLEEP_W), 1.0, key="cluster_sleep_w"
    )
    return PowerDownModel(float(timeout_s), float(wake_s), float(sleep_w)) if on else PowerDownModel()


def energy_and_cost(sc: Scenario, cluster: Cluster) -> None:
    """The scenario's energy model (PUE, carbon, price list) and its GPU types' watts and prices, in one form;
    Apply writes the watts and prices into the cluster's ``gpu_types`` and the rest into ``options.energy``."""
    st.subheader("Energy and cost")
    model = sc.options.energy
    st.caption(
        "Each GPU draws idle W plus (busy W − idle W) × the share of it jobs hold; the facility draws PUE × "
        "that. Cost is GPU-hours × price; carbon is energy × the grid's intensity. Compare shows energy, "
        "cost and carbon while the switch is on (applying the form below turns it on). "
        "Watts and prices are estimates (sources in engine/sim/cluster.py)."
    )
    count_energy_switch(sc)
    table = pd.DataFrame(
        [
            {"GPU type": t, **{k: getattr(cluster.catalog[t], k) for k in energy.POWER_COLUMNS}}
            for t in cluster.gpus_by_type()
        ]
    )
    lists = [CATALOG_PRICES, *PRICE_LISTS]
    is_series = isinstance(model.carbon_g_per_kwh, CarbonSeries)
    with st.form("cluster_energy_form", border=False):
        edited = st.data_editor(
            table,
            hide_index=True,
            width="stretch",
            key=f"cluster_power_{hash(sc.cluster)}",
            column_config={
                "GPU type": st.column_config.TextColumn("GPU type", disabled=True),
                **{
                    k: st.column_config.NumberColumn(label, min_value=0.0, max_value=100_000.0)
                    for k, label in energy.POWER_COLUMNS.items()
                },
            },
        )
        c = st.columns(3)
        price_list = c[0].selectbox(
            "Price list",
            lists,
            index=lists.index(model.price_list),
            format_func=_price_list_label,
            key="cluster_price_list",
        )
        pue = c[1].number_input(
            "PUE (facility power ÷ IT power)",
            1.0,
            MAX_PUE,
            min(float(model.pue), MAX_PUE),
            0.01,
            key="cluster_pue",
            help="1.58: the industry's average in 2023; 1.1-1.2: hyperscale",
        )
        kind = c[2].radio(
            "Grid carbon", ["constant", "hourly CSV"], index=int(is_series), horizontal=True, key="cluster_carbon_kind"
        )
        c = st.columns(2)
        grams = c[0].number_input(
            "gCO2 per kWh (constant)",
            0.0,
            MAX_G_PER_KWH,
            480.0 if is_series else min(float(model.carbon_g_per_kwh), MAX_G_PER_KWH),
            10.0,
            key="cluster_carbon_g",
        )
        upload = c[1].file_uploader("Carbon CSV (timestamp,carbon_intensity)", type=["csv"], key="cluster_carbon_csv")
        power_down = power_down_inputs(sc.options.power_down)
        applied = st.form_submit_button("Apply energy and cost")
    if is_series:
        series = model.carbon_g_per_kwh
        st.caption(
            as_text(
                f"Carbon: {len(series.g_per_kwh):,} values, one every {common.fmt_seconds(series.step_s)}, from "
                f"{series.start or 'time 0'}, repeating."
            )
        )
    if applied:
        with common.engine_errors("energy and cost", stop=False):
            carbon = energy.carbon_of(
                grams if kind == "constant" else None,
                None if upload is None else (upload.name, upload.getvalue()),
                model.carbon_g_per_kwh,
            )
            new = replace(
                sc,
                cluster=energy.with_power(cluster, edited.to_dict("records")).to_spec(),
                options=replace(
                    sc.options, energy=EnergyModel(float(pue), carbon, price_list, count=True), power_down=power_down
                ),
            )
            new.build_cluster()
            if new != sc:
                common.set_scenario(new)
                st.rerun()


energy_and_cost(sc, cluster)


# ---------------------------------------------------------------- reliability
def _duration_text(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds:g} s"


def reliability_section(sc: Scenario) -> None:
    """The scenario's failure model: a preset, then its knobs (node MTBF, repair, checkpoint interval and cost,
    job failures) in one form; Apply writes ``options.failures`` and the checkpoint interval, bad input one line."""
    st.subheader("Reliability")
    options = sc.options
    st.caption(
        "Nodes break and jobs crash: a node down takes no job, and every job on it stops, keeps its work up "
        "to its last checkpoint and waits again. Compare then shows node failures, interruptions, failed "
        "jobs, lost GPU-hours and availability. Presets: measured rates of Meta's research clusters and of "
        "Llama 3's training (engine/sim/options.py), or *stress* for teaching."
    )
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    preset = c1.selectbox(
        "Failure preset",
        list(FAILURE_PRESETS),
        index=None,
        placeholder="choose a preset…",
        key="cluster_failure_preset",
    )
    if c2.button("Use failure preset", disabled=preset is None, key="cluster_use_failure_preset", width="stretch"):
        chosen = replace(
            FAILURE_PRESETS[preset],
            job_failure_rate=options.failures.job_failure_rate,
            checkpoint_cost_s=options.failures.checkpoint_cost_s,
        )
        common.set_scenario(replace(sc, options=replace(options, failures=chosen)))
        st.rerun()
    model = options.failures
    suffix = hash((model, options.preemption))  # new widgets when the model changes, showing its values
    with st.form("cluster_reliability_form", border=False):
        c = st.columns(5)
        mtbf = c[0].text_input(
            "Node MTBF (empty: never fails)",
            _duration_text(None if model.mtbf_h is None else model.mtbf_h * 3600),
            key=f"cluster_mtbf_{suffix}",
            help="mean time between failures of a node (of a GPU for the llama3 preset), e.g. 3692 h, 30 d",
        )
        repair = c[1].text_input("Repair time", _duration_text(model.repair_h * 3600), key=f"cluster_repair_{suffix}")
        every = c[2].text_input(
            "Checkpoint every (empty: when stopped)",
            _duration_text(options.preemption.checkpoint_interval_s),
            key=f"cluster_checkpoint_{suffix}",
            help="of work, e.g. 30 min",
        )
        cost = c[3].text_input(
            "Checkpoint cost",
            _duration_text(model.checkpoint_cost_s),
            key=f"cluster_checkpoint_cost_{suffix}",
            help="work each checkpoint costs, e.g. 60 s",
        )
        jobs = c[4].text_input(
            "Job failures (preset or share)",
            reliability.job_failures_text(model),
            key=f"cluster_job_failures_{suffix}",
            help=f"{', '.join(JOB_FAILURE_PRESETS)}, or a share of runs from 0 to 1",
        )
        applied = st.form_submit_button("Apply reliability")
    st.caption(reliability.describe(options))
    if applied:
        with common.engine_errors("reliability", stop=False):
            new = replace(
                sc,
                options=reliability.with_failures(
                    options,
                    model,
                    mtbf=mtbf,
                    repair=repair,
                    checkpoint_every=every,
                    checkpoint_cost=cost,
                    job_failures=jobs,
                ),
            )
            if new != sc:
                common.set_scenario(new)
                st.rerun()
    if model.active and st.button("Stop modelling failures", key="cluster_failures_reset"):
        common.set_scenario(replace(sc, options=replace(options, failures=FailureModel())))
        st.rerun()


reliability_section(sc)
