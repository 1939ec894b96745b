"""The decision records: frozen dataclasses with value semantics, compiled or interpreted."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from engine.sim.state import Preempt, Resize, Start, Wake

RECORDS = [Start(3, (0, 1)), Preempt(7), Wake(12.5), Resize(4, (0, 1, 2))]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_a_decision_is_frozen(record):
    field = dataclasses.fields(record)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(record, field, 99)
    assert getattr(record, field) != 99


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_a_decision_compares_hashes_and_pickles_by_value(record):
    twin = type(record)(*dataclasses.astuple(record))
    assert twin == record and hash(twin) == hash(record) and twin is not record
    assert pickle.loads(pickle.dumps(record)) == record


def test_start_keeps_whatever_it_is_given_for_the_engine_to_judge():
    s = Start(2, [4, 5])  # a list: the engine's validation names the problem, the record does not refuse it
    assert (s.job_id, s.gpu_ids) == (2, [4, 5])
    assert dataclasses.asdict(Start(1, (0,))) == {"job_id": 1, "gpu_ids": (0,)}
    assert Start(1, (0,)) != Start(1, (1,))
