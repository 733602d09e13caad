"""The dispatcher's send queue: turns across configs, a share of the sends per config."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.dispatch.send_queue import SendQueue
from service.policy.claim_age import HOLD


@dataclass(frozen=True)
class Item:
    config_id: str
    n: int = 0
    max_in_flight: int | None = None
    config_version: int = 0
    tenant_id: int = 1


def test_configs_take_turns_oldest_first_within_a_config():
    queue = SendQueue(capacity=10, per_config=10)
    for n in range(3):
        queue.add(Item("a", n))
    queue.add(Item("b", 0))
    assert [(i.config_id, i.n) for i in queue.drain()] == [("a", 0), ("b", 0), ("a", 1),
                                                           ("a", 2)]


def test_tenants_take_turns_then_their_configs_within_them():
    """A tenant with many configs waiting takes one turn for each turn of a tenant with one:
    a quiet tenant's item added behind a busy tenant's hundred configs goes next."""
    queue = SendQueue(capacity=1000, per_config=10)
    for n in range(100):
        queue.add(Item(f"busy-{n}", tenant_id=1))
    queue.add(Item("quiet", tenant_id=2))
    sent = [i.config_id for i in queue.drain()]
    assert sent[:3] == ["busy-0", "quiet", "busy-1"]
    assert sorted(sent) == sorted([f"busy-{n}" for n in range(100)] + ["quiet"])


def test_a_withdrawn_config_leaves_the_other_configs_and_tenants_their_turns():
    queue = SendQueue(capacity=1000, per_config=10)
    for config_id, tenant_id in (("a", 1), ("b", 1), ("c", 2)):
        for n in range(2):
            queue.add(Item(config_id, n, tenant_id=tenant_id))
    assert [i.n for i in queue.withdraw({"b"})] == [0, 1]
    assert queue.waiting == 4 and queue.waiting_configs() == {"a", "c"}
    assert [i.config_id for i in queue.drain()] == ["a", "c", "a", "c"]


def test_a_config_sends_at_most_its_share_and_hold_shares_held_saturate_it():
    queue = SendQueue(capacity=10, per_config=2)
    for n in range(HOLD * 2):
        queue.add(Item("hung", n))
    queue.add(Item("fast"))
    assert [i.config_id for i in queue.drain()] == ["hung", "fast", "hung"]
    assert (queue.sending, queue.waiting) == (3, HOLD * 2 - 2)
    assert queue.saturated() == {"hung"}  # two sending, the rest waiting behind them
    assert queue.rooms() == {"hung": 0, "fast": HOLD * 2 - 1}
    assert queue.done("fast") is False  # it was not saturated
    assert queue.done("hung") is True  # room for one (half its share): claim it again
    assert queue.saturated() == set()
    assert queue.rooms()["hung"] == 1
    assert [i.n for i in queue.drain()] == [2]  # the next one goes: held as many still
    assert queue.saturated() == set()
    queue.add(Item("hung", HOLD * 2))
    assert queue.saturated() == {"hung"}


def test_a_config_is_claimed_again_only_once_half_a_share_was_sent():
    queue = SendQueue(capacity=100, per_config=8)
    for n in range(HOLD * 8):
        queue.add(Item("fast", n))
    list(queue.drain())
    assert queue.rooms() == {"fast": 0}
    assert [queue.done("fast") for _ in range(4)] == [False, False, False, True]
    assert queue.rooms() == {"fast": 4}


def test_waiting_alone_saturates_a_config_when_the_worker_is_full():
    queue = SendQueue(capacity=1, per_config=2)
    queue.add(Item("other"))
    assert queue.take().config_id == "other"
    for n in range(HOLD * 2):
        queue.add(Item("late", n))
    assert queue.saturated() == {"late"}


def test_the_worker_s_capacity_bounds_every_config_together():
    queue = SendQueue(capacity=3, per_config=3)
    for config in "abcd":
        queue.add(Item(config))
    assert [i.config_id for i in queue.drain()] == ["a", "b", "c"]
    assert queue.take() is None
    queue.done("b")
    assert queue.take().config_id == "d"


def test_clear_forgets_what_waits_and_keeps_the_count_of_what_is_sending():
    queue = SendQueue(capacity=1, per_config=1)
    queue.add(Item("a"))
    queue.add(Item("a", 1))
    assert queue.take().n == 0
    queue.clear()
    assert (queue.sending, queue.waiting, queue.take()) == (1, 0, None)


@pytest.mark.parametrize("capacity, per_config", [(0, 1), (1, 0)])
def test_bounds_below_one_are_refused(capacity, per_config):
    with pytest.raises(ValueError):
        SendQueue(capacity, per_config)


@given(st.lists(st.tuples(st.sampled_from("abc"), st.booleans()), max_size=60),
       st.integers(1, 5), st.integers(1, 5))
def test_no_sequence_of_adds_takes_and_dones_breaks_the_bounds(steps, capacity, per_config):
    queue = SendQueue(capacity, per_config)
    sending: list[str] = []
    waiting = dict.fromkeys("abc", 0)
    for config, add in steps:
        if add:
            queue.add(Item(config))
            waiting[config] += 1
        elif sending:
            queue.done(sending.pop(0))
        for item in queue.drain():
            sending.append(item.config_id)
            waiting[item.config_id] -= 1
        assert queue.sending == len(sending) <= capacity
        assert queue.waiting == sum(waiting.values())
        assert all(sending.count(c) <= per_config for c in "abc")
        held = {c: sending.count(c) + waiting[c] for c in "abc"}
        assert queue.saturated() == {c for c in "abc" if held[c] and HOLD * per_config
                                     - held[c] < max(1, per_config // 2)}


def test_withdrawing_a_config_returns_its_waiting_items_and_leaves_its_sends_counted():
    queue = SendQueue(capacity=1, per_config=1)
    for n in range(3):
        queue.add(Item("paused", n))
    queue.add(Item("other"))
    assert queue.take() == Item("paused", 0)  # sending
    assert queue.withdraw(["paused", "unknown"]) == [Item("paused", 1), Item("paused", 2)]
    assert (queue.sending, queue.waiting) == (1, 1)
    assert queue.withdraw(["paused"]) == []
    queue.done("paused")
    assert list(queue.drain()) == [Item("other")]


def test_a_config_with_its_own_cap_gets_that_share_up_to_the_capacity():
    queue = SendQueue(capacity=4, per_config=1)
    for n in range(6):
        queue.add(Item("own", n, max_in_flight=3))
        queue.add(Item("big", n, max_in_flight=100))
    queue.add(Item("default"))
    taken = [i.config_id for i in queue.drain()]
    assert taken == ["own", "big", "default", "own"]  # the capacity ends the turns
    assert queue.share("own") == 3 and queue.share("big") == 4 and queue.share("x") == 1
    assert queue.rooms() == {"own": HOLD * 3 - 6, "big": HOLD * 4 - 6, "default": HOLD - 1}


def test_what_was_claimed_before_its_config_changed_is_withdrawn_the_rest_stays():
    queue = SendQueue(capacity=10, per_config=1)
    for n in range(3):
        queue.add(Item("a", n, config_version=4))
    queue.add(Item("a", 3, config_version=5))  # claimed after the change
    queue.add(Item("b", 0, config_version=1))
    assert queue.take() == Item("a", 0, config_version=4)  # sending: not withdrawn
    withdrawn = queue.withdraw_outdated({"a": 5, "b": 1, "gone": 9})
    assert withdrawn == [Item("a", 1, config_version=4), Item("a", 2, config_version=4)]
    assert queue.waiting_configs() == {"a", "b"}
    assert queue.withdraw_outdated({"b": 2}) == [Item("b", 0, config_version=1)]
    assert queue.waiting_configs() == {"a"}
    queue.done("a")
    assert list(queue.drain()) == [Item("a", 3, config_version=5)]
