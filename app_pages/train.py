"""Train: train a small agent in a separate process, with live curves; the result appears in Compare."""

import json
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import streamlit as st

from app_pages import common
from app_pages.text import as_text
from engine.viz import charts

st.title("Train an agent")

try:
    from engine.rl.train import load_config, preset_names
except ImportError as exc:  # the RL extra (gymnasium, sb3) is missing in this installation
    st.error(f"Training is not available in this installation: {exc}. Install requirements.txt to enable it.")
    st.stop()

RUNS = common.REPO / "runs"
MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_JOB = "training_job"

st.markdown("Training runs MaskablePPO (sb3-contrib) in a **separate process**, so this page stays responsive. "
            "Curves come from the run's TensorBoard logs as they are written. When it ends, the agent is saved "
            "as a model card in `models/` and appears as `rl:<name>` on the Compare page.")

presets = preset_names()
if not presets:
    st.error("No training presets found in engine/rl/presets/.")
    st.stop()
c = st.columns(4)
preset = c[0].selectbox("Training preset", presets, key="train_preset")
name = c[1].text_input("Model name", f"{preset}-mine", key="train_name")
steps = c[2].number_input("Environment steps", 1_000, 1_000_000, 20_000, step=1_000, key="train_steps",
                          help="The shipped agents trained for 40k-60k steps after behaviour cloning; 20k steps take a few "
                          "minutes on one core.")
seed = c[3].number_input("Seed", 0, 2**31 - 1, 0, key="train_seed")
with st.expander("Preset configuration"):
    with common.engine_errors(f"training preset {preset}"):
        st.json(load_config(preset).to_dict(), expanded=False)


def _start(preset: str, name: str, steps: int, seed: int) -> dict:
    """Write the run's config under runs/<name>/ and start ``engine.rl.train.main`` on it in a new process."""
    cfg = load_config(preset)
    steps = int(steps)
    cfg = replace(cfg, name=name, total_timesteps=steps, seed=int(seed), progress_bar=False,
                  runs_dir=str(RUNS), eval_freq=min(cfg.eval_freq, max(steps // 5, 1)),
                  checkpoint_freq=max(cfg.checkpoint_freq, steps))
    run_dir = RUNS / name
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg_path = run_dir / "app_config.json"
    cfg_path.write_text(json.dumps(cfg.to_dict(), indent=2))
    log_path = run_dir / "app.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; from engine.rl.train import main; raise SystemExit(main(sys.argv[1:]))",
             "--config", str(cfg_path), "--models-dir", str(common.MODELS_DIR)],
            cwd=common.REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return {"name": name, "proc": proc, "log": log_path, "run_dir": run_dir, "total": steps, "t0": time.time()}


job = st.session_state.get(_JOB)
running = job is not None and job["proc"].poll() is None
b1, b2 = st.columns(2)
if b1.button("Start training", type="primary", disabled=running, key="train_start", width="stretch"):
    if not MODEL_NAME.fullmatch(name):  # the name becomes a file name under models/ and runs/: never a path
        st.error("A model name is 1 to 64 letters, digits, '-' or '_', starting with a letter or digit.")
    elif (common.MODELS_DIR / f"{name}.json").exists():
        st.error(f"models/{as_text(name)}.json already exists; choose another model name.")
    else:
        job = common.engine_call(_start, preset, name, steps, seed, what="training")
        if job is not None:
            st.session_state[_JOB] = job
            running = True
if b2.button("Stop", disabled=not running, key="train_stop", width="stretch"):
    job["proc"].terminate()  # only the process this session started
    job["proc"].wait(timeout=30)
    running = False


def live() -> None:
    """Progress, curves and outcome of this session's run; refreshed every 2 s while it runs."""
    job = st.session_state.get(_JOB)
    if job is None:
        st.info("No training started in this session yet.")
        return
    code = job["proc"].poll()
    curves = charts.training_curves(job["run_dir"] / "tb")
    done_steps = int(curves["step"].max()) if len(curves) else 0
    elapsed = time.time() - job["t0"]
    if code is None:
        st.progress(min(done_steps / job["total"], 1.0),
                    text=f"training {job['name']}: {done_steps:,} / {job['total']:,} steps logged, {elapsed:.0f} s")
    elif code == 0:
        st.progress(1.0, text=f"{job['name']} finished in {elapsed:.0f} s")
        st.success(f"Saved as `rl:{job['name']}`: choose it on the Compare page.")
    else:
        tail = Path(job["log"]).read_text(errors="replace").strip().splitlines()[-5:]
        st.error(f"Training stopped (exit code {code}). Last lines of {job['log'].name}:\n\n" +
                 "\n".join(f"    {line}" for line in tail))
    if len(curves):
        common.plot(charts.training_figure(curves), "train_curves")
    elif code is None:
        st.caption("Waiting for the first logged rollout (the first curves appear after one PPO rollout)…")
    if code is not None and st.session_state.get("_train_reran") != job["name"]:
        st.session_state["_train_reran"] = job["name"]
        st.rerun()  # once, so the buttons above reflect the end of the run


st.fragment(live, run_every=2.0 if running else None)()
