"""What every page shares: the current scenario, uploaded traces, cached runs, the sidebar, error display.

Pages stay thin: they read and write the scenario through :func:`scenario` / :func:`set_scenario`, get jobs
and results through the cached functions here, and hand them to the figures of :mod:`engine.viz`. Nothing here
schedules anything.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app_pages.lib import results, uploads, workers
from app_pages.lib.results import ResultCache
from app_pages.lib.text import as_text
from engine import SCHEDULERS, EngineError, Job, Result
from engine.analysis.metrics import Summary, compare, job_frame, summarize
from engine.analysis.scenario import Scenario, unknown_link_keys
from engine.errors import quote
from engine.rl.agent import MODELS_DIR, user_models_dir  # trained agents: <name>.json model cards (rl:<name>)
from engine.sim.cluster import Cluster
from engine.sim.options import EnergyModel, RunOptions
from engine.traces.generator import DEFAULT_SCALING
from engine.units import human_seconds, plural
from engine.viz.distributions import cdf_figure
from engine.viz.series import series_figure
from engine.viz.timeline import timeline_figure
from engine.viz.users import user_wait_figure

REPO = Path(__file__).resolve().parents[2]
#: Largest trace file the app accepts, MiB (``.streamlit/config.toml`` sets ``server.maxUploadSize`` to match).
MAX_UPLOAD_MB = 50

_SCENARIO, _RESULTS = "scenario", "results"
#: Session key: the name of a trace upload that did not load (the scenario still holds the previous workload).
FAILED_UPLOAD = "failed_upload"


# ----------------------------------------------------------------------------- errors
@contextmanager
def engine_errors(what: str = "", *, stop: bool = True) -> Iterator[None]:
    """Show an :class:`EngineError` (bad input) as one inline error line instead of a traceback; then stop the
    page, or with ``stop=False`` skip the rest of the ``with`` block only (a form in a tab: the other tabs still
    draw)."""
    try:
        yield
    except EngineError as exc:
        st.error(as_text(f"{what}: {exc}" if what else exc), icon="⚠️")
        if stop:
            st.stop()


def engine_call(fn: Callable, *args, what: str = "", **kwargs):
    """``fn(*args, **kwargs)``; on bad input an inline error and ``None``, and the page goes on."""
    try:
        return fn(*args, **kwargs)
    except EngineError as exc:
        st.error(as_text(f"{what}: {exc}" if what else exc), icon="⚠️")
        return None


# ----------------------------------------------------------------------------- scenario
def scenario() -> Scenario:
    """The current scenario: from the session, else from the link's query parameters (:func:`_from_link`), else
    the default."""
    sc = st.session_state.get(_SCENARIO)
    if sc is None:
        sc = _from_link(st.query_params.to_dict())
        st.session_state[_SCENARIO] = sc
    return sc


def _from_link(params: dict[str, str]) -> Scenario:
    """The link's scenario, each part it gives applied on the default one (a link without ``cluster=`` uses the
    default cluster). What cannot be applied gets one warning line: parameters no setting reads and schedulers
    the playground does not have are named and left out; a value the scenario refuses leaves the default."""
    default = Scenario()
    unknown = unknown_link_keys(params)
    if unknown:
        st.warning(as_text(_left_out(unknown, "parameter", "is not a setting", "are not settings")))
    if len(unknown) == len(params):
        return default
    try:
        sc = Scenario.from_query(params, cluster=default.cluster)
    except EngineError as exc:
        st.warning(as_text(f"The link's scenario could not be read ({exc}); using the default."))
        return default
    known = set(scheduler_choices())  # (reads the models folders: once, not per name)
    strangers = [name for name in sc.schedulers if name not in known]
    if strangers:
        st.warning(as_text(_left_out(strangers, "scheduler", "is not a scheduler", "are not schedulers")))
        sc = sc.with_schedulers(name for name in sc.schedulers if name not in strangers)
    return sc


def _left_out(names: list[str], what: str, is_not: str, are_not: str) -> str:
    """One line naming what a link gave that the playground left out (at most 5 named, each cut to 40
    characters): ``The link's parameter 'x' is not a setting of the playground; it was left out.``"""
    listed = ", ".join(quote(k, 40) for k in names[:5]) + (f" and {len(names) - 5} more" if names[5:] else "")
    if len(names) == 1:
        return f"The link's {what} {listed} {is_not} of the playground; it was left out."
    return f"The link's {what}s {listed} {are_not} of the playground; they were left out."


