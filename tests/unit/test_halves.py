"""Storing in halves: one bad item never sinks the good ones, and costs few statements."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.policy.halves import store_in_halves


class Refused(Exception):
    pass


def storing(calls: list):
    def store(part):
        calls.append(list(part))
        if any(item < 0 for item in part):  # a negative number is a value the store refuses
            raise Refused(f"refused {min(part)}")
        return ("stored", list(part))
    return store


@given(st.lists(st.integers(min_value=-3, max_value=50), max_size=64))
def test_every_good_item_is_stored_once_in_order_and_every_bad_one_stands_alone(items):
    calls: list = []
    parts = store_in_halves(items, storing(calls), refused=(Refused,),
                            alone=lambda item, error: ("alone", item, str(error)))
    stored = [item for part in parts if part[0] == "stored" for item in part[1]]
    alone = [(part[1], part[2]) for part in parts if part[0] == "alone"]
    assert stored == [item for item in items if item >= 0]
    assert alone == [(item, f"refused {item}") for item in items if item < 0]
    bad = len(alone)
    if bad:  # each bad item costs at most two statements per level of halving
        assert len(calls) <= 1 + 2 * bad * math.ceil(math.log2(max(len(items), 2)))
    else:
        assert calls == [items]


def test_an_error_the_caller_did_not_name_is_not_swallowed():
    def store(part):
        raise KeyError("broken")

    with pytest.raises(KeyError):
        store_in_halves([1, 2, 3], store, refused=(Refused,), alone=lambda item, error: None)


def test_an_empty_batch_the_store_refuses_is_the_store_s_error():
    def store(part):
        raise Refused("nothing to store")

    with pytest.raises(Refused):
        store_in_halves([], store, refused=(Refused,), alone=lambda item, error: None)
