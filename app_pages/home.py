"""Home: what the playground is, and one-click presets that open Compare ready to run."""

import streamlit as st

from app_pages.lib import common
from engine import SCHEDULERS
from engine.analysis.presets import PRESETS
from engine.analysis.scenario import scenario_from_preset
from engine.units import plural

st.title("GPU scheduling playground")
st.markdown(
    "Build a GPU cluster, bring a workload (generated, or a real trace in any common format), pick "
    "scheduling heuristics and trained agents, and **watch them side by side**: per-GPU timelines you can "
    "play, queue length, utilisation, wait and completion-time distributions, fairness between users."
)
c = st.columns(3)
c[0].markdown("**1 · Cluster**  \nNode groups of any GPU type, racks, or a real cluster's node list.")
c[1].markdown("**2 · Workload**  \nGenerate jobs at a chosen load, or upload a trace (Philly, SWF, Alibaba, …).")
agents = common.trained_agents()
c[2].markdown(
    f"**3 · Compare**  \n{plural(len(SCHEDULERS), 'heuristic')}"
    + (f" and {plural(len(agents), 'trained RL agent')}" if agents else "")
    + ", run on the same jobs."
)

st.subheader("Start from a preset")
st.caption(
    "Each preset is a small lesson: a cluster, a workload and the schedulers that show it. "
    "Choosing one opens the Compare page ready to run."
)
for key, preset in sorted(PRESETS.items()):
    with st.container(border=True):
        left, right = st.columns([4, 1], vertical_alignment="center")
        left.markdown(f"**{preset.title}**  \n{preset.lesson}")
        left.caption(f"Schedulers: {', '.join(preset.schedulers)} · what to look at: {preset.look_at}")
        if right.button("Open in Compare", key=f"preset_{key}", width="stretch"):
            with common.engine_errors(f"preset {key}"):
                common.set_scenario(scenario_from_preset(key))
            st.switch_page("app_pages/compare.py")
if not PRESETS:
    st.info("No scenario presets found in presets/. Set up a cluster and a workload on their pages instead.")
