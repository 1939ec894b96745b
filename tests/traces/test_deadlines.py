"""Deadline laws: the sources' slack factors, seeded, a best-effort share, and workloads unchanged without them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.sim.job import Job
from engine.traces import load_trace, write_csv
from engine.traces.deadlines import draw_deadlines, with_deadlines
from engine.traces.generator import generate


def _factors(jobs):
    return np.array([(j.deadline_s - j.submit_s) / j.duration_s for j in jobs if j.has_deadline])


def test_no_law_draws_nothing_and_leaves_the_workload_as_it_was():
    plain = generate("2x8:A100-80", 300, seed=4)
    assert generate("2x8:A100-80", 300, seed=4, deadlines="none", best_effort=0.5) == plain
    assert not any(j.has_deadline for j in plain)
    timed = generate("2x8:A100-80", 300, seed=4, deadlines="gavel")
    assert [(j.submit_s, j.duration_s, j.gpus, j.user) for j in timed] == [
        (j.submit_s, j.duration_s, j.gpus, j.user) for j in plain
    ]  # deadlines are drawn last


def test_elasticflow_factors_are_uniform_between_half_and_one_and_a_half():
    factors = _factors(generate("2x8:A100-80", 4000, seed=1, deadlines="elasticflow"))
    assert len(factors) == 4000 and 0.5 <= factors.min() and factors.max() <= 1.5
    assert factors.mean() == pytest.approx(1.0, abs=0.02)


def test_gavel_factors_are_a_third_each_of_1_2_2_and_10():
    factors = _factors(generate("2x8:A100-80", 3000, seed=2, deadlines="gavel"))
    values, counts = np.unique(np.round(factors, 9), return_counts=True)
    assert values.tolist() == [1.2, 2.0, 10.0]
    assert all(abs(c / 3000 - 1 / 3) < 0.03 for c in counts)


def test_best_effort_share_gets_no_deadline_and_the_seed_fixes_everything(tmp_path):
    jobs = generate("2x8:A100-80", 2000, seed=3, deadlines="elasticflow", best_effort=0.25)
    share = sum(not j.has_deadline for j in jobs) / len(jobs)
    assert share == pytest.approx(0.25, abs=0.03)
    assert generate("2x8:A100-80", 2000, seed=3, deadlines="elasticflow", best_effort=0.25) == jobs
    assert load_trace(write_csv(jobs, tmp_path / "d.csv"), "csv").jobs == jobs


def test_with_deadlines_sets_and_clears_them_on_any_workload():
    jobs = (Job(0, 0.0, 100.0), Job(1, 10.0, 50.0, gpus=2, name="b"))
    timed = with_deadlines(jobs, "gavel", seed=5)
    assert all(j.has_deadline for j in timed) and timed[1].name == "b" and timed[1].gpus == 2
    assert with_deadlines(timed, "none") == jobs


def test_with_deadlines_keeps_an_elastic_jobs_range_and_curve():
    # Found rereading the change: it rebuilt each Job from its fields up to deadline_s, dropping the elastic ones.
    jobs = (Job(0, 0.0, 100.0, gpus=2, min_gpus=1, max_gpus=8, scaling="linear"),)
    (timed,) = with_deadlines(jobs, "gavel", seed=5)
    assert (timed.min_gpus, timed.max_gpus, timed.scaling) == (1, 8, "linear") and timed.has_deadline


def test_a_deadline_stays_after_its_submit_time_when_the_slack_rounds_away():
    due = draw_deadlines("elasticflow", np.array([1e12]), np.array([1e-6]), 0.0, np.random.default_rng(0))
    assert due[0] > 1e12 and math.isfinite(due[0])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"deadlines": "hpe"}, r"^deadlines 'hpe': expected one of none, elasticflow, gavel$"),
        ({"deadlines": "gavel", "best_effort": 1.5}, r"^best_effort must be a share in \[0, 1\], got 1.5$"),
    ],
)
def test_bad_laws_and_shares_name_the_option(kwargs, match):
    with pytest.raises(ValueError, match=match):
        generate("2x8:A100-80", 10, **kwargs)
