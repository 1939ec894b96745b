"""Workload: generate jobs or upload a trace; see what it contains and how hard it pushes the cluster."""

from dataclasses import replace
from pathlib import Path

import streamlit as st

from app_pages import common
from app_pages.text import as_text
from engine.analysis.scenario import ARRIVALS, MAX_FIRST, MAX_JOBS, MAX_MIX_WEIGHT, MAX_SEED, MAX_USERS, WorkloadSpec
from engine.traces import TRACE_FORMATS
from engine.traces.generator import DEFAULT_MIX
from engine.traces.mapped import KEYS as MAPPED_KEYS
from engine.viz import charts

st.title("Workload")
sc = common.scenario()
w = sc.workload
SAMPLES = common.REPO / "sample_traces"

gen_tab, up_tab = st.tabs(["Generate", "Upload a trace"])

# ---------------------------------------------------------------- generate
with gen_tab:
    with st.form("generate_form"):
        c = st.columns(3)
        n_jobs = c[0].number_input("Jobs", 1, MAX_JOBS, w.n_jobs if w.source == "generate" else 300, step=50,
                                   key="gen_n_jobs")
        load = c[1].slider("Offered load", 0.1, 2.0, float(min(max(w.load, 0.1), 2.0)), 0.05, key="gen_load",
                           help="Arrival rate × mean GPU-seconds per job ÷ cluster GPUs (1 = saturated).")
        users = c[2].number_input("Users", 1, MAX_USERS, w.users, key="gen_users")
        c = st.columns(3)
        arrival = c[0].selectbox("Arrivals", ARRIVALS, index=ARRIVALS.index(w.arrival), key="gen_arrival")
        seed = c[1].number_input("Seed", 0, MAX_SEED, w.seed, key="gen_seed")
        st.markdown("**Job mix** (relative weights)")
        mix_now = dict(w.mix) or DEFAULT_MIX
        c = st.columns(len(DEFAULT_MIX))
        mix = {t: c[i].number_input(t, 0.0, MAX_MIX_WEIGHT, float(mix_now.get(t, 0.0)), 0.05, key=f"gen_mix_{t}")
               for i, t in enumerate(DEFAULT_MIX)}
        if st.form_submit_button("Generate", type="primary"):
            if sum(mix.values()) <= 0:
                st.error("The job mix needs at least one weight above 0.")
            else:
                spec = common.engine_call(
                    WorkloadSpec, source="generate", n_jobs=int(n_jobs), load=float(load), users=int(users),
                    arrival=arrival, seed=int(seed),
                    mix=() if mix == DEFAULT_MIX else tuple(mix.items()), what="workload")
                if spec is not None:
                    common.set_scenario(replace(sc, workload=spec, name=""))
                    st.rerun()

