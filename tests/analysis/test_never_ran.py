"""Never-ran jobs: known before a run exactly as a run reports them, and worded once for every front end."""

from __future__ import annotations

import pytest

from engine import Job, make_scheduler, simulate
from engine.analysis import never_ran
from engine.sim.cluster import parse_cluster
from engine.traces.generator import generate


def test_an_empty_report_when_every_job_fits():
    cluster = parse_cluster("2x4:V100-32")
    report = never_ran.before_run(cluster, generate(cluster, 40, load=0.8, seed=1))
    assert report.count == 0 and report.sentence() == "" and report.widest_job == -1


@pytest.mark.parametrize("scheduler", ["fifo", "easy-backfill", "tiresias"])
def test_before_a_run_equals_what_the_run_reports(scheduler):
    cluster = parse_cluster("1x4:T4,1x2:V100-32")
    jobs = [
        Job(0, 0.0, 50.0, gpus=2),
        Job(1, 1.0, 50.0, gpus=6),
        Job(2, 2.0, 50.0, gpus=1, vram_gib=60.0),
        Job(3, 3.0, 50.0, gpus=4, allowed_types=("H100-80",)),
        Job(4, 4.0, 50.0, gpus=16),
        Job(5, 5.0, 9.0),
    ]
    before = never_ran.before_run(cluster, jobs)
    after = never_ran.of_result(simulate(cluster, jobs, make_scheduler(scheduler)))
    assert before == after
    assert (before.count, before.widest_job, before.widest_gpus) == (4, 4, 16)
    assert before.widest_reason == "needs 16 GPUs of one type; the most any allowed type has is 4 (T4)"
    assert dict(before.by_reason)[before.widest_reason] == 1
    assert before.sentence().startswith("4 of 6 jobs (66.7 %) can never run on this cluster: the widest (job 4)")
    data = before.to_dict()
    assert data["never_ran"] == 4 and sum(r["jobs"] for r in data["by_reason"]) == 4


def test_the_sentence_names_the_gpus_needed_and_what_the_cluster_has():
    cluster = parse_cluster("2x8:A100-80")
    jobs = [Job(0, 0.0, 10.0, gpus=32), Job(1, 1.0, 10.0, gpus=24), Job(2, 2.0, 10.0, gpus=8)]
    assert never_ran.before_run(cluster, jobs).sentence() == (
        "2 of 3 jobs (66.7 %) can never run on this cluster: the widest (job 0) needs 32 GPUs "
        "of one type; the most any allowed type has is 16 (A100-80). Wait, JCT and utilisation count only the "
        "jobs that ran."
    )
