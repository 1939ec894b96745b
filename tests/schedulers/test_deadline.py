"""Hand-worked scenarios for ``edf`` (earliest deadline first) and ``least-slack`` (least slack first): one GPU
busy until t = 100 while jobs queue behind it, so the order they start in is the ordering's alone."""

from __future__ import annotations

import pytest

from engine import Job
from engine.analysis.metrics import summarize
from engine.sim.options import AdmissionModel, RunOptions

ONE = "1x1:V100-32"  # V100 speed 1: a job's estimate is its run time there
BUSY = Job(0, 0.0, 100.0)  # holds the only GPU until t = 100


def test_edf_starts_the_nearest_deadline_first_and_jobs_without_one_last(run):
    jobs = [
        BUSY,
        Job(1, 1.0, 50.0),  # no deadline
        Job(2, 2.0, 50.0, deadline_s=500.0),
        Job(3, 3.0, 50.0, deadline_s=300.0),
        Job(4, 4.0, 50.0, deadline_s=300.0),  # ties with job 3: arrival order
    ]
    edf = run(ONE, jobs, "edf")
    assert edf.first_start_s.tolist() == [0.0, 250.0, 200.0, 100.0, 150.0]
    assert run(ONE, jobs, "fifo").first_start_s.tolist() == [0.0, 100.0, 150.0, 200.0, 250.0]
    # fifo: job 3 ends at 250 (met), job 4 at 300 (met, its deadline is inclusive), job 2 at 200 (met)
    assert summarize(edf).deadlines.deadline_ratio == 1.0


def test_least_slack_starts_the_job_that_can_wait_least(run):
    # Slack at t = 100: job 1: 400 - 100 - 300 = 0; job 2: 300 - 100 - 50 = 150. EDF takes job 2 (deadline 300)
    # first, least-slack job 1 (no slack left); each misses the other job's deadline on one GPU.
    jobs = [BUSY, Job(1, 1.0, 300.0, deadline_s=400.0), Job(2, 2.0, 50.0, deadline_s=300.0)]
    assert run(ONE, jobs, "least-slack").first_start_s.tolist() == [0.0, 100.0, 400.0]
    assert run(ONE, jobs, "edf").first_start_s.tolist() == [0.0, 150.0, 100.0]
    # The slack is computed from the user's estimate, never the true duration: job 1 says it needs 30 s.
    told = [BUSY, Job(1, 1.0, 300.0, estimate_s=30.0, deadline_s=400.0), jobs[2]]
    assert run(ONE, told, "least-slack").first_start_s.tolist() == [0.0, 150.0, 100.0]


def test_least_slack_counts_the_work_at_the_jobs_fastest_gpu(run):
    # Both may run on the A100 only, which trains 2.4x as fast as a V100 (engine/sim/cluster.py). Keys
    # (deadline - estimate / best speed): job 1: 400 - 480 / 2.4 = 200, job 2: 300 - 380 / 2.4 = 141.7, so job 2
    # goes first. At V100 speed both keys would be -80 and arrival order would put job 1 first.
    cluster = "1x1:A100-80,1x1:V100-32"
    busy = [Job(0, 0.0, 240.0, job_type="training", allowed_types=frozenset({"A100-80"}))]
    one = Job(1, 1.0, 480.0, job_type="training", deadline_s=400.0, allowed_types=frozenset({"A100-80"}))
    two = Job(2, 2.0, 380.0, job_type="training", deadline_s=300.0, allowed_types=frozenset({"A100-80"}))
    r = run(cluster, [*busy, one, two], "least-slack")
    assert r.first_start_s.tolist() == [0.0, pytest.approx(100.0 + 380 / 2.4), 100.0]


def test_edf_with_admission_declines_the_hopeless_and_meets_the_rest(run):
    jobs = [BUSY, Job(1, 1.0, 50.0, deadline_s=20.0), Job(2, 2.0, 50.0, deadline_s=160.0)]
    options = RunOptions(admission=AdmissionModel("feasible"))
    r = run(ONE, jobs, "edf", options=options)
    s = summarize(r).deadlines
    assert s.declined == 1 and r.first_start_s.tolist()[2] == 100.0 and s.deadline_ratio == pytest.approx(1 / 2)
