"""Where and how long a batch's messages over their tenants' rates hold their partitions, and
the turns in which a batch's events take their slots."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from service.ingest.rate_holds import LONGEST_HOLD, Hold, holds, in_turns

PARTITIONS = st.sampled_from([("a", 0), ("a", 1), ("b", 0)])
WAITING = st.lists(st.tuples(PARTITIONS, st.integers(0, 50), st.floats(1e-6, 500)), max_size=12)


@given(waiting=WAITING)
def test_a_partition_is_held_from_its_first_waiting_message_for_its_shortest_wait(waiting):
    found = holds(waiting)
    assert set(found) == {partition for partition, _, _ in waiting}
    for partition, hold in found.items():
        mine = [(offset, seconds) for p, offset, seconds in waiting if p == partition]
        assert hold == Hold(min(offset for offset, _ in mine),
                            min(LONGEST_HOLD, *(seconds for _, seconds in mine)))


def test_a_hold_lasts_the_wait_or_a_second_at_most():
    assert holds([(("t", 0), 7, 0.25), (("t", 0), 5, 3.0), (("t", 1), 9, 40.0)]) == {
        ("t", 0): Hold(5, 0.25), ("t", 1): Hold(9, LONGEST_HOLD)}
    assert holds([]) == {}


@given(partitions=st.lists(PARTITIONS, max_size=30))
def test_turns_take_each_partitions_next_message_in_a_round(partitions):
    turns = in_turns(partitions)
    assert sorted(turns) == list(range(len(partitions)))
    # Each partition's messages keep their order.
    for partition in set(partitions):
        mine = [index for index in turns if partitions[index] == partition]
        assert mine == sorted(mine)
    # A partition's n-th message comes after every partition's (n-1)-th.
    rounds = [partitions[:index].count(partitions[index]) for index in turns]
    assert rounds == sorted(rounds)


def test_turns_interleave_the_partitions():
    batch = [("t", 0), ("t", 0), ("t", 0), ("t", 1), ("t", 1)]
    assert in_turns(batch) == [0, 3, 1, 4, 2]
