from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.policy.classify import (
    DEFAULT_RETRYABLE,
    FAIL,
    RETRY,
    SUCCEEDED,
    classify,
    parse_retry_after,
    parse_status_codes,
    status_class,
)

NOW = datetime(1994, 11, 6, 8, 47, 37, tzinfo=UTC)  # two minutes before the RFC examples


def _expected(code: int) -> str:
    table = {0: RETRY, 408: RETRY, 429: RETRY}
    table |= dict.fromkeys(range(200, 300), SUCCEEDED)
    table |= dict.fromkeys(range(500, 600), RETRY)
    return table.get(code, FAIL)


@pytest.mark.parametrize("code", range(1000))
def test_every_status_code(code):
    assert classify(code) == _expected(code)


@pytest.mark.parametrize(
    ("code", "outcome"),
    [(0, RETRY), (100, FAIL), (200, SUCCEEDED), (201, SUCCEEDED), (204, SUCCEEDED),
     (299, SUCCEEDED), (301, FAIL), (302, FAIL), (304, FAIL), (400, FAIL), (401, FAIL),
     (403, FAIL), (404, FAIL), (407, FAIL), (408, RETRY), (409, FAIL), (410, FAIL), (428, FAIL),
     (429, RETRY), (430, FAIL), (499, FAIL), (500, RETRY), (502, RETRY), (503, RETRY),
     (504, RETRY), (599, RETRY), (600, FAIL), (99, FAIL), (-1, FAIL), (1000, FAIL)],
)
def test_landmark_codes(code, outcome):
    assert classify(code) == outcome


@pytest.mark.parametrize(
    ("text", "codes"),
    [("408,429,5xx", {408, 429, *range(500, 600)}), ("", set()), (" , ", set()),
     ("503", {503}), ("5XX", set(range(500, 600))), (" 429 , 503 ", {429, 503}),
     ("4xx", set(range(400, 500))), ("1xx,3xx", {*range(100, 200), *range(300, 400)}),
     ("599,100", {599, 100}), ("503,503,5xx", set(range(500, 600)))],
)
def test_parse_status_codes(text, codes):
    assert parse_status_codes(text) == frozenset(codes)


@pytest.mark.parametrize(
    ("text", "message"),
    [("200", "success"), ("2xx", "success"), ("204", "success"), ("600", "not a status code"),
     ("99", "not a status code"), ("6xx", "not a status code"), ("0", "not a status code"),
     ("abc", "not a status code"), ("5x", "not a status code"), ("503;504", "not a status"),
     ("500-599", "not a status code"), ("0503", "not a status code"), ("-1", "not a status"),
     ("\uff15\uff10\uff13", "not a status code"), ("408,,2xx", "success")],
)
def test_parse_status_codes_refuses_what_it_cannot_mean(text, message):
    with pytest.raises(ValueError, match=message):
        parse_status_codes(text)


def test_default_retryable_codes_are_408_429_and_5xx():
    assert frozenset({408, 429, *range(500, 600)}) == DEFAULT_RETRYABLE


@pytest.mark.parametrize("code", range(1000))
def test_every_status_code_with_a_chosen_list(code):
    retryable = parse_status_codes("409,4xx,503")
    expected = (SUCCEEDED if 200 <= code <= 299 else
                RETRY if code == 0 or 400 <= code <= 499 or code == 503 else FAIL)
    assert classify(code, retryable) == expected


@pytest.mark.parametrize("code", [408, 429, 500, 503])
def test_an_empty_list_retries_network_errors_only(code):
    assert classify(code, frozenset()) == FAIL
    assert classify(0, frozenset()) == RETRY


def test_outcomes_are_the_state_names():
    assert (SUCCEEDED, RETRY, FAIL) == ("succeeded", "retry", "fail")


@pytest.mark.parametrize(
    ("code", "family"),
    [(0, "none"), (100, "1xx"), (199, "1xx"), (200, "2xx"), (302, "3xx"), (404, "4xx"),
     (503, "5xx"), (599, "5xx"), (600, "other"), (99, "other"), (1, "other"), (-1, "other"),
     (999, "other")],
)
def test_status_class(code, family):
    assert status_class(code) == family


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        ("0", 0.0),
        ("007", 7.0),
        (" 60 ", 60.0),
        ("\t30\r\n", 30.0),
        ("99999999999999999999", 1e20),
        ("Sun, 06 Nov 1994 08:49:37 GMT", 120.0),
        ("Sunday, 06-Nov-94 08:49:37 GMT", 120.0),
        ("Sun Nov  6 08:49:37 1994", 120.0),
        ("Sun Nov 06 08:49:37 1994", 120.0),
        ("sun, 06 nov 1994 08:49:37 gmt", 120.0),
        ("Mon, 07 Nov 1994 08:47:37 GMT", 86400.0),
        ("Sun, 06 Nov 1994 08:47:37 GMT", 0.0),
        ("Sun, 06 Nov 1994 08:00:00 GMT", 0.0),  # in the past
        ("Fri, 01 Jan 1993 00:00:00 GMT", 0.0),
        ("Tue, 06 Dec 1994 08:47:37 GMT", 30 * 86400.0),  # weekday is not checked
    ],
)
def test_parse_retry_after(value, seconds):
    assert parse_retry_after(value, now=NOW) == seconds


def test_huge_delay_seconds_do_not_raise():
    assert parse_retry_after("9" * 5000, now=NOW) == float("inf")


@pytest.mark.parametrize(
    ("value", "now", "seconds"),
    [
        ("Tuesday, 01-Jan-30 00:00:00 GMT", datetime(2025, 1, 1, tzinfo=UTC), 5 * 365.25 * 86400),
        ("Sunday, 01-Jan-79 00:00:00 GMT", datetime(2025, 1, 1, tzinfo=UTC), 0.0),  # 1979
        ("Saturday, 01-Jan-00 00:00:00 GMT", datetime(1999, 1, 1, tzinfo=UTC), 365 * 86400.0),
    ],
)
def test_two_digit_years_follow_rfc_9110(value, now, seconds):
    assert parse_retry_after(value, now=now) == pytest.approx(seconds, abs=86400)


@pytest.mark.parametrize(
    "value",
    [None, "", " ", "abc", "-1", "+1", "1.5", "1e3", "1,000", "1 000", "0x10", "١٢", "\uff11\uff12",
     "²", "120s", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 UTC",
     "Sun, 06 Nov 1994 08:49:37 +0000", "Sun, 6 Nov 1994 08:49:37 GMT",
     "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 31 Feb 1994 08:49:37 GMT",
     "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 23:59:60 GMT",
     "Xyz, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT",
     "Sun, 06-Nov-94 08:49:37 GMT", "Sun Nov 6 08:49:37 94", "1994-11-06T08:49:37Z",
     "\u017fun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT extra"],
)
def test_invalid_retry_after_is_ignored(value):
    assert parse_retry_after(value, now=NOW) is None


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_retry_after_never_raises(value):
    seconds = parse_retry_after(value, now=NOW)
    assert seconds is None or seconds >= 0


@settings(max_examples=100, deadline=None)
@given(st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 1, 1)))
def test_imf_fixdate_round_trips(moment):
    moment = moment.replace(microsecond=0, tzinfo=UTC)
    value = moment.strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert parse_retry_after(value, now=NOW) == max(0.0, (moment - NOW).total_seconds())
