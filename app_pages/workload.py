"""Workload: generate jobs or upload a trace; see what it contains and how hard it pushes the cluster."""

from dataclasses import replace
from pathlib import Path

import pandas as pd
import streamlit as st

from app_pages.lib import common
from app_pages.lib.text import as_text
from engine import EngineError
from engine.analysis import never_ran
from engine.analysis.scenario import ARRIVALS, MAX_FIRST, MAX_JOBS, MAX_MIX_WEIGHT, MAX_SEED, MAX_USERS, WorkloadSpec
from engine.errors import TraceError
from engine.sim.options import ADMISSION_POLICIES, MAX_RESCALE_S, AdmissionModel, ElasticModel
from engine.sim.scaling import SCALING_CURVES
from engine.traces import TRACE_FORMATS, mapped
from engine.traces.base import DROP_REASONS
from engine.traces.deadlines import DEADLINE_LAWS, NO_DEADLINES
from engine.traces.detect import UNKNOWN_FORMAT
from engine.traces.generator import DEFAULT_MIX, DEFAULT_SCALING, ELASTIC_GROWTH
from engine.traces.load import gpu_hours, offered_load, offered_load_series
from engine.traces.options import TIME_UNITS
from engine.units import plural
from engine.viz.workload import (
    arrivals_figure,
    duration_figure,
    gpu_count_figure,
    jobs_frame,
    offered_load_figure,
    user_volume_figure,
)

st.title("Workload")
sc = common.scenario()
w = sc.workload
SAMPLES = common.REPO / "sample_traces"

_OUTCOME = "_up_outcome"  # (kind, message) of the last load, shown after the rerun that updates the sidebar
MAP_LABELS = {
    "submit": "submit time (or start)",
    "duration": "duration (run time)",
    "end": "end time",
    "gpus": "GPUs",
    "user": "user",
}


def _csv_preview(data: bytes):
    """The CSV's preview, or ``None`` when the file is not comma-separated text with a header."""
    try:
        return mapped.preview(data)
    except EngineError:
        return None


def _preview_frame(pv) -> tuple[pd.DataFrame, str]:
    """The preview rows as a frame with one column per header name (a repeated name gets a number), rows padded
    with "" or cut to the header's width; and a note saying how many rows were padded or cut ("" when none)."""
    width = len(pv.header)
    columns, seen = [], {}
    for h in pv.header:
        seen[h] = seen.get(h, 0) + 1
        columns.append(h if seen[h] == 1 else f"{h} ({seen[h]})")
    ragged = sum(len(r) != width for r in pv.rows)
    frame = pd.DataFrame([(tuple(r) + ("",) * width)[:width] for r in pv.rows], columns=columns)
    note = (
        (
            f"{ragged} of the first {len(pv.rows)} rows have more or fewer fields than the header's {width}: shown "
            "padded with blanks or cut to the header."
        )
        if ragged
        else ""
    )
    return frame, note


def _mapping_form(name: str, pv, unit: str) -> tuple[dict[str, str], str]:
    """The file's columns, a preview and one dropdown per field (guesses preselected), with a warning when the
    times look like another unit; returns the chosen map and a sentence saying what a run still lacks ("" when
    nothing)."""
    guess = dict(pv.guess)
    st.markdown(f"**Columns in {as_text(name)}**: " + ", ".join(as_text(h) for h in pv.header))
    frame, note = _preview_frame(pv)
    st.dataframe(frame, hide_index=True, width="stretch", key="map_preview")
    if note:
        st.caption(note)
    st.markdown("**Column mapping**: which column holds each field (guessed from the names; *none* if absent).")
    none = "(none)"
    options = [none, *pv.header]

    def pick(field: str, where) -> None:
        chosen = where.selectbox(
            MAP_LABELS.get(field, field),
            options,
            key=f"map_{field}",
            index=options.index(guess[field]) if field in guess else 0,
        )
        if chosen != none:
            column_map[field] = chosen

    column_map: dict[str, str] = {}
    c = st.columns(5)
    for i, field in enumerate(("submit", "duration", "end", "gpus", "user")):
        pick(field, c[i])
    with st.expander("More fields (GPU share, memory, job type, priority, estimate, allowed types, name)"):
        c = st.columns(4)
        for i, field in enumerate(k for k in mapped.KEYS if k not in ("submit", "duration", "end", "gpus", "user")):
            pick(field, c[i % 4])
    blocker = mapped.missing_for_run(column_map)
    if blocker:
        st.warning(blocker, icon="⚠️")
        return column_map, blocker
    if "duration" not in column_map:
        st.caption(as_text(f"Each job's duration will be {column_map['end']} − {column_map['submit']}."))
    _, note = mapped.time_unit_note(pv, column_map, unit)
    if note:
        st.warning(note, icon="⏱️")
    return column_map, ""


