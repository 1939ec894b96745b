"""Train: train an agent in a separate process with live curves; stop, resume; the result appears in Compare."""

import re
import time

import streamlit as st

from app_pages.lib import common, trainings
from app_pages.lib.text import as_text
from engine.viz.training import training_figure

st.title("Train an agent")

try:
    from engine.rl import launch
    from engine.rl.agent import MODELS_DIR, user_models_dir
    from engine.rl.train import config_names, load_config
except ImportError as exc:  # the RL extra (gymnasium, sb3) is missing in this installation
    st.error(f"Training is not available in this installation: {exc}. Install requirements.txt to enable it.")
    st.stop()

RUNS = common.REPO / "runs"
MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_JOB = "training_job"
USER_MODELS = user_models_dir()

st.markdown(
    "Training runs MaskablePPO (sb3-contrib) in a **separate process**, so this page stays responsive. "
    "The curves follow the run's logs as they are written: the mean return of training episodes and of "
    "the validation episodes (the deterministic policy on fixed workloads). **Stop** ends the run and keeps "
    "what it learned; **Resume** continues it to the steps you asked for. The agent appears as `rl:<name>` "
    "on the Compare page; models trained here are kept apart from the shipped ones."
)

configs = config_names()
if not configs:
    st.error("No training configs found in engine/rl/configs/.")
    st.stop()
job = st.session_state.get(_JOB)
running = job is not None and job["proc"].poll() is None
c = st.columns([2, 2, 1.3, 1, 1.4])
config = c[0].selectbox("Training config", configs, key="train_config")
name = c[1].text_input("Model name", trainings.default_name(config), key="train_name", max_chars=60)
max_steps = min(1_000_000, trainings.max_steps())
steps = c[2].number_input(
    "Environment steps",
    256,
    max(256, max_steps),
    min(4_096, max_steps),
    step=1_024,
    key="train_steps",
    help="A quick try shows curves within seconds. The shipped agents trained 40k-60k steps "
    f"after behaviour cloning (a few minutes per 10k steps on one core). This server "
    f"trains at most {max_steps:,} steps, {trainings.timeout_s():,} s per run.",
)
seed = c[3].number_input("Seed", 0, 2**31 - 1, 0, key="train_seed")
quick = c[4].toggle(
    "Quick try",
    True,
    key="train_quick",
    help="Small episodes (30 jobs), one environment, short rollouts and no behaviour cloning: "
    "curves in seconds. Off: the config as it is.",
)
with st.expander("Training config"):
    with common.engine_errors(f"training config {config}"):
        st.json(load_config(config).to_dict(), expanded=False)


def _problem_with(name: str) -> str:
    """Why ``name`` cannot be a new model, or "" (it becomes a file name under runs/: never a path)."""
    if not MODEL_NAME.fullmatch(name):
        return "A model name is 1 to 64 letters, digits, '-' or '_', starting with a letter or digit."
    if (MODELS_DIR / f"{name}.json").exists():
        return f"{as_text(name)} is a shipped agent; choose another model name."
    if (USER_MODELS / f"{name}.json").exists():
        return f"You already trained a model called {as_text(name)}; choose another model name."
    return ""


def _launch(cfg, target: int, offset: int = 0) -> bool:
    """Start ``cfg`` within the server's bounds (:mod:`app_pages.lib.trainings`); ``False`` (and an error line)
    when the server runs its most trainings already."""
    proc = common.engine_call(
        trainings.start,
        lambda: launch.start(cfg, USER_MODELS, offset_steps=offset),
        lambda: launch.request_stop(cfg),
        what="training",
    )
    if proc is not None:
        st.session_state[_JOB] = {"name": cfg.name, "cfg": cfg, "proc": proc, "target": target, "t0": time.time()}
    return proc is not None


b = st.columns(3)
if b[0].button("Start training", type="primary", disabled=running, key="train_start", width="stretch"):
    problem = _problem_with(name.strip())
    if problem:
        st.error(problem)
    else:
        cfg = common.engine_call(
            launch.page_config, config, name.strip(), steps, seed, quick=quick, runs_dir=RUNS, what="training"
        )
        if cfg is not None and _launch(cfg, int(steps)):
            st.rerun()
if b[1].button("Stop", disabled=not running, key="train_stop", width="stretch"):
    launch.request_stop(job["cfg"])  # the run exports what it has learned, then exits
    try:
        job["proc"].wait(timeout=60)
    except Exception:  # noqa: BLE001 - still exporting: the live view below reports when it ends
        pass
    st.rerun()
can_resume = (
    job is not None
    and not running
    and job["proc"].returncode == 0
    and launch.trained_steps(job["name"], USER_MODELS) < job["target"]
)
if b[2].button("Resume", disabled=not can_resume, key="train_resume", width="stretch"):
    resumed = common.engine_call(launch.resume_config, job["cfg"], job["target"], USER_MODELS, what="resume")
    if resumed is not None:
        cfg, done = resumed
        if _launch(cfg, job["target"], offset=done):
            st.rerun()


def live() -> None:
    """Progress, curves and outcome of this session's run; refreshed every 2 s while it runs."""
    job = st.session_state.get(_JOB)
    if job is None:
        st.info("No training started in this session yet.")
        return
    code = job["proc"].poll()
    curves = launch.curves(job["cfg"])
    logged = int(curves["step"].max()) if len(curves) else 0
    elapsed = time.time() - job["t0"]
    trained = launch.trained_steps(job["name"], USER_MODELS)
    if code is None:
        st.progress(
            min(logged / job["target"], 1.0),
            text=f"training {job['name']}: {logged:,} / {job['target']:,} steps logged, {elapsed:.0f} s",
        )
    elif code == 0:
        stopped = trained < job["target"]
        st.progress(
            min(trained / job["target"], 1.0),
            text=f"{job['name']}: {trained:,} / {job['target']:,} steps" + (" (stopped)" if stopped else ""),
        )
        st.success(
            f"Saved as `rl:{job['name']}` after {trained:,} steps: choose it on the Compare page."
            + (" Press Resume to train it further." if stopped else "")
        )
    else:
        log = launch.run_dir(job["cfg"]) / "app.log"
        tail = log.read_text(errors="replace").strip().splitlines()[-5:] if log.is_file() else []
        st.error(
            f"Training stopped with an error (exit code {code}). Last lines of its log:\n\n"
            + "\n".join(f"    {line}" for line in tail)
        )
    if len(curves):
        common.plot(training_figure(curves), "train_curves")
    elif code is None:
        st.caption("Waiting for the first logged rollout (the first curves appear after one PPO rollout)…")
    if code is not None and st.session_state.get("_train_reran") != (job["name"], job["t0"]):
        st.session_state["_train_reran"] = (job["name"], job["t0"])
        st.rerun()  # once, so the buttons above reflect the end of the run


st.fragment(live, run_every=2.0 if running else None)()
