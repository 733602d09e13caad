"""Bad dates and cursors get a message that says what to send, never Python's own words."""

import pytest

PYTHON_INTERNALS = ("invalid literal", "int()", "base 10", "must be in", "is out of range",
                    "Traceback", "Error:", "fromisoformat", "unconverted data")

LIST = "query ($after: String, $from: DateTime) { deliveries(after: $after, filter: " \
       "{createdAfter: $from}) { edges { node { id } } } }"
BAD_DATES = ["yesterday", "2024-13-45T00:00:00Z", "2024-01-01T25:00:00Z", "99999-01-01T00:00:00Z",
             "0000-01-01T00:00:00Z", "2024-02-30T00:00:00Z", "2024-01-01T00:00:00+99:00", "",
             "12", "2024-01-01T00:00:00Zjunk", 12, True, ["2024-01-01T00:00:00Z"]]
BAD_CURSORS = ["abc", "!!!", "eyJsIjoiZGVsaXZlcmllcyIsImlkIjoiYSJ9", "=" * 10, "x" * 2000,
               "eyJsIjoiY29uZmlncyJ9"]


def _assert_clean(error, *, mentions):
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    for marker in PYTHON_INTERNALS:
        assert marker not in error["message"], error["message"]
    assert mentions in error["message"], error["message"]


@pytest.mark.parametrize("value", BAD_DATES, ids=repr)
def test_a_bad_date_in_a_variable_says_what_a_good_one_looks_like(shared_api, value):
    _assert_clean(shared_api.error(LIST, {"from": value}), mentions="RFC 3339")


@pytest.mark.parametrize("value", [v for v in BAD_DATES if isinstance(v, str)], ids=repr)
def test_a_bad_date_written_in_the_query_says_what_a_good_one_looks_like(shared_api, value):
    literal = value.replace('"', "")
    query = '{ deliveries(filter: {createdAfter: "' + literal + '"}) { edges { node { id } } } }'
    _assert_clean(shared_api.error(query), mentions="RFC 3339")


def test_a_date_without_an_offset_is_refused_with_the_same_hint(shared_api):
    error = shared_api.error(LIST, {"from": "2024-01-01T00:00:00"})
    _assert_clean(error, mentions="RFC 3339")


@pytest.mark.parametrize("cursor", BAD_CURSORS)
@pytest.mark.parametrize("listing", ["deliveries", "configs", "rejectedEvents"])
def test_a_bad_cursor_says_to_pass_an_end_cursor(shared_api, listing, cursor):
    query = "query ($after: String) { LISTING(after: $after) { edges { node { id } } } }"
    query = query.replace("LISTING", listing)
    _assert_clean(shared_api.error(query, {"after": cursor}), mentions="endCursor")


def test_a_bulk_replay_window_with_bad_dates_says_what_to_send(shared_api):
    query = ("mutation ($from: DateTime!) { replayDeliveries(filter: {createdAtFrom: $from}) "
             "{ hasMore } }")
    error = shared_api.error(query, {"from": "last tuesday"},
                             headers={"Idempotency-Key": "dates"})
    _assert_clean(error, mentions="RFC 3339")