def _for_people(exc: EngineError) -> str:
    """The error in words for this page: where in the file (line, column; never the server's temporary copy)
    and what was wrong, with no command-line flags."""
    if not isinstance(exc, TraceError):
        return str(exc)
    if exc.reason.startswith(UNKNOWN_FORMAT):
        return (
            "the playground cannot tell this file's format from its first line. Choose its format above; for "
            'a CSV with other column names choose "any CSV: map my columns".'
        )
    where = ", ".join(
        p
        for p in (f"line {exc.line}" if exc.line is not None else "", f"column {exc.column!r}" if exc.column else "")
        if p
    )
    return f"{where}: {exc.reason}" if where else exc.reason


def _load(name: str, data: bytes, fmt: str, unit: str, column_map: dict[str, str], first: int, skip_bad: bool) -> None:
    """Load the trace into the scenario, or keep why not; either way rerun, so the sidebar and every page show
    the workload in use (a failed load is marked: the scenario still holds the previous workload)."""
    digest = common.engine_call(common.store_trace, data, what=name)  # refused when past the store's bound
    if digest is None:
        st.session_state[common.FAILED_UPLOAD] = Path(name).name
        return
    spec = common.engine_call(
        WorkloadSpec,
        source="trace",
        trace_sha256=digest,
        trace_name=Path(name).name[-200:],
        trace_format="" if fmt == "auto-detect" else fmt,
        time_unit=unit,
        column_map=tuple(column_map.items()),
        first=first,
        skip_bad=skip_bad,
        what=name,
    )
    if spec is None:
        common.forget_trace(digest)
        return
    new = replace(sc, workload=spec, name="")
    try:
        trace = common.loaded_trace(new)
        problem = "" if trace.jobs else f"no usable jobs in the file (dropped: {trace.report.dropped or 'none'})"
    except EngineError as exc:
        problem = _for_people(exc)
    if problem:
        common.forget_trace(digest)
        st.session_state[common.FAILED_UPLOAD] = Path(name).name
        st.session_state[_OUTCOME] = ("error", as_text(f"{name}: {problem}"))
    else:
        st.session_state.pop(common.FAILED_UPLOAD, None)
        st.session_state[_OUTCOME] = (
            "success",
            as_text(f"Loaded {trace.report.jobs:,} jobs from {name} (format: {trace.format})."),
        )
        common.set_scenario(new)
    st.rerun()


gen_tab, up_tab = st.tabs(["Generate", "Upload a trace"])

# ---------------------------------------------------------------- generate
with gen_tab:
    with st.form("generate_form"):
        c = st.columns(3)
        n_jobs = c[0].number_input(
            "Jobs", 1, MAX_JOBS, w.n_jobs if w.source == "generate" else 300, step=50, key="gen_n_jobs"
        )
        load = c[1].slider(
            "Offered load",
            0.1,
            2.0,
            float(min(max(w.load, 0.1), 2.0)),
            0.05,
            key="gen_load",
            help="Arrival rate × mean GPU-seconds per job ÷ cluster GPUs (1 = saturated).",
        )
        users = c[2].number_input("Users", 1, MAX_USERS, w.users, key="gen_users")
        c = st.columns(3)
        arrival = c[0].selectbox("Arrivals", ARRIVALS, index=ARRIVALS.index(w.arrival), key="gen_arrival")
        seed = c[1].number_input("Seed", 0, MAX_SEED, w.seed, key="gen_seed")
        c = st.columns(3)
        laws = [NO_DEADLINES, *DEADLINE_LAWS]
        deadlines = c[0].selectbox(
            "Deadlines",
            laws,
            index=laws.index(w.deadlines),
            key="gen_deadlines",
            format_func=lambda k: "none" if k == NO_DEADLINES else f"{k}: {DEADLINE_LAWS[k].description}",
            help="How each job's deadline is drawn, as the literature does: "
            + "; ".join(f"{k}: {law.source}" for k, law in DEADLINE_LAWS.items()),
        )
        best_effort = c[1].number_input(
            "Best-effort share",
            0.0,
            1.0,
            float(w.best_effort),
            0.05,
            key="gen_best_effort",
            help="Share of the jobs left without a deadline.",
        )
        elastic = c[2].number_input(
            "Elastic share",
            0.0,
            1.0,
            float(w.elastic),
            0.05,
            key="gen_elastic",
            help=f"Share of all the jobs made elastic: each may run on 1 to {ELASTIC_GROWTH}x its GPUs. They are "
            "drawn among the whole-GPU jobs only (a fractional job cannot resize), so at most all of those are. "
            f"{common.resizers()} resize them, the other schedulers run them at their requested size.",
        )
        curves = list(SCALING_CURVES)
        scaling = st.columns(3)[0].selectbox(
            "Scaling curve of elastic jobs",
            curves,
            index=curves.index(w.scaling or DEFAULT_SCALING),
            key="gen_scaling",
            help="Their speed-up by GPU count: "
            + "; ".join(f"{k}: {getattr(v, 'source', '') or 'by definition'}" for k, v in SCALING_CURVES.items()),
        )
        st.markdown("**Job mix** (relative weights)")
        mix_now = dict(w.mix) or DEFAULT_MIX
        c = st.columns(len(DEFAULT_MIX))
        mix = {
            t: c[i].number_input(t, 0.0, MAX_MIX_WEIGHT, float(mix_now.get(t, 0.0)), 0.05, key=f"gen_mix_{t}")
            for i, t in enumerate(DEFAULT_MIX)
        }
        if st.form_submit_button("Generate", type="primary"):
            if sum(mix.values()) <= 0:
                st.error("The job mix needs at least one weight above 0.")
            else:
                spec = common.engine_call(
                    WorkloadSpec,
                    source="generate",
                    n_jobs=int(n_jobs),
                    load=float(load),
                    users=int(users),
                    arrival=arrival,
                    seed=int(seed),
                    mix=() if mix == DEFAULT_MIX else tuple(mix.items()),
                    deadlines=deadlines,
                    best_effort=float(best_effort),
                    elastic=float(elastic),
                    # the default curve is left out of the scenario and the link, as is any curve without elastic jobs
                    scaling="" if scaling == DEFAULT_SCALING or not elastic else scaling,
                    what="workload",
                )
                if spec is not None:
                    st.session_state.pop(common.FAILED_UPLOAD, None)
                    common.set_scenario(replace(sc, workload=spec, name=""))
                    st.rerun()