def scheduler_choices() -> list[str]:
    """What the pages offer to run: the registered schedulers, then the trained agents (:func:`trained_agents`)."""
    return sorted(SCHEDULERS) + trained_agents()


def set_scenario(sc: Scenario) -> None:
    """Make ``sc`` current and mirror it into the URL so the link reproduces it."""
    st.session_state[_SCENARIO] = sc
    sync_query_params(sc)


def sync_query_params(sc: Scenario) -> None:
    query = sc.to_query()
    if st.query_params.to_dict() != query:
        st.query_params.from_dict(query)


# ----------------------------------------------------------------------------- traces and jobs
def store_trace(data: bytes) -> str:
    """Keep an upload in this session's bounded store (:mod:`app_pages.lib.uploads`); returns its SHA-256."""
    return uploads.session_store().put(data)


def forget_trace(digest: str) -> None:
    """Drop an upload that did not load (unless the current scenario uses the same bytes)."""
    if scenario().workload.trace_sha256 != digest:
        uploads.session_store().drop(digest)


def trace_bytes(digest: str) -> bytes | None:
    """An upload's bytes: this session's, else those another session or the API kept in the shared store (then
    kept in this session too)."""
    data = uploads.session_store().get(digest)
    if data is None:
        data = uploads.shared_trace(digest)
        if data is not None:
            uploads.session_store().put(data)
    return data


# Clusters and job tuples are frozen records: cache_resource shares them instead of unpickling a copy on
# every call as cache_data does (about 15 ms per call for 2,000 jobs, several calls per comparison).
@st.cache_resource(show_spinner=False, max_entries=32)
def _cluster(spec: str) -> Cluster:
    return Scenario(cluster=spec).build_cluster()


def cluster_of(sc: Scenario) -> Cluster:
    """The scenario's cluster (cached; raises ``EngineError`` when the spec is invalid)."""
    return _cluster(sc.cluster)


@st.cache_data(show_spinner=False, max_entries=8)
def _trace(workload_key: str):
    sc = Scenario.from_dict(json.loads(workload_key))
    data, name = trace_bytes(sc.workload.trace_sha256), sc.workload.trace_name or "the trace"
    if data is not None:
        uploads.check_trace_size(data, name)
    trace = workers.call(sc.load_trace, data, what=f"loading {name}")
    uploads.check_job_limit(len(trace.jobs), name)
    if data is not None and trace.jobs:
        uploads.keep_shared(data, name, trace.report.to_dict())
    return trace


def loaded_trace(sc: Scenario):
    """The scenario's uploaded trace (jobs and report), loaded once per workload key (raises ``EngineError``)."""
    return _trace(sc.workload_key())


@st.cache_resource(show_spinner=False, max_entries=32)
def _jobs(workload_key: str) -> tuple[Job, ...]:
    sc = Scenario.from_dict(json.loads(workload_key))
    if sc.workload.source == "trace":  # the upload loaded once; the scenario's cuts (skip, block, load scale)
        return sc.workload.cut_trace(_trace(workload_key).jobs, cluster_of(sc).n_gpus)
    return workers.call(sc.build_jobs, cluster_of(sc), what="building the workload")


def jobs_of(sc: Scenario) -> tuple[Job, ...]:
    """The scenario's jobs (cached by everything that determines them; raises ``EngineError``)."""
    return _jobs(sc.workload_key())


# ----------------------------------------------------------------------------- runs
def run_key(sc: Scenario) -> str:
    """Canonical JSON of everything that determines the runs of ``sc`` (not the schedulers): its workload key and
    the run options the simulation reads (failures, preemption; the energy model changes no simulated number). Two
    scenarios with equal run keys give each scheduler the same run."""
    options = sc.options.to_dict()
    options.pop("energy")
    return json.dumps(
        {"workload": json.loads(sc.workload_key()), "options": options}, sort_keys=True, separators=(",", ":")
    )


@st.cache_resource
def results_cache() -> ResultCache:
    """The runs this server has finished, bounded in bytes (:mod:`app_pages.lib.results`): a reloaded page or a
    shared link of a scenario someone ran answers from it."""
    return ResultCache(results.limit_bytes())


