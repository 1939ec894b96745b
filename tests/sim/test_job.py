"""The job record: validation with messages that name the job and the field, and shared type sets."""

from __future__ import annotations

import dataclasses
import math
import pickle

import numpy as np
import pytest

from engine import Job


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"submit_s": -1.0}, "job 7: submit_s must be a finite number >= 0, got -1.0"),
        ({"submit_s": math.nan}, "job 7: submit_s must be a finite number >= 0"),
        ({"duration_s": 0.0}, "job 7: duration_s must be a finite number > 0, got 0.0"),
        ({"duration_s": math.inf}, "job 7: duration_s must be a finite number > 0"),
        ({"gpus": 0}, "job 7: gpus must be an integer >= 1, got 0"),
        ({"gpus": 2.0}, "job 7: gpus must be an integer >= 1, got 2.0"),
        ({"gpu_fraction": 1.5}, "job 7: gpu_fraction must be in (0, 1], got 1.5"),
        ({"gpu_fraction": 0.5, "gpus": 2}, "job 7: a fractional job (gpu_fraction < 1) must ask for 1 GPU"),
        ({"vram_gib": -2.0}, "job 7: vram_gib must be a finite number >= 0, got -2.0"),
        ({"estimate_s": -5.0}, "job 7: estimate_s must be a finite number > 0, got -5.0"),
        ({"submit_s": "soon"}, "job 7: submit_s must be a number, got 'soon'"),
        ({"gpus": np.int64(2)}, "job 7: gpus must be an integer >= 1, got np.int64(2)"),
        ({"priority": 1.5}, "job 7: priority must be an integer, got 1.5"),
        ({"job_id": "seven"}, "job seven: job_id must be an integer, got 'seven'"),
    ],
)
def test_invalid_fields_are_refused_with_the_job_and_field_named(kwargs, message):
    fields = {"job_id": 7, "submit_s": 0.0, "duration_s": 10.0, **kwargs}
    with pytest.raises(ValueError) as info:
        Job(**fields)
    assert str(info.value).startswith(message)


def test_estimate_defaults_to_the_duration():
    assert Job(0, 0.0, 42.0).estimate_s == 42.0


def test_equal_type_sets_are_one_shared_object():
    a, b = Job(0, 0.0, 1.0), Job(1, 0.0, 1.0)
    assert a.allowed_types == frozenset() and a.allowed_types is b.allowed_types
    c = Job(2, 0.0, 1.0, allowed_types=["A100-80", "H100-80"])
    d = Job(3, 0.0, 1.0, allowed_types={"H100-80", "A100-80"})
    assert c.allowed_types == frozenset({"A100-80", "H100-80"}) and c.allowed_types is d.allowed_types
    assert dataclasses.replace(c, job_id=4).allowed_types is c.allowed_types
    assert pickle.loads(pickle.dumps(c)) == c  # value semantics unchanged


def test_numpy_scalars_are_stored_as_python_numbers_and_text_as_str():
    job = Job(np.int64(3), np.float32(2.0), np.int64(5), priority=np.int8(2), user=np.str_("ana"), name=17)
    assert (job.job_id, job.submit_s, job.duration_s, job.priority, job.user, job.name) == (3, 2.0, 5.0, 2, "ana", "17")
    assert [type(v) for v in (job.job_id, job.submit_s, job.duration_s, job.priority)] == [int, float, float, int]


def test_the_record_is_frozen_and_compares_by_value():
    job = Job(1, 0.0, 10.0, gpus=2, allowed_types={"T4"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.gpus = 3  # type: ignore[misc]
    twin = Job(1, 0.0, 10.0, gpus=2, allowed_types=("T4",))
    assert job == twin and hash(job) == hash(twin) and job != dataclasses.replace(job, priority=1)
    assert [f.name for f in dataclasses.fields(job)][:4] == ["job_id", "submit_s", "duration_s", "gpus"]
    assert dataclasses.asdict(job)["allowed_types"] == frozenset({"T4"})


def test_failed_is_a_boolean():
    assert Job(0, 0, 1).failed is False and Job(0, 0, 1, failed=True).failed is True
    assert Job(0, 0, 1, failed=np.True_).failed is True and Job(0, 0, 1, failed=0).failed is False
    with pytest.raises(ValueError, match=r"^job 0: failed must be true or false, got 'yes'$"):
        Job(0, 0, 1, failed="yes")


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"duration_s": 1.7e308}, "duration_s"),
        ({"submit_s": 1e300}, "submit_s"),
        ({"estimate_s": 1e300}, "estimate_s"),
        ({"gpus": 10**7}, "gpus"),
        ({"vram_gib": 1e300}, "vram_gib"),
        ({"priority": 10**400}, "priority"),
    ],
)
def test_numbers_past_their_physical_bound_are_refused(kwargs, field):
    """Issue 32: a duration near 1.7e308 was accepted and its finish time overflowed."""
    fields = {"job_id": 3, "submit_s": 0.0, "duration_s": 10.0, **kwargs}
    with pytest.raises(ValueError, match=f"job 3: {field} must be .*at most"):
        Job(**fields)


def test_deadline_is_absolute_after_submit_and_inf_when_absent():
    assert Job(0, 5, 1).deadline_s == math.inf and not Job(0, 5, 1).has_deadline
    assert Job(0, 5, 1, deadline_s=math.nan) == Job(0, 5, 1)  # NaN (an empty column) means none
    job = Job(0, 5, 1, deadline_s=np.float64(9.5))
    assert job.deadline_s == 9.5 and type(job.deadline_s) is float and job.has_deadline
    with pytest.raises(ValueError, match=r"^job 3: deadline_s must be after submit_s \(5.0\), got 5$"):
        Job(3, 5, 1, deadline_s=5)
    with pytest.raises(ValueError, match=r"^job 0: deadline_s must be a number, got 'soon'$"):
        Job(0, 5, 1, deadline_s="soon")
    assert pickle.loads(pickle.dumps(job)) == job
