"""Hand-worked scenarios for ``cost-aware`` (the ``cheapest-work`` placement): the GPU type where a job's work is
cheapest per dollar, best-fit inside it, and a dearer type rather than a wait when the cheap one is full."""

from __future__ import annotations

import pytest

from engine import Job
from engine.analysis.metrics import summarize
from engine.schedulers.cost import cost_per_work
from engine.sim.cluster import parse_cluster
from engine.sim.options import EnergyModel


def test_cost_per_work_is_price_over_the_speed_the_job_type_gets():
    cluster = parse_cluster("1x1:V100-32,1x1:A100-80")
    assert cost_per_work(cluster, "training", "A100-80") == pytest.approx(3.93 / 2.4)
    assert cost_per_work(cluster, "interactive", "A100-80") == pytest.approx(3.93 / 2.4**0.5)
    assert cost_per_work(cluster, "interactive", "V100-32") == pytest.approx(2.48)
    unpriced = parse_cluster(
        {
            "groups": [{"gpu_type": "X", "nodes": 1, "gpus_per_node": 1}],
            "gpu_types": [{"name": "X", "vram_gib": 16, "speed": 1}],
        }
    )
    assert cost_per_work(unpriced, "training", "X") == float("inf")


def test_the_job_type_decides_the_cheaper_gpu(run):
    # V100 (GPU 0): 2.48 $/h at speed 1. A100 (GPU 1): 3.93 $/h at speed 2.4 for training (1.64 $ per V100-hour of
    # work) but only 2.4 ** 0.5 = 1.55 for interactive work (2.54 $): training goes to the A100, interactive work
    # to the V100; first-fit takes GPU 0 for whichever comes first.
    jobs = [Job(0, 0.0, 240.0, job_type="interactive"), Job(1, 0.0, 240.0, job_type="training")]
    cheap = run("1x1:V100-32,1x1:A100-80", jobs, "cost-aware")
    assert cheap.gpu_ids == ((0,), (1,)) and cheap.end_s.tolist() == pytest.approx([240.0, 100.0])
    swapped = [Job(0, 0.0, 240.0, job_type="training"), Job(1, 0.0, 240.0, job_type="interactive")]
    assert run("1x1:V100-32,1x1:A100-80", swapped, "cost-aware").gpu_ids == ((1,), (0,))
    assert run("1x1:V100-32,1x1:A100-80", swapped, "first-fit").gpu_ids == ((0,), (1,))


def test_a_full_cheap_type_sends_the_next_job_to_a_dearer_one_and_the_bill_is_lower(run):
    # T4 work costs 0.35 / 0.45 = 0.78 $ per V100-hour of training, A100 work 1.64 $: the first two jobs take the
    # T4s (the A100 node comes first in the cluster, so first-fit takes it), the third the A100 rather than wait.
    cluster = "1x2:A100-80,1x2:T4"
    jobs = [Job(i, float(i), 90.0, job_type="training") for i in range(3)]
    cheap, first = run(cluster, jobs, "cost-aware"), run(cluster, jobs, "first-fit")
    assert cheap.gpu_ids == ((2,), (3,), (0,)) and cheap.first_start_s.tolist() == [0.0, 1.0, 2.0]
    assert first.gpu_ids == ((0,), (1,), (2,))
    assert cheap.end_s.tolist() == pytest.approx([200.0, 201.0, 2.0 + 90 / 2.4])
    model = EnergyModel(price_list="catalog")
    assert summarize(cheap, energy=model).energy.cost_usd == pytest.approx((2 * 200.0 * 0.35 + 37.5 * 3.93) / 3600)
    assert summarize(cheap, energy=model).energy.cost_usd < summarize(first, energy=model).energy.cost_usd