def _run(key: str, scheduler: str) -> Result:
    parts = json.loads(key)
    sc = replace(Scenario.from_dict(parts["workload"]), options=RunOptions.from_dict(parts["options"]))
    return workers.call(
        workers.simulate_named,
        cluster_of(sc),
        jobs_of(sc),
        scheduler,
        sc.seed,
        str(user_models_dir()),
        sc.options,
        what=f"the run of {scheduler}",
    )


def run_one(sc: Scenario, scheduler: str) -> Result:
    """One scheduler on the scenario with its run options, cached by (:func:`run_key`, scheduler): changing the
    list of schedulers reruns only the new ones. Callers must not modify it."""
    key = (run_key(sc), scheduler)
    return results_cache().get_or_run(key, lambda: _run(*key))


def ran_before(sc: Scenario) -> bool:
    """True when this server still holds a run of every scheduler of ``sc`` on its workload and options (a reload or
    a shared link of a scenario someone ran: :func:`run_one` then answers from the cache)."""
    cache = results_cache()
    return bool(sc.schedulers) and all((run_key(sc), s) in cache for s in sc.schedulers)


@st.cache_resource(show_spinner=False, max_entries=8)
def _timeline(key: str, names: tuple[str, ...], color_by: str, mode: str | None, _results: dict[str, Result]):
    return timeline_figure(_results, color_by=color_by, mode=mode)


def timeline_for(sc: Scenario, results: dict[str, Result], color_by: str, mode: str | None = None):
    """The animated timeline of ``results`` (runs of ``sc``), built once per (scenario, schedulers, colouring,
    drawing mode; ``None`` = chosen by size): a widget change elsewhere on the page redraws without rebuilding
    it. Callers must not modify it."""
    return _timeline(run_key(sc), tuple(results), color_by, mode, results)


@dataclass(frozen=True)
class Comparison:
    """Metrics and job tables of a set of runs (built by :func:`comparison_for`)."""

    summaries: dict[str, Summary]
    table: pd.DataFrame  # metrics x schedulers, as engine.analysis.metrics.compare returns it
    job_frames: dict[str, pd.DataFrame]
    energy: EnergyModel | None = None  # the model the summaries and job tables count energy, cost and carbon by


def _energy_key(energy: EnergyModel | None) -> str:
    return "" if energy is None else json.dumps(energy.to_dict(), sort_keys=True)


@st.cache_resource(show_spinner=False, max_entries=8)
def _comparison(
    key: str, names: tuple[str, ...], energy_key: str, _results: dict[str, Result], _energy: EnergyModel | None
) -> Comparison:
    summaries = {name: summarize(r, energy=_energy) for name, r in _results.items()}
    return Comparison(
        summaries=summaries,
        table=compare(summaries),
        job_frames={name: job_frame(r, _energy) for name, r in _results.items()},
        energy=_energy,
    )


def comparison_for(sc: Scenario, results: dict[str, Result], energy: EnergyModel | None = None) -> Comparison:
    """Metrics and job tables of ``results`` (runs of ``sc``), with energy, cost and carbon under ``energy``, built
    once per (scenario, schedulers, energy model): a widget change on the page reruns it without recomputing
    them. Raises ``ClusterSpecError`` for a GPU type without power or price figures. Callers must not modify it."""
    return _comparison(run_key(sc), tuple(results), _energy_key(energy), results, energy)


#: The Compare page's charts besides the timeline: name -> builder from the runs and their Comparison.
COMPARISON_CHARTS: dict[str, Callable[[dict[str, Result], Comparison], go.Figure]] = {
    "series": lambda results, views: series_figure(results, energy=views.energy),
    "cdfs": lambda results, views: cdf_figure(views.job_frames),
    "user_box": lambda results, views: user_wait_figure(
        views.job_frames, {name: (s.gini_user_wait, s.jain_user_wait) for name, s in views.summaries.items()}
    ),
}


@st.cache_resource(show_spinner=False, max_entries=32)
def _chart(
    key: str, names: tuple[str, ...], kind: str, energy_key: str, _results: dict[str, Result], _views: Comparison
) -> go.Figure:
    return COMPARISON_CHARTS[kind](_results, _views)


def chart_for(sc: Scenario, results: dict[str, Result], kind: str, energy: EnergyModel | None = None) -> go.Figure:
    """One chart of :data:`COMPARISON_CHARTS` for ``results`` (runs of ``sc``; ``energy``: as
    :func:`comparison_for`), built once per (scenario, schedulers, energy model) and only when the page reaches
    it, so the key metrics and the timeline are sent first. Callers must not modify it."""
    return _chart(run_key(sc), tuple(results), kind, _energy_key(energy), results, comparison_for(sc, results, energy))


