"""ListScheduler shortcuts change nothing: remembering failed shapes across decisions (until a job stops)
and walking by shape give the same schedule as trying every waiting job at every decision point."""

from __future__ import annotations

import numpy as np
import pytest

from engine import Job, make_scheduler, parse_cluster, simulate


def _overloaded(seed: int, n: int = 300) -> list[Job]:
    rng = np.random.default_rng(seed)
    t, jobs = 0.0, []
    for i in range(n):
        t += float(rng.exponential(4.0))
        frac = float(rng.choice([1.0, 1.0, 1.0, 0.25, 0.5]))
        gpus = 1 if frac < 1 else int(rng.choice([1, 2, 4, 8]))
        jobs.append(
            Job(
                i,
                round(t),
                float(rng.integers(20, 400)),
                gpus=gpus,
                gpu_fraction=frac,
                vram_gib=float(rng.choice([0.0, 8.0, 20.0])),
                estimate_s=float(rng.integers(10, 900)),
            )
        )
    return jobs


def _plain(name: str):
    s = make_scheduler(name)
    s._remember = s._skips = False  # try every waiting job of every shape, every time
    return s


@pytest.mark.parametrize("name", ["first-fit", "best-fit", "least-loaded", "sjf+best-fit"])
@pytest.mark.parametrize("seed", range(2))
def test_shortcuts_give_the_plain_schedule(name, seed):
    cluster = parse_cluster("2x4:T4,1x8:A100-80")
    jobs = _overloaded(seed)
    fast, plain = simulate(cluster, jobs, make_scheduler(name)), simulate(cluster, jobs, _plain(name))
    assert make_scheduler(name)._remember  # the shortcut is really on for these rules
    np.testing.assert_array_equal(fast.first_start_s, plain.first_start_s)
    np.testing.assert_array_equal(fast.end_s, plain.end_s)
    assert fast.gpu_ids == plain.gpu_ids
    assert fast.decision_points == plain.decision_points
    assert (fast.first_start_s - [j.submit_s for j in jobs]).max() > 1000  # the queue really grew


def test_random_placement_is_never_shortcut():
    # Its failures draw random numbers, so skipping an attempt would change the seeded stream.
    assert not make_scheduler("random")._remember
