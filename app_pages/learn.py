"""Learn: how each scheduler works (with a worked example run live) and what each metric means."""

import pandas as pd
import streamlit as st

from app_pages.lib import common
from engine import SCHEDULERS, make_scheduler, simulate
from engine.analysis.metrics import METRICS, compare
from engine.analysis.scenario import worked_example
from engine.viz.timeline import timeline_figure
from engine.viz.workload import jobs_frame

st.title("Learn")
st.markdown("Every scheduler answers the same question at every event (a job arrives or ends): *which waiting "
            "jobs start now, and on which GPUs?* The simulator then advances time to the next event.")

st.subheader("The schedulers")
st.dataframe(pd.DataFrame([{"scheduler": s.name, "how it works": s.summary, "preempts": s.preemptive,
                            "reads true durations": s.oracle} for s in SCHEDULERS.values()]),
             hide_index=True, width="stretch", key="scheduler_table")

st.subheader("A worked example")
cluster, jobs = worked_example()
st.markdown(f"A cluster of {cluster.n_nodes} nodes × {cluster.layout.node_gpus[0]} GPUs and {len(jobs)} jobs "
            "from two users. Pick a scheduler to run it live next to FIFO.")
st.dataframe(jobs_frame(jobs).drop(columns=["gpu_s"]), hide_index=True, width="stretch", key="example_jobs")
names = list(SCHEDULERS)
pick = st.selectbox("Scheduler", names, index=names.index("best-fit") if "best-fit" in names else 0,
                    key="learn_scheduler")
st.info(SCHEDULERS[pick].summary)
chosen = ["fifo", pick] if pick != "fifo" else ["fifo"]
with common.engine_errors(f"the worked example under {pick}"):
    results = {name: simulate(cluster, jobs, make_scheduler(name)) for name in chosen}
common.plot(timeline_figure(results, animate=True, frames=60), "example_timeline")
table = compare(results).loc[["mean_wait_s", "max_wait_s", "mean_jct_s", "makespan_s", "utilization",
                              "jain_user_wait"]]
table.index = [f"{METRICS[k].label} ({METRICS[k].unit})" for k in table.index]
st.dataframe(table.style.format("{:.3g}"), width="stretch", key="example_kpis")

st.subheader("What the metrics mean")
st.dataframe(pd.DataFrame([{"metric": m.label, "key": k, "unit": m.unit,
                            "better": {"lower": "lower ↓", "higher": "higher ↑"}.get(m.better, "—"),
                            "definition": m.doc} for k, m in METRICS.items()]),
             hide_index=True, width="stretch", key="metric_table")
st.caption("Formulas in full: engine/analysis/metrics.py. Wait counts all time queued; JCT = end − submit; bounded slowdown "
           "= max(1, JCT / max(run time, 10 s)).")
