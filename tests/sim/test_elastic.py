"""Elastic jobs in the engine: a job's speed on other GPU counts follows its curve, a Resize is validated and pays
the rescale cost, and runs without elastic jobs (or where nobody resizes) are the runs without them, bit for bit."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine import InvalidDecision, Job, Resize, RunOptions, Start, Wake, make_scheduler, parse_cluster, simulate
from engine.schedulers import scheduler_names
from engine.sim.options import ElasticModel
from engine.traces.generator import generate
from tests.sim.test_reference_hashes import result_hash

CLUSTER = parse_cluster("2x4:generic")  # speed 1: times below are reference seconds


class Script:
    """Plays ``steps``: at its n-th decision point it returns ``steps[n]`` (then nothing)."""

    name = "script"

    def __init__(self, *steps):
        self.steps = list(steps)

    def reset(self, state):
        self.calls = 0

    def decide(self, state):
        self.calls += 1
        return self.steps.pop(0) if self.steps else []


def elastic_job(j=0, duration_s=100.0, gpus=2, **kw):
    return Job(j, 0.0, duration_s, gpus=gpus, min_gpus=1, max_gpus=8, scaling="linear", **kw)


def test_an_elastic_job_started_on_more_gpus_runs_faster_by_its_curve():
    r = simulate(CLUSTER, [elastic_job()], Script([Start(0, (0, 1, 2, 3))]))
    assert r.end_s[0] == 50.0  # 100 s at 2 GPUs, linear curve: twice as fast on 4
    ef = Job(0, 0.0, 100.0, gpus=2, min_gpus=1, max_gpus=8, scaling="resnet50-a100")
    r = simulate(CLUSTER, [ef], Script([Start(0, (0,))]))
    assert r.end_s[0] == pytest.approx(100.0 * 1.81)  # on one GPU: its 2-GPU speed-up is lost


def test_a_resize_pays_the_rescale_cost_and_counts():
    job = elastic_job()
    grow = Script([Start(0, (0, 1)), Wake(40.0)], [Resize(0, (0, 1, 2, 3))])
    r = simulate(CLUSTER, [job], grow)
    # 40 s on 2 GPUs leave 60 s of work; on 4 GPUs (twice as fast) it stalls 30 s, then needs 30 s
    assert r.end_s[0] == pytest.approx(100.0) and r.rescales.tolist() == [1]
    assert r.seg_start_s.tolist() == [0.0, 40.0] and len(r.segment_gpus(1)) == 4
    free = simulate(
        CLUSTER,
        [job],
        Script([Start(0, (0, 1)), Wake(40.0)], [Resize(0, (0, 1, 2, 3))]),
        options=RunOptions(elastic=ElasticModel(rescale_s=0.0)),
    )
    assert free.end_s[0] == pytest.approx(70.0)


@pytest.mark.parametrize(
    ("jobs", "resize", "message"),
    [
        ([Job(0, 0.0, 100.0, gpus=2)], Resize(0, (0, 1, 2)), r"job 0 cannot be resized: it is rigid"),
        ([elastic_job()], Resize(0, tuple(range(9))), r"job 0 runs on 1 to 8 GPUs but was given 9"),
        ([elastic_job()], Resize(0, (0, 1)), r"job 0: a resize to the GPUs it holds changes nothing"),
        ([elastic_job(), Job(1, 0.0, 100.0)], Resize(0, (0, 1, 2)), r"job 0: GPU 2 is not free"),
        ([elastic_job(), elastic_job(1)], Resize(1, (4,)), r"job 1 cannot be resized: it is not running"),
    ],
)
def test_a_bad_resize_is_refused_naming_the_job_and_the_constraint(jobs, resize, message):
    first = [Start(0, (0, 1))] + ([Start(1, (2,))] if len(jobs) > 1 and not jobs[1].elastic else [])
    with pytest.raises(InvalidDecision, match=message):
        simulate(CLUSTER, jobs, Script(first + [resize]))


def test_a_start_outside_the_size_range_is_refused():
    with pytest.raises(InvalidDecision, match=r"job 0 runs on 2 to 4 GPUs but was given 1"):
        simulate(
            CLUSTER, [Job(0, 0.0, 10.0, gpus=2, min_gpus=2, max_gpus=4, scaling="linear")], Script([Start(0, (0,))])
        )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"gpus": 2, "min_gpus": 3}, r"^job 0: needs min_gpus <= gpus <= max_gpus, got 3 <= 2 <= 2$"),
        ({"gpus": 2, "max_gpus": 4}, r"^job 0: an elastic job \(min_gpus < max_gpus\) needs whole GPUs and a scaling"),
        ({"gpus": 2, "max_gpus": 4, "scaling": "gpt9"}, r"^job 0: unknown scaling curve 'gpt9'; expected one of"),
        ({"gpu_fraction": 0.5, "max_gpus": 2, "scaling": "linear"}, r"needs whole GPUs"),
        ({"min_gpus": 0}, r"^job 0: min_gpus must be an integer from 1 to"),
    ],
)
def test_bad_elastic_fields_are_one_line_naming_the_job(fields, message):
    with pytest.raises(ValueError, match=message):
        Job(0, 0.0, 10.0, **fields)


JOBS = generate(CLUSTER, 40, load=1.2, seed=3)
# The same workload with every whole-GPU job elastic (from 1 GPU to twice its size).
ELASTIC = [
    replace(j, min_gpus=1, max_gpus=2 * j.gpus, scaling="resnet50-a100") if not j.fractional else j for j in JOBS
]


@pytest.mark.parametrize("name", scheduler_names())
def test_every_scheduler_is_bit_identical_on_a_workload_without_elastic_jobs(name):
    plain = simulate(CLUSTER, JOBS, make_scheduler(name), seed=1)
    named = [replace(j, scaling="linear") for j in JOBS]  # a curve named, but rigid: nothing changes
    cheap = RunOptions(elastic=ElasticModel(rescale_s=5.0))
    assert result_hash(simulate(CLUSTER, named, make_scheduler(name), seed=1, options=cheap)) == result_hash(plain)
    assert not plain.rescales.any()


@pytest.mark.parametrize("name", [n for n in scheduler_names() if n not in ("optimus", "elasticflow")])
def test_schedulers_that_do_not_resize_run_elastic_jobs_at_their_requested_size(name):
    plain = simulate(CLUSTER, JOBS, make_scheduler(name), seed=1)
    assert result_hash(simulate(CLUSTER, ELASTIC, make_scheduler(name), seed=1)) == result_hash(plain)
    assert sum(j.elastic for j in ELASTIC) > 20  # most jobs elastic
