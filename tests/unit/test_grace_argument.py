import pytest

from db.errors import InvalidInput
from graphql_schema.arguments import MAX_GRACE_SECONDS, grace_seconds


@pytest.mark.parametrize("value", [None, 0, 1, 3600, MAX_GRACE_SECONDS])
def test_a_grace_from_0_to_30_days_is_taken_as_given(value):
    assert grace_seconds(value) == value


@pytest.mark.parametrize("value", [-1, -3600, MAX_GRACE_SECONDS + 1, 2**31 - 1])
def test_a_grace_out_of_range_is_refused_naming_the_range(value):
    with pytest.raises(InvalidInput, match=r"graceSeconds: must be 0 to 2592000 seconds"):
        grace_seconds(value)


def test_the_longest_grace_is_30_days():
    assert MAX_GRACE_SECONDS == 30 * 24 * 3600
