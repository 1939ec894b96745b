"""Learn: how each scheduler and trained agent works (with a worked example run live) and what each metric means."""

import pandas as pd
import streamlit as st

from app_pages.lib import common
from engine import SCHEDULERS, make_scheduler, simulate
from engine.analysis.metrics import ALL_METRICS, compare
from engine.analysis.scenario import worked_example
from engine.units import plural
from engine.viz import tables
from engine.viz.timeline import timeline_figure

#: The worked example's key metrics.
EXAMPLE_METRICS = ["mean_wait_s", "max_wait_s", "mean_jct_s", "makespan_s", "utilization", "jain_user_wait"]

st.title("Learn")
st.markdown(
    "Every scheduler answers the same question at every event (a job arrives or ends): *which waiting "
    "jobs start now, and on which GPUs?* The simulator then advances time to the next event."
)

st.subheader("The schedulers")
# st.table wraps long text in its cells (a dataframe cuts it off at the column's width).
st.table(
    pd.DataFrame(
        [
            {
                "scheduler": s.name,
                "how it works": s.summary,
                "preempts": "yes" if s.preemptive else "no",
                "reads true durations": "yes" if s.oracle else "no",
                "resizes elastic jobs": "yes" if s.resizes else "no",
            }
            for s in SCHEDULERS.values()
        ]
    ).set_index("scheduler")
)

agents = common.trained_agents()
st.subheader("Trained agents (reinforcement learning)")
st.markdown(
    "A trained agent is a small neural network that picks which waiting job starts next. It was trained "
    "by trial and error on simulated workloads (reinforcement learning: a reward for short waits), then "
    "tested against the best hand-written scheduler on workloads it had not seen. Each model card "
    "(models/NAME.md) says where it was trained and how it did."
)
if agents:
    st.table(
        pd.DataFrame(
            [
                {
                    "agent": name,
                    "what it learned": common.agent_description(name),
                    "against the hand-written schedulers": getattr(common.agent_verdict(name), "line", "–"),
                }
                for name in agents
            ]
        ).set_index("agent")
    )
else:
    st.info("No trained agents here: the RL plug-in is not installed or models/ holds no model cards.")

st.subheader("A worked example")
cluster, jobs = worked_example()
st.markdown(
    f"A cluster of {plural(cluster.n_nodes, 'node')} × {plural(cluster.layout.node_gpus[0], 'GPU')} and "
    f"{plural(len(jobs), 'job')} "
    "from two users. Pick a scheduler or a trained agent to run it live next to FIFO."
)
st.dataframe(tables.jobs_table(jobs), hide_index=True, width="stretch", key="example_jobs")
names = list(SCHEDULERS) + agents
pick = st.selectbox(
    "Scheduler", names, index=names.index("best-fit") if "best-fit" in names else 0, key="learn_scheduler"
)
st.info(SCHEDULERS[pick].summary if pick in SCHEDULERS else common.agent_description(pick))
chosen = ["fifo", pick] if pick != "fifo" else ["fifo"]
with common.engine_errors(f"the worked example under {pick}"):
    results = {name: simulate(cluster, jobs, make_scheduler(name)) for name in chosen}
common.quiet_animation_interrupts()
common.plot(timeline_figure(results, animate=True, frames=60), "example_timeline")
st.dataframe(
    tables.metrics_table(compare(results), EXAMPLE_METRICS), hide_index=True, width="stretch", key="example_kpis"
)

st.subheader("What the metrics mean")
st.table(
    pd.DataFrame(
        [
            {
                "metric": m.label,
                "key": k,
                "unit": m.unit,
                "better": {"lower": "lower ↓", "higher": "higher ↑"}.get(m.better, "—"),
                "definition": m.doc,
            }
            for k, m in ALL_METRICS.items()
        ]
    ).set_index("metric")
)
st.caption(
    "Formulas in full: engine/analysis/metrics.py. Wait counts all time queued; JCT = end − submit; bounded "
    "slowdown = max(1, JCT / max(run time, 10 s)). GPU utilisation also rises when jobs run longer on slower "
    "GPUs, so it is better only next to the waits. Compare shows the energy, reliability, deadline and elastic "
    "rows only when the scenario has them: an energy model, a failure model, jobs with deadlines, elastic jobs."
)
