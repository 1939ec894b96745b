"""Hand-worked checks of dominant resource fairness (``drf``)."""

from __future__ import annotations

import pytest

from engine import Job


def test_drf_alternates_users_where_fifo_serves_the_early_user(run):
    # User a floods the queue at t=0; user b arrives at t=1. Two GPUs, every job 100 s.
    jobs = [Job(i, 0.0, 100.0, user="a") for i in range(4)] + [Job(4 + i, 1.0, 100.0, user="b") for i in range(2)]
    fifo = run("1x2:generic", jobs, "fifo")
    drf = run("1x2:generic", jobs, "drf")
    assert fifo.first_start_s.tolist() == [0, 0, 100, 100, 200, 200]
    # At t=100 both users hold nothing: a's oldest job goes first (earlier submit), then b has the lower share.
    assert drf.first_start_s.tolist() == [0, 0, 100, 200, 100, 200]
    assert drf.gpu_ids[2] == (0,) and drf.gpu_ids[4] == (1,)


def test_drf_counts_gpu_memory_as_a_resource(run):
    # On GPU 0, user a holds 0.1 of the GPU but 28 of its 32 GiB; user b holds 0.5 of it and 4 GiB.
    # Dominant shares (2 GPUs, 64 GiB): a = 28/64 = 0.44 (memory), b = 0.5/2 = 0.25 (GPUs).
    jobs = [
        Job(0, 0.0, 100.0, user="a", gpu_fraction=0.1, vram_gib=28.0),
        Job(1, 0.0, 100.0, user="b", gpu_fraction=0.5, vram_gib=4.0),
        Job(2, 1.0, 50.0, user="a"),
        Job(3, 1.0, 50.0, user="b"),
    ]
    fifo = run("1x2:generic", jobs, "fifo")
    drf = run("1x2:generic", jobs, "drf")
    assert fifo.gpu_ids[:2] == drf.gpu_ids[:2] == ((0,), (0,))
    assert fifo.first_start_s[2] == 1.0 and fifo.gpu_ids[2] == (1,)
    # Only GPU 1 is idle at t=1: it goes to b, the user with the smaller dominant share.
    assert drf.first_start_s[3] == 1.0 and drf.gpu_ids[3] == (1,)
    # a's whole-GPU job waits until b's ends at t=51 (jobs 0 and 1 share GPU 0 until t=110).
    assert drf.first_start_s[2] == pytest.approx(51.0) and drf.gpu_ids[2] == (1,)
    assert drf.end_s[0] == pytest.approx(110.0)


def test_drf_skips_a_user_whose_jobs_do_not_fit(run):
    # b's 2-GPU job cannot start while a's job runs; a's next 1-GPU job may use the idle GPU meanwhile.
    jobs = [Job(0, 0.0, 100.0, user="a"), Job(1, 1.0, 10.0, user="b", gpus=2), Job(2, 2.0, 10.0, user="a")]
    r = run("1x2:generic", jobs, "drf")
    assert r.first_start_s.tolist() == [0.0, 100.0, 2.0]
    assert r.preemptions.sum() == 0
