"""The admission stage: off, nothing changes (every scheduler, bit for bit); ``feasible`` declines exactly the jobs
that could not meet their deadline even started at once on their fastest GPUs, and records why."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine import Job, RunOptions, make_scheduler, parse_cluster, simulate
from engine.schedulers import scheduler_names
from engine.sim.options import AdmissionModel, OptionsError
from engine.sim.simulator import COMPLETED, DECLINED
from engine.traces.deadlines import with_deadlines
from engine.traces.generator import generate
from tests.sim.test_reference_hashes import result_hash

FEASIBLE = RunOptions(admission=AdmissionModel("feasible"))
CLUSTER = parse_cluster("2x4:A100-80,1x4:V100-32")
JOBS = generate(CLUSTER, 60, load=1.2, seed=3)


@pytest.mark.parametrize("name", scheduler_names())
def test_every_scheduler_is_bit_identical_without_deadlines_or_without_admission(name):
    plain = simulate(CLUSTER, JOBS, make_scheduler(name), seed=1)
    timed = with_deadlines(JOBS, "elasticflow", seed=2)
    assert result_hash(simulate(CLUSTER, timed, make_scheduler(name), seed=1)) == result_hash(plain)
    admitted = simulate(CLUSTER, JOBS, make_scheduler(name), seed=1, options=FEASIBLE)  # no deadline: all admitted
    assert result_hash(admitted) == result_hash(plain) and not admitted.declined_reasons


def test_feasible_declines_only_jobs_that_cannot_finish_in_time_and_says_why():
    cluster = parse_cluster("1x2:A100-80")
    speed = cluster.speed("batch", "A100-80")
    jobs = [
        Job(0, 0.0, 100.0, deadline_s=100.0 / speed + 1.0),  # just makes it on its fastest GPU
        Job(1, 10.0, 100.0, deadline_s=10.0 + 100.0 / speed - 1.0),  # cannot
        Job(2, 20.0, 100.0),
    ]  # best effort: always admitted
    r = simulate(cluster, jobs, make_scheduler("fifo"), options=FEASIBLE)
    assert r.status.tolist() == [COMPLETED, DECLINED, COMPLETED]
    assert list(r.declined_reasons) == [1] and r.declined_reasons[1].startswith("cannot meet its deadline at")
    assert math.isnan(r.end_s[1]) and r.run_s[1] == 0 and r.gpu_ids[1] == () and not r.unschedulable_reasons
    accepted = simulate(cluster, jobs, make_scheduler("fifo"))
    assert accepted.status.tolist() == [COMPLETED] * 3 and not accepted.declined_reasons


def test_a_job_that_never_fits_stays_unschedulable_not_declined():
    jobs = [Job(0, 0.0, 100.0, gpus=64, deadline_s=1.0), Job(1, 0.0, 100.0, deadline_s=1.0)]
    r = simulate(CLUSTER, jobs, make_scheduler("fifo"), options=FEASIBLE)
    assert r.status.tolist() == [1, DECLINED] and list(r.unschedulable_reasons) == [0]
    assert list(r.declined_reasons) == [1]


def test_declined_jobs_on_a_generated_workload_never_run():
    jobs = generate(CLUSTER, 200, load=1.2, seed=4, deadlines="elasticflow")
    r = simulate(CLUSTER, jobs, make_scheduler("fifo"), options=FEASIBLE)
    declined = r.status == DECLINED
    assert 0 < declined.sum() < len(jobs)
    assert np.isnan(r.end_s[declined]).all() and (r.run_s[declined] == 0).all()
    assert set(r.declined_reasons) == set(np.flatnonzero(declined).tolist())


def test_an_unknown_policy_names_the_key():
    with pytest.raises(
        OptionsError,
        match=r"^options.admission.policy must be one of accept-all, feasible, "
        r"got 'edf'$",
    ):
        RunOptions.from_dict({"admission": {"policy": "edf"}})
    with pytest.raises(OptionsError, match=r"^options.admission: unknown key"):
        RunOptions.from_dict({"admission": {"rule": "feasible"}})
