import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.policy.durations import format_duration, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("250ms", 0.25),
        ("3s", 3),
        ("1m", 60),
        ("10h", 36000),
        ("30d", 2592000),
        ("0", 0),
        ("1.5", 1.5),
        ("90", 90),
        ("1h30m", 5400),
        (" 5s ", 5),
        ("2D", 172800),
        ("0.5s", 0.5),
    ],
)
def test_parse_duration_reads_every_unit(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "5x", "-1", "-5s", "1m-", "s", "1 m", "nan", "inf",
                                  "5s5", "1e3s"])
def test_parse_duration_rejects_garbage(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (0.25, "250ms"), (0.001, "1ms"), (1.5, "1.5s"), (3, "3s"), (60, "1m"),
     (90, "1m30s"), (36000, "10h"), (2592000, "30d"), (5400, "1h30m"), (5430, "1h30m30s"),
     (32580, "9h3m"), (93600, "1d2h"), (90061, "1d1h1m1s"), (36000.0, "10h")],
)
def test_format_duration_round_trips(seconds, text):
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds


@given(st.floats(min_value=0, max_value=10**9, allow_nan=False, allow_infinity=False)
       | st.integers(min_value=0, max_value=999).map(lambda n: n / 1000))
def test_every_duration_reads_back_exactly(seconds):
    assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (0.4, "0s"), (45.2, "45s"), (59.6, "1m"), (3725, "1h2m"), (93784, "1d2h"),
     (86400, "1d"), (3600.4, "1h")],
)
def test_two_parts_spell_a_duration_approximately(seconds, text):
    assert format_duration(seconds, parts=2) == text


@pytest.mark.parametrize("seconds", [-1, float("inf"), float("nan")])
def test_format_duration_refuses_what_is_no_duration(seconds):
    with pytest.raises(ValueError):
        format_duration(seconds)


@pytest.mark.parametrize(
    ("text", "size"),
    [("1048576", 1048576), ("1MiB", 1048576), ("64KiB", 65536), ("1MB", 1000000),
     ("2gib", 2 * 1024**3), ("10b", 10), ("1 MiB", 1048576)],
)
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "MiB", "1.5MiB", "1XB", "-1"])
def test_parse_size_rejects_garbage(text):
    with pytest.raises(ValueError):
        parse_size(text)
