"""The engine from Python, top to bottom: build a cluster, draw a workload, run schedulers, read the metrics.

.venv/bin/python examples/api_tour.py
"""

from engine import make_scheduler, parse_cluster, simulate
from engine.analysis.metrics import compare, job_frame, summarize
from engine.plugins import load_plugin
from engine.traces.generator import generate

# A cluster: four 8-GPU A100 nodes and two 4-GPU V100 nodes (shorthand; JSON files describe racks and speeds).
cluster = parse_cluster("4x8:A100-80,2x4:V100-32")
print(f"cluster: {cluster.to_shorthand()}, {cluster.n_gpus} GPUs")

# A workload: 500 jobs arriving at 120 % offered load (more work than the cluster can do); the same seed always draws the same jobs.
jobs = generate(cluster, 500, load=1.2, seed=7)
print(f"workload: {len(jobs)} jobs over {jobs[-1].submit_s / 3600:.1f} h")

# Run three built-in schedulers and one plug-in on the same jobs.
load_plugin("examples/widest_first.py")
names = ["fifo", "easy-backfill", "tiresias", "widest-first"]
results = {name: simulate(cluster, jobs, make_scheduler(name), seed=0) for name in names}

# One row per metric, one column per scheduler.
table = compare({name: summarize(result) for name, result in results.items()})
print(table.loc[["completed", "mean_wait_s", "p95_wait_s", "utilization"]].round(3).to_string())

# Per-job detail: the five longest waits under fifo.
frame = job_frame(results["fifo"])
print(frame.nlargest(5, "wait_s")[["job_id", "user", "gpus", "wait_s"]].to_string(index=False))