# ---------------------------------------------------------------- upload
with up_tab:
    formats = ["auto-detect"] + list(TRACE_FORMATS)
    c = st.columns(3)
    fmt = c[0].selectbox("Format", formats, key="up_format")
    unit = c[1].selectbox("Time unit", ["format default", "s", "ms"], key="up_unit",
                          help="Only for formats whose time unit is not fixed (Tiresias-style CSV, mapped CSV).")
    first = c[2].number_input("Keep the first N jobs (0 = all)", 0, MAX_FIRST, 0, key="up_first")
    skip_bad = st.checkbox("Skip malformed rows and report them (otherwise the first bad row stops the load)",
                           key="up_skip_bad")
    column_map: dict[str, str] = {}
    if fmt == "mapped":
        st.markdown("**Column mapping**: which column of your file holds each field (leave empty if absent).")
        c = st.columns(4)
        for i, field in enumerate(MAPPED_KEYS):
            value = c[i % 4].text_input(field, key=f"map_{field}")
            if value.strip():
                column_map[field] = value.strip()
    uploaded = st.file_uploader(f"Trace file (at most {common.MAX_UPLOAD_MB} MiB)",
                                type=["csv", "swf", "gz", "txt", "tsv", "trace"], key="trace_upload")
    samples = sorted(p.name for p in SAMPLES.glob("*") if p.is_file() and p.suffix != ".md") if SAMPLES.is_dir() else []
    sample = st.selectbox("…or use a sample trace shipped with the project", samples, index=None,
                          placeholder="choose a sample…", key="sample_trace") if samples else None
    load_clicked = st.button("Load trace", type="primary", key="load_trace",
                             disabled=uploaded is None and sample is None)
    if load_clicked:
        if uploaded is not None:
            name, data = uploaded.name, uploaded.getvalue()
        else:
            name, data = sample, (SAMPLES / sample).read_bytes()
        if len(data) > common.MAX_UPLOAD_MB * 2**20:
            st.error(f"{as_text(name)} is {len(data) / 2**20:.1f} MiB; the limit is {common.MAX_UPLOAD_MB} MiB. "
                     "Use the command line (python -m engine) for larger traces, or keep the first N jobs.")
        elif (digest := common.engine_call(common.store_trace, data, what=name)) is not None:
            trace = None
            try:
                spec = common.engine_call(
                    WorkloadSpec, source="trace", trace_sha256=digest, trace_name=Path(name).name[-200:],
                    trace_format="" if fmt == "auto-detect" else fmt,
                    time_unit="" if unit == "format default" else unit,
                    column_map=tuple(column_map.items()), first=int(first), skip_bad=skip_bad, what=name)
                new = None if spec is None else replace(sc, workload=spec, name="")
                trace = None if new is None else common.engine_call(common.loaded_trace, new, what=name)
            finally:  # an upload that did not load is dropped, whatever stopped it
                if trace is None or not trace.jobs:
                    common.forget_trace(digest)
            if trace is not None and not trace.jobs:
                st.error(as_text(f"{name}: no usable jobs in the file (dropped: {trace.report.dropped or 'none'})."))
            elif trace is not None:
                common.set_scenario(new)
                st.success(as_text(f"Loaded {trace.report.jobs:,} jobs from {name} (format: {trace.format})."))
                sc, w = new, spec

# ---------------------------------------------------------------- what the workload holds
st.divider()
with common.engine_errors("the workload could not be built"):
    cluster = common.cluster_of(sc)
    jobs = common.jobs_of(sc)
if w.source == "trace":
    st.subheader(f"Trace report: {as_text(w.trace_name)}")
    with common.engine_errors(w.trace_name):
        report = common.loaded_trace(sc).report.to_dict()
    m = st.columns(5)
    m[0].metric("Rows read", f"{report['rows']:,}")
    m[1].metric("Jobs kept", f"{report['jobs']:,}")
    m[2].metric("Rows dropped", f"{sum(report['dropped'].values()):,}")
    m[3].metric("Span", common.fmt_seconds(report["span_s"]))
    m[4].metric("GPU-hours", f"{report['gpu_hours']:,.0f}")
    if report["dropped"]:
        st.table({"reason": list(report["dropped"]), "rows dropped": list(report["dropped"].values())})
    for example in report.get("examples", []):
        st.caption(as_text(f"skipped: {example}"))
elif w.source == "preset":
    st.subheader(f"Workload of preset {as_text(w.preset)}: {len(jobs):,} jobs")
else:
    st.subheader(f"Generated workload: {len(jobs):,} jobs")

frame = charts.jobs_frame(jobs)
span = float(frame["submit_s"].max()) if len(frame) else 0.0
offered = frame["gpu_s"].sum() / (cluster.n_gpus * span) if span > 0 else float("inf")
m = st.columns(4)
m[0].metric("Jobs", f"{len(frame):,}")
m[1].metric("Users", frame["user"].nunique())
m[2].metric("GPU-hours asked", f"{frame['gpu_s'].sum() / 3600:,.0f}")
m[3].metric(f"Offered load on {cluster.n_gpus} GPUs", f"{offered:.2f}")
c1, c2 = st.columns(2)
common.plot(charts.arrivals_figure(frame), "wl_arrivals", c1)
common.plot(charts.offered_load_figure(frame, cluster.n_gpus), "wl_load", c2)
c1, c2 = st.columns(2)
common.plot(charts.gpu_count_figure(frame), "wl_gpus", c1)
common.plot(charts.duration_figure(frame), "wl_durations", c2)
common.plot(charts.user_volume_figure(frame), "wl_users")
with st.expander("First 200 jobs"):
    st.dataframe(frame.head(200), hide_index=True, width="stretch")