# ---------------------------------------------------------------- admission
def admission_control(sc) -> None:
    """The scenario's admission policy (``options.admission``): which arriving jobs enter the queue."""
    policies = list(ADMISSION_POLICIES)
    current = sc.options.admission.policy
    policy = st.selectbox(
        "Admission control",
        policies,
        index=policies.index(current),
        key=f"wl_admission_{current}",  # a new widget when the scenario's policy changes (a link, a preset)
        format_func=lambda k: f"{k}: {ADMISSION_POLICIES[k]}",
        help="The stage before the queue. A declined job never runs; Compare counts it as a missed deadline "
        "and its story says why.",
    )
    if policy != current:
        common.set_scenario(replace(sc, options=replace(sc.options, admission=AdmissionModel(policy))))
        st.rerun()


def rescale_cost(sc) -> None:
    """The scenario's rescale cost (``options.elastic.rescale_s``): what each resize of an elastic job costs."""
    current = sc.options.elastic.rescale_s
    rescale_s = st.number_input(
        "Rescale cost (s)",
        0.0,
        MAX_RESCALE_S,
        float(current),
        5.0,
        key=f"wl_rescale_{current}",  # a new widget when the scenario's cost changes (a link, a preset)
        help="Seconds an elastic job makes no progress each time a scheduler changes its GPUs (checkpoint and "
        "restart on the new ones; 30 s by default, as in Pollux). Rigid jobs never pay it.",
    )
    if rescale_s != current:
        common.set_scenario(replace(sc, options=replace(sc.options, elastic=ElasticModel(float(rescale_s)))))
        st.rerun()


run_cols = st.columns(2)
with run_cols[0]:
    admission_control(sc)
with run_cols[1]:
    rescale_cost(sc)

