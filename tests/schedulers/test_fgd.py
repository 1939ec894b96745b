"""Hand-worked checks of fragmentation gradient descent (``fgd``)."""

from __future__ import annotations

import pytest

from engine import Job
from engine.schedulers.fgd import FgdPlacement
from engine.schedulers.placement import best_fit, first_fit


def _fgd(state):
    place = FgdPlacement()
    place.reset(state)
    return place


def test_fgd_keeps_room_for_the_popular_shape_where_best_fit_does_not(staged):
    # GPU 0 runs a 0.4 job (0.6 free), GPU 1 a 0.5 job (0.5 free); most submitted jobs ask for 0.5.
    jobs = [Job(0, 0.0, 100.0, gpu_fraction=0.4), Job(1, 0.0, 100.0, gpu_fraction=0.5)]
    jobs += [Job(i, 0.0, 100.0, gpu_fraction=0.5) for i in range(2, 6)]
    jobs += [Job(6, 0.0, 100.0, gpu_fraction=0.1)]
    state = staged("1x2:generic", jobs, {0: (0,), 1: (1,)})
    small = state.jobs[6]
    assert best_fit(state, small) == (1,)  # leaves 0.4 on GPU 1: useless to the 0.5 jobs
    assert first_fit(state, small) == (0,)
    # On GPU 0 the 0.1 job leaves 0.5 free, still usable by a 0.5 job: fragmentation does not grow.
    assert _fgd(state)(state, small) == (0,)


def test_fgd_packs_fractional_jobs_to_keep_whole_gpus_free(run):
    # Half the workload wants whole GPUs, so a 0.25 job should join the partly used GPU, not open a new one.
    jobs = [
        Job(0, 0.0, 100.0, gpu_fraction=0.5),
        Job(1, 0.0, 100.0, gpus=1),
        Job(2, 1.0, 100.0, gpu_fraction=0.25),
        Job(3, 2.0, 100.0, gpus=2),
    ]
    least = run("1x4:generic", jobs, "least-loaded")
    fgd = run("1x4:generic", jobs, "fgd")
    assert fgd.gpu_ids[:3] == ((0,), (1,), (0,))
    # The 2-GPU job still finds two idle GPUs at t=2 under fgd; least-loaded spread the 0.25 job onto GPU 2.
    assert fgd.gpu_ids[3] == (2, 3) and fgd.first_start_s[3] == 2.0
    assert least.gpu_ids[2] == (2,)
    assert least.first_start_s[3] == pytest.approx(100.0)


def test_fgd_chooses_the_node_where_whole_gpu_jobs_fragment_least(staged):
    # Node 0 (GPUs 0-1) has one GPU shared by a 0.5 job; node 1 (GPUs 2-3) is idle. The workload is
    # mostly 2-GPU jobs, so a 1-GPU job belongs on node 0: node 1 must stay able to host a 2-GPU job.
    jobs = [Job(0, 0.0, 100.0, gpu_fraction=0.5), Job(1, 0.0, 100.0)]
    jobs += [Job(i, 0.0, 100.0, gpus=2) for i in range(2, 6)]
    state = staged("2x2:generic", jobs, {0: (0,)})
    assert _fgd(state)(state, state.jobs[1]) == (1,)


def test_fgd_spreads_a_job_that_fits_on_no_single_node(run):
    r = run("2x2:generic", [Job(0, 0.0, 10.0, gpus=3)], "fgd")
    assert r.gpu_ids[0] == (0, 1, 2) and r.first_start_s[0] == 0


def test_fgd_ignores_jobs_not_yet_submitted(staged):
    jobs = [Job(0, 0.0, 10.0, gpu_fraction=0.5), Job(1, 50.0, 10.0, gpus=2)]
    state = staged("1x2:generic", jobs, {})
    place = _fgd(state)
    place(state, state.jobs[0])
    assert place._counts == {state.job_shape[0]: 1}


def test_sjf_fgd_combination_resolves(run):
    r = run("1x2:generic", [Job(0, 0.0, 10.0, gpu_fraction=0.5), Job(1, 0.0, 5.0, gpu_fraction=0.5)], "sjf+fgd")
    assert r.first_start_s.tolist() == [0.0, 0.0] and r.gpu_ids[0] == r.gpu_ids[1]
