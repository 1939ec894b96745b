"""The agenda: entries come out in time order, those due at one time in the order they were put in."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from engine.sim.agenda import Agenda


def test_empty_agenda_has_no_earliest_time():
    assert Agenda().earliest() == math.inf


def test_entries_of_one_time_come_out_together_in_the_order_put_in():
    agenda = Agenda()
    for t, entry in [(5.0, 1), (2.0, 7), (5.0, 3), (2.0, -1), (9.0, 4), (5.0, 0)]:
        agenda.push(t, entry)
    assert agenda.earliest() == 2.0
    assert agenda.peek() == [7, -1] and agenda.earliest() == 2.0  # peeking takes nothing
    assert agenda.pop() == [7, -1]
    assert agenda.pop() == [1, 3, 0]
    agenda.push(1.0, 8)  # earlier than everything left
    assert agenda.pop() == [8]
    assert agenda.pop() == [4]
    assert agenda.earliest() == math.inf


@given(st.lists(st.tuples(st.integers(0, 20).map(float), st.integers(-1, 10**12)), max_size=60))
def test_agenda_equals_a_stable_sort_by_time(pushes):
    agenda = Agenda()
    for t, entry in pushes:
        agenda.push(t, entry)
    out = []
    while agenda.earliest() < math.inf:
        t = agenda.earliest()
        peeked = agenda.peek()
        taken = agenda.pop()
        assert peeked == taken
        out.extend((t, e) for e in taken)
    assert out == sorted(pushes, key=lambda p: p[0])  # sorted() is stable: insertion order within a time


def test_an_entry_pushed_for_the_time_just_taken_is_due_afresh():
    agenda = Agenda()
    agenda.push(3.0, 1)
    assert agenda.pop() == [1]
    agenda.push(3.0, 2)  # e.g. a co-tenant re-timed to end now, while the entries of 3.0 are handled
    assert agenda.earliest() == 3.0 and agenda.pop() == [2]