def save_results(sc: Scenario, results: dict[str, Result]) -> None:
    """Keep a comparison across reruns and widget changes, with the scenario it was computed for."""
    st.session_state[_RESULTS] = {"scenario": sc, "results": results}


def saved_results() -> tuple[Scenario, dict[str, Result]] | None:
    saved = st.session_state.get(_RESULTS)
    return None if saved is None else (saved["scenario"], saved["results"])


def trained_agents() -> list[str]:
    """``rl:<name>`` for each model card in ``models/`` and among the models trained in the app
    (:func:`engine.rl.agent.user_models_dir`) when the RL plug-in is installed, else empty."""
    from engine.schedulers import PREFIXES

    if "rl" not in PREFIXES:
        return []
    from engine.rl.agent import model_names

    return sorted({f"rl:{n}" for d in (MODELS_DIR, user_models_dir()) for n in model_names(d)})


@dataclass(frozen=True)
class AgentVerdict:
    """What a trained agent's model card says of it against the best hand-written policy, as plain text."""

    beats: bool  # better on every evaluated setting
    line: str  # one line for people: how often better, worse, no different
    details: str  # the card's full sentence, naming each setting


def verdict_line(summary: dict) -> str:
    """A card's evaluation summary (``settings``, ``better``, ``worse`` counts) as one line for people."""
    n, better, worse = (int(summary.get(k, 0)) for k in ("settings", "better", "worse"))
    if summary.get("beats_best_baseline") is True:
        return f"Beats the best hand-written policy in all {n} test settings."
    return (
        f"Does not beat the best hand-written policy: better in {better} of {n} test settings, worse in "
        f"{worse}, no clear difference in {n - better - worse}."
    )


def agent_verdict(name: str) -> AgentVerdict | None:
    """For ``rl:<model>`` (shipped in ``models/``): its card's verdict against the best hand-written policy, in one
    line and in full, escaped to show as plain text; ``None`` if the card has no verdict or cannot be read."""
    from engine.rl.agent import ModelError, read_card

    try:
        card = read_card(name.removeprefix("rl:"), MODELS_DIR)
    except ModelError:
        return None
    verdict = card.get("verdict")
    if not isinstance(verdict, str):
        return None
    evaluation = card.get("evaluation")
    summary = evaluation.get("summary") if isinstance(evaluation, dict) else None
    try:
        line = verdict_line(summary)
    except (AttributeError, TypeError, ValueError):  # no counts (an older or hand-edited card): the first clause
        line = verdict.split(":")[0][:200].rstrip(".") + "."
    return AgentVerdict(card.get("beats_best_baseline") is True, as_text(line), as_text(verdict[:2000]))


def agent_description(name: str) -> str:
    """For ``rl:<model>`` (shipped, or trained in this app): its card's description of what it learned, as plain
    text, cut to one paragraph; a fixed sentence when the card has none."""
    from engine.rl.agent import ModelError, read_card

    for folder in (MODELS_DIR, user_models_dir()):
        try:
            text = read_card(name.removeprefix("rl:"), folder).get("description")
        except ModelError:
            continue
        if isinstance(text, str) and text.strip():
            return as_text(text.strip()[:500])
    return "A trained agent without a description on its model card."


#: Plotly rejects the promise of a running animation, with no reason, when pause (or the slider) interrupts it, and
#: its buttons never catch it: without this, each pause of an animated timeline is an "Uncaught (in promise)"
#: error in the browser. Only rejections without a reason are silenced, once per page.
_QUIET_ANIMATION_INTERRUPTS = """<script>
if (!window.__quietPlotlyInterrupts) {
  window.__quietPlotlyInterrupts = true;
  window.addEventListener("unhandledrejection", e => { if (e.reason === undefined) e.preventDefault(); });
}
</script>"""


def quiet_animation_interrupts() -> None:
    """Call before drawing an animated figure: pausing it raises no browser error."""
    st.html(_QUIET_ANIMATION_INTERRUPTS, unsafe_allow_javascript=True, width="content")


