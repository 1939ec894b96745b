"""Hand-worked scenarios for the simple heuristics, and one scenario written out for every scheduler."""

from __future__ import annotations

import pytest

from engine import Job, scheduler_names
from engine.rl.teacher import TEACHERS

# Two nodes of equal speed: node 0 has four 16 GiB GPUs (0-3), node 1 four 80 GiB GPUs (4-7).
MIXED = {
    "groups": [
        {"gpu_type": "SMALL", "nodes": 1, "gpus_per_node": 4},
        {"gpu_type": "BIG", "nodes": 1, "gpus_per_node": 4},
    ],
    "gpu_types": [{"name": "SMALL", "vram_gib": 16, "speed": 1}, {"name": "BIG", "vram_gib": 80, "speed": 1}],
}
MIXED_JOBS = [
    Job(0, 0.0, 100.0),  # fits anywhere
    Job(1, 1.0, 100.0, gpus=4, vram_gib=60.0),  # only the BIG node can take it
    Job(2, 2.0, 10.0),  # fits anywhere
]
PACKED = ((0.0, 1.0, 2.0), ((0,), (4, 5, 6, 7), (1,)))
#: Expected (start times, GPUs) on MIXED_JOBS. Everyone but least-loaded keeps the BIG node free for job 1.
EXPECTED = {
    "fifo": PACKED,
    "first-fit": PACKED,
    "best-fit": PACKED,
    "sjf": PACKED,
    "sjf-oracle": PACKED,
    "easy-backfill": PACKED,
    "tiresias": PACKED,
    "drf": PACKED,
    "fgd": PACKED,
    "topo-pack": PACKED,
    # SMALL and BIG have no price: cost-aware tries them in the cluster's order (tests/schedulers/test_cost.py).
    "cost-aware": PACKED,
    # No job has a deadline: carbon-defer holds none back and places as best-fit (tests/schedulers/test_carbon.py).
    "carbon-defer": PACKED,
    # Without failures reliable-first places as best-fit (tests/schedulers/test_reliable.py).
    "reliable-first": PACKED,
    # No job has a deadline: edf and least-slack walk the queue in arrival order (tests/schedulers/test_deadline.py).
    "edf": PACKED,
    "least-slack": PACKED,
    # Rigid jobs without deadlines: the elastic schedulers start them in arrival order, best-fit
    # (tests/schedulers/test_elastic.py).
    "optimus": PACKED,
    "elasticflow": PACKED,
    # Most free memory first: jobs 0 and 2 go to the BIG GPUs, so job 1 waits until job 0 ends.
    "least-loaded": ((0.0, 100.0, 2.0), ((4,), (4, 5, 6, 7), (5,))),
    # Teachers (tests/schedulers/test_teachers.py): job 0 ties on every key but the type slot, so it takes the
    # first type (SMALL, also the one with less memory); job 1 fits only BIG; job 2 packs next to job 0.
    **{name: PACKED for name in TEACHERS},
}
#: Schedulers whose choice is random by design; tested for seeding below instead.
RANDOMISED = {"random"}


def test_every_registered_scheduler_has_a_written_out_scenario():
    assert set(EXPECTED) | RANDOMISED == set(scheduler_names())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_mixed_cluster_scenario(run, name):
    starts, gpus = EXPECTED[name]
    r = run(MIXED, MIXED_JOBS, name)
    assert tuple(r.first_start_s.tolist()) == starts
    assert r.gpu_ids == gpus


# Two 4-GPU nodes in one rack. Job 2 arrives when node 0 is idle and node 1 half full.
NODE_CHOICE_JOBS = [
    Job(0, 0.0, 10.0, gpus=4),  # node 0 until t=10
    Job(1, 0.0, 100.0, gpus=2),  # node 1, GPUs 4-5
    Job(2, 20.0, 100.0),
    Job(3, 30.0, 100.0, gpus=4, job_type="training"),
]


@pytest.mark.parametrize(
    "name, job2_gpus, job3_gpus, job3_end",
    [
        # First-fit takes node 0 for the 1-GPU job, so the 4-GPU training job must spread: 0.8 of full speed.
        ("first-fit", (0,), (1, 2, 3, 6), 30 + 100 / 0.8),
        # Best-fit (and topo-pack) put it on the fuller node 1 and keep node 0 whole.
        ("best-fit", (6,), (0, 1, 2, 3), 130.0),
        ("topo-pack", (6,), (0, 1, 2, 3), 130.0),
    ],
)
def test_node_choice_decides_whether_a_big_job_must_spread(run, name, job2_gpus, job3_gpus, job3_end):
    r = run("2x4:generic", NODE_CHOICE_JOBS, name)
    assert r.gpu_ids[2] == job2_gpus and r.gpu_ids[3] == job3_gpus
    assert r.first_start_s[3] == 30.0 and r.end_s[3] == pytest.approx(job3_end)
    assert (r.comm_overhead_gpu_s[3] > 0) == (name == "first-fit")


@pytest.mark.parametrize(
    "name, starts",
    [
        ("fifo", [0, 100, 150]),
        ("sjf", [0, 100, 150]),  # misled: job 1 claims 5 s
        ("sjf-oracle", [0, 110, 100]),  # knows job 2 is the shortest
    ],
)
def test_sjf_trusts_estimates_and_the_oracle_does_not(run, name, starts):
    jobs = [Job(0, 0.0, 100.0), Job(1, 1.0, 50.0, estimate_s=5.0), Job(2, 2.0, 10.0)]
    assert run("1x1:generic", jobs, name).first_start_s.tolist() == starts


def test_sjf_runs_short_jobs_first(run):
    jobs = [Job(0, 0.0, 100.0), Job(1, 1.0, 50.0), Job(2, 2.0, 10.0)]
    assert run("1x1:generic", jobs, "sjf").first_start_s.tolist() == [0, 110, 100]
    assert run("1x1:generic", jobs, "fifo").first_start_s.tolist() == [0, 100, 150]


def test_random_placement_is_seeded(run):
    jobs = [Job(0, 0.0, 10.0), Job(1, 0.0, 10.0, gpus=2)]
    chosen = {seed: run("4x2:generic", jobs, "random", seed=seed).gpu_ids for seed in range(12)}
    assert chosen == {seed: run("4x2:generic", jobs, "random", seed=seed).gpu_ids for seed in range(12)}
    assert len({g[0] for g in chosen.values()}) > 1  # different seeds pick different GPUs
    for g in chosen.values():  # the 2-GPU job always stays on one node
        assert g[1][0] // 2 == g[1][1] // 2
