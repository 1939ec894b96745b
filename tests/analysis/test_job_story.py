"""A job's story, from the run's own records: arrival state, wait, overtaking, never-ran reason."""

from __future__ import annotations

import pytest

from engine import EngineError, Job, make_scheduler, simulate
from engine.analysis.job_story import job_story
from engine.analysis.metrics import summarize
from engine.analysis.scenario import Scenario, ScenarioError, WorkloadSpec
from engine.analysis.seeds import ci_frame, seed_variants
from engine.sim.cluster import parse_cluster
from engine.sim.simulator import FAILED

CLUSTER = parse_cluster("1x4:generic")  # speed 1: run times equal the reference durations
#: Job 0 holds all 4 GPUs for 100 s; job 1 (4 GPUs) must wait for it; under sjf the shorter job 2, submitted
#: later, starts first (at 100 s), so job 1 starts at 105 s; job 3 asks for 8 GPUs and can never run.
JOBS = (
    Job(0, 0.0, 100.0, gpus=4, user="a"),
    Job(1, 10.0, 50.0, gpus=4, user="b"),
    Job(2, 20.0, 5.0, gpus=1, user="c"),
    Job(3, 30.0, 5.0, gpus=8, user="d"),
)


def test_a_job_that_waited_for_gpus_and_was_overtaken():
    story = job_story(simulate(CLUSTER, JOBS, make_scheduler("sjf")), 1)
    assert (story.free_fit_gpus_at_submit, story.fit_gpus, story.queue_at_submit) == (0, 4, 1)
    assert story.wait_s == pytest.approx(95.0) and story.overtaken_by == 1 and story.gpu_type == "generic"
    assert story.sentence() == (
        "Job 1 (b, 4 GPUs) arrived at 10 s, when 0 of the 4 GPUs it may use were free and 1 job(s) were waiting. "
        "It waited 95 s for 4 GPUs of its types to be free at once, then ran on generic (node 0). "
        "1 job(s) submitted after it started before it."
    )


def test_a_job_that_started_at_once_and_one_that_never_ran():
    r = simulate(CLUSTER, JOBS, make_scheduler("fifo"))
    assert "It started at once on generic (node 0)." in job_story(r, 0).sentence()
    never = job_story(r, 3)
    assert never.never_ran and never.sentence() == (
        "Job 3 (d, 8 GPUs) never ran: it needs 8 GPUs of one type; the most any allowed type has is 4 (generic), so no "
        "scheduler can start it on this cluster."
    )
    with pytest.raises(EngineError, match="the run has jobs 0 to 3"):
        job_story(r, 4)


def test_seed_variants_and_the_ci_table():
    sc = Scenario(cluster="1x4:T4", workload=WorkloadSpec(n_jobs=20, seed=7))
    variants = seed_variants(sc, 3)
    assert [v.workload.seed for v in variants] == [7, 8, 9] and variants[0] == sc
    runs = {
        "fifo": [
            summarize(simulate(v.build_cluster(), v.build_jobs(v.build_cluster()), make_scheduler("fifo")))
            for v in variants
        ]
    }
    frame = ci_frame(runs, ["completed", "mean_wait_s"])
    assert frame["metric"].tolist() == ["Completed ↑", "Mean wait ↓"] and frame["fifo"][0] == "20 ± 0"
    with pytest.raises(ScenarioError, match="a trace is a single workload"):
        seed_variants(Scenario(workload=WorkloadSpec(source="trace", trace_sha256="ab" * 32, trace_name="t.csv")), 2)
    with pytest.raises(ScenarioError, match="between 1 and 20"):
        seed_variants(sc, 0)


def test_a_failed_job_ran_and_has_a_wait():
    cluster = parse_cluster("1x1:generic")
    result = simulate(cluster, [Job(0, 0.0, 50.0), Job(1, 0.0, 20.0, failed=True)], make_scheduler("fifo"))
    assert result.status[1] == FAILED
    story = job_story(result, 1)
    assert story.wait_s == 50.0 and story.start_s == 50.0 and story.end_s == 70.0


def test_a_story_names_the_failures_the_job_met_and_a_node_down_is_not_free():
    import numpy as np

    sc = Scenario.from_query(
        {
            "cluster": "2x4:T4",
            "w.n_jobs": "40",
            "o.failures.mtbf_h": "20.0",
            "o.failures.job_failure_rate": "0.3",
            "o.preemption.checkpoint_interval_s": "1800.0",
        }
    )
    cluster = sc.build_cluster()
    result = simulate(cluster, sc.build_jobs(cluster), make_scheduler("fifo"), seed=sc.seed, options=sc.options)
    stopped = int(np.flatnonzero(result.interruptions > 0)[0])
    story = job_story(result, stopped)
    assert story.interruptions == result.interruptions[stopped] and story.failure_lost_gpu_s > 0
    assert f"a node failure stopped it {story.interruptions} time(s), losing " in story.sentence()
    crashed = int(np.flatnonzero((result.status == FAILED) & (result.interruptions == 0))[0])
    assert (
        job_story(result, crashed)
        .sentence()
        .endswith("Failures: its run crashed 1 time(s). It ended failed: its last run crashed with no retry left.")
    )
    # A job that arrived while a node was down: that node's GPUs were not free.
    submits = np.array([j.submit_s for j in result.jobs])
    during = [
        j
        for j in range(result.n_jobs)
        if np.any((result.outage_start_s <= submits[j]) & ~(result.outage_end_s <= submits[j]))
    ]
    assert during and all(job_story(result, j).free_fit_gpus_at_submit <= 4 for j in during)
    assert "Failures" not in job_story(simulate(CLUSTER, JOBS, make_scheduler("sjf")), 1).sentence()