def plot(fig, key: str, where=st) -> None:
    """Draw a figure of :mod:`engine.viz` at the container's width (``where``: ``st`` or a column).

    The figures bring their own template, so Streamlit's chart theme is off: applying it made the browser
    take about 1.5x as long to draw the Compare page's animated timeline (browser benchmark).
    """
    where.plotly_chart(fig, width="stretch", key=key, theme=None, config={"displaylogo": False})


def elastic_words(sc: Scenario) -> str:
    """How many jobs of a generated workload are elastic: the share is of all jobs but drawn among the whole-GPU
    ones (a fractional job cannot resize; :func:`~engine.traces.generator.generate`), so say both."""
    asked = f"{sc.workload.elastic:.0%} of the jobs asked"
    try:
        jobs = jobs_of(sc)
    except EngineError:  # the cluster or workload is invalid: the page says why
        return f"{asked}, drawn among whole-GPU jobs only"
    elastic, whole = sum(j.elastic for j in jobs), sum(j.gpu_fraction == 1.0 for j in jobs)
    return f"{elastic:,} of {plural(len(jobs), 'job')} ({asked}, drawn among the {whole:,} whole-GPU jobs)"


def resizers() -> str:
    """The schedulers that resize elastic jobs (``SchedulerSpec.resizes``), in words: ``optimus and elasticflow``."""
    names = [name for name, spec in SCHEDULERS.items() if spec.resizes]
    return f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else "".join(names)


# ----------------------------------------------------------------------------- sidebar
def sidebar() -> None:
    """The current scenario, in a few lines, with its JSON and a way to load one."""
    sc = scenario()
    side = st.sidebar
    side.markdown("### Current scenario")
    if sc.name:
        side.caption(f"preset: **{as_text(sc.name)}**")
    try:
        cluster = cluster_of(sc)
        types = ", ".join(f"{n}× {t}" for t, n in cluster.gpus_by_type().items())
        side.markdown(
            f"**Cluster** · {plural(cluster.n_nodes, 'node')}, {plural(cluster.n_gpus, 'GPU')}  \n{as_text(types)}"
        )
    except EngineError as exc:
        side.error(as_text(f"Cluster: {exc}"))
    w = sc.workload
    if w.source == "generate":
        side.markdown(
            f"**Workload** · {w.n_jobs} generated jobs, load {w.load:g}, {w.users} users, "
            f"{w.arrival} arrivals, seed {w.seed}"
        )
    elif w.source == "preset":
        side.markdown(f"**Workload** · from preset {as_text(w.preset)}, seed {w.seed}")
    else:
        side.markdown(
            f"**Workload** · trace {as_text(w.trace_name)} ({w.trace_format or 'auto-detected'}, "
            f"sha256 {w.trace_sha256[:10]}…)"
        )
    if w.deadlines != "none" and w.source != "preset":
        share = f", {w.best_effort:.0%} best effort" if w.best_effort else ""
        side.markdown(f"**Deadlines** · {w.deadlines}{share}; admission {sc.options.admission.policy}")
    elif sc.options.admission.active:
        side.markdown(f"**Admission** · {sc.options.admission.policy}")
    if w.elastic:
        curve = w.scaling or DEFAULT_SCALING
        side.markdown(f"**Elastic** · {elastic_words(sc)}; {curve}, rescale cost {sc.options.elastic.rescale_s:g} s")
    if st.session_state.get(FAILED_UPLOAD):
        side.warning(as_text(f"{st.session_state[FAILED_UPLOAD]} did not load; the workload above is still in use."))
    side.markdown("**Schedulers** · " + (as_text(", ".join(sc.schedulers)) or "none"))
    side.download_button(
        "Scenario JSON",
        sc.to_json(),
        file_name="scenario.json",
        mime="application/json",
        key="sidebar_scenario_json",
        on_click="ignore",
        width="stretch",
    )
    up = side.file_uploader("Open a scenario JSON", type=["json"], key="sidebar_scenario_upload")
    if up is not None and st.session_state.get("_opened_scenario") != up.file_id:
        st.session_state["_opened_scenario"] = up.file_id
        loaded = engine_call(Scenario.from_json, up.getvalue(), what="scenario file")
        if loaded is not None:
            set_scenario(loaded)
            st.rerun()
    side.caption("The page's link (address bar) also reproduces this scenario.")


#: A duration for people (``42 s``, ``3.5 min``, ``2.1 h``, ``178 d``).
fmt_seconds = human_seconds