# ---------------------------------------------------------------- upload
MAPPED = "mapped"
FORMAT_LABELS = {"auto-detect": "auto-detect", MAPPED: "any CSV: map my columns"}
with up_tab:
    formats = ["auto-detect"] + list(TRACE_FORMATS)
    c = st.columns(3)
    fmt = c[0].selectbox("Format", formats, key="up_format", format_func=lambda f: FORMAT_LABELS.get(f, f))
    unit = c[1].selectbox(
        "Time unit",
        ["", *TIME_UNITS],
        key="up_unit",
        format_func=lambda u: u or "format default",
        help="Only for formats whose time unit is not fixed (Tiresias-style CSV, mapped CSV).",
    )
    first = c[2].number_input("Keep the first N jobs (0 = all)", 0, MAX_FIRST, 0, key="up_first")
    skip_bad = st.checkbox(
        "Skip malformed rows and report them (otherwise the first bad row stops the load)", key="up_skip_bad"
    )
    uploaded = st.file_uploader(
        f"Trace file (at most {common.MAX_UPLOAD_MB} MiB)",
        type=["csv", "swf", "gz", "txt", "tsv", "trace"],
        key="trace_upload",
    )
    samples = sorted(p.name for p in SAMPLES.glob("*") if p.is_file() and p.suffix != ".md") if SAMPLES.is_dir() else []
    sample = (
        st.selectbox(
            "…or use a sample trace shipped with the project",
            samples,
            index=None,
            placeholder="choose a sample…",
            key="sample_trace",
        )
        if samples
        else None
    )
    if uploaded is not None:
        name, data = uploaded.name, uploaded.getvalue()
    elif sample is not None:
        name, data = sample, (SAMPLES / sample).read_bytes()
    else:
        name, data = "", b""
    column_map: dict[str, str] = {}
    blocker = ""
    pv = _csv_preview(data) if data and fmt in ("auto-detect", MAPPED) else None
    if fmt == MAPPED and data and pv is None:
        blocker = f"{name} is not comma-separated text with a header line, so its columns cannot be mapped."
        st.error(as_text(blocker))
    elif pv is not None and (fmt == MAPPED or mapped.needs_map(pv)):
        if fmt != MAPPED:
            st.info(
                f"The columns of {as_text(name)} are not those of a trace format the playground knows: "
                "choose below which column holds each field."
            )
            fmt = MAPPED
        column_map, blocker = _mapping_form(name, pv, unit)
    load_clicked = st.button("Load trace", type="primary", key="load_trace", disabled=not data or bool(blocker))
    if data:  # said by the server, so it names the file the button will load (the uploader's name is the browser's)
        st.caption(as_text(f"Ready to load: {name} ({len(data) / 2**10:,.1f} KiB)"))
    if load_clicked:
        if len(data) > common.MAX_UPLOAD_MB * 2**20:
            st.error(
                f"{as_text(name)} is {len(data) / 2**20:.1f} MiB; the limit is {common.MAX_UPLOAD_MB} MiB. "
                "Keep the first N jobs of a shorter file, or run the command-line engine on larger traces."
            )
        else:
            _load(name, data, fmt, unit, column_map, int(first), skip_bad)
    outcome = st.session_state.pop(_OUTCOME, None)
    if outcome is not None:
        (st.success if outcome[0] == "success" else st.error)(outcome[1])

# ---------------------------------------------------------------- what the workload holds
st.divider()
with common.engine_errors("the workload could not be built"):
    cluster = common.cluster_of(sc)
    jobs = common.jobs_of(sc)
missing = never_ran.before_run(cluster, jobs)
if missing.count:
    st.warning(missing.sentence(), icon="⚠️")
    st.dataframe(
        pd.DataFrame(missing.by_reason, columns=["why the job can never run", "jobs"]),
        hide_index=True,
        width="stretch",
        key="never_ran_reasons",
    )
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
        st.table(
            {
                "why the rows were dropped": [DROP_REASONS.get(r, r.replace("_", " ")) for r in report["dropped"]],
                "rows dropped": list(report["dropped"].values()),
            }
        )
    if report.get("unit_warning"):
        st.warning(report["unit_warning"], icon="⏱️")
    for example in report.get("examples", []):
        st.caption(as_text(f"skipped: {example}"))
elif w.source == "preset":
    st.subheader(f"Workload of preset {as_text(w.preset)}: {len(jobs):,} jobs")
else:
    st.subheader(f"Generated workload: {len(jobs):,} jobs")

frame = jobs_frame(jobs)
m = st.columns(4)
m[0].metric("Jobs", f"{len(frame):,}")
m[1].metric("Users", frame["user"].nunique())
m[2].metric("GPU-hours asked", f"{gpu_hours(jobs):,.0f}")
m[3].metric(f"Offered load on {plural(cluster.n_gpus, 'GPU')}", f"{offered_load(jobs, cluster.n_gpus):.2f}")
if w.elastic:
    st.caption(f"Elastic: {common.elastic_words(sc)}. A fractional job cannot resize.")
c1, c2 = st.columns(2)
common.plot(arrivals_figure(frame), "wl_arrivals", c1)
common.plot(offered_load_figure(*offered_load_series(jobs, cluster.n_gpus), cluster.n_gpus), "wl_load", c2)
c1, c2 = st.columns(2)
common.plot(gpu_count_figure(frame), "wl_gpus", c1)
common.plot(duration_figure(frame), "wl_durations", c2)
common.plot(user_volume_figure(frame), "wl_users")
with st.expander("First 200 jobs"):
    st.dataframe(frame.head(200), hide_index=True, width="stretch")
