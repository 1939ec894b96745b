"""Elastic metrics: rescales and GPU-time efficiency, by hand; absent from runs without elastic jobs."""

from __future__ import annotations

import pytest

from engine import Job, Resize, Start, Wake, parse_cluster, simulate
from engine.analysis.metrics import ELASTIC_METRICS, compare, job_frame, summarize
from tests.sim.test_elastic import Script

CLUSTER = parse_cluster("1x4:generic")


def test_rescales_and_gpu_efficiency_by_hand():
    # Job 0 (resnet50-a100, requested 2 GPUs: speed-up 1.81, 100 s) runs 0-60 s on 2 GPUs, then grows to 4 (3.07):
    # 40 s of work left + 30 s x rate 3.07/1.81 of rescale, at rate 3.07/1.81: 40 x 1.81 / 3.07 + 30 s.
    job = Job(0, 0.0, 100.0, gpus=2, min_gpus=1, max_gpus=4, scaling="resnet50-a100")
    rigid = Job(1, 0.0, 50.0)  # not elastic: no efficiency
    plan = Script([Start(0, (0, 1)), Start(1, (3,)), Wake(60.0)], [Resize(0, (0, 1, 2, 3))])
    r = simulate(CLUSTER, [job, rigid], plan)
    tail_s = 40 * 1.81 / 3.07 + 30
    held = 60 * 2 + tail_s * 4
    summary = summarize(r).to_dict()
    assert summary["elastic_jobs"] == 1 and summary["rescales"] == 1
    assert summary["elastic_gpu_efficiency"] == pytest.approx(100 * 1.81 / held)
    frame = job_frame(r)
    assert frame["rescales"].tolist() == [1, 0] and frame["scaling"].tolist() == ["resnet50-a100", ""]
    assert frame["gpu_efficiency"][0] == pytest.approx(100 * 1.81 / held) and frame["gpu_efficiency"].isna()[1]
    assert (frame["min_gpus"].tolist(), frame["max_gpus"].tolist()) == ([1, 1], [4, 1])


def test_on_one_gpu_without_rescale_an_elastic_job_is_fully_efficient():
    job = Job(0, 0.0, 100.0, gpus=1, min_gpus=1, max_gpus=4, scaling="resnet50-a100")
    summary = summarize(simulate(CLUSTER, [job], Script([Start(0, (0,))]))).to_dict()
    assert summary["elastic_gpu_efficiency"] == pytest.approx(1.0) and summary["rescales"] == 0


def test_without_elastic_jobs_no_key_no_column_and_compare_adds_them_when_any_run_has_them():
    plain = simulate(CLUSTER, [Job(0, 0.0, 10.0)], Script([Start(0, (0,))]))
    assert not set(ELASTIC_METRICS) & set(summarize(plain).to_dict())
    assert "rescales" not in job_frame(plain).columns
    job = Job(0, 0.0, 10.0, max_gpus=2, scaling="linear")
    elastic = simulate(CLUSTER, [job], Script([Start(0, (0,))]))
    table = compare({"plain": plain, "elastic": elastic})
    assert table.loc["rescales", "elastic"] == 0 and table["plain"].isna()["rescales"]
