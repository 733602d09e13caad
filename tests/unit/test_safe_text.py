from hypothesis import given
from hypothesis import strategies as st

from service.policy.safe_text import from_bytes, from_text


def test_plain_text_is_kept():
    assert from_bytes(b"ok", 100) == "ok"
    assert from_bytes("gr\u00fc\u00dfe \u2603".encode(), 100) == "gr\u00fc\u00dfe \u2603"


def test_nul_is_escaped():
    assert from_bytes(b"ok\x00bad", 100) == "ok\\x00bad"


def test_undecodable_bytes_are_escaped():
    assert from_bytes(b"\x1f\x8b\x08\x00\xff", 100) == "\x1f\\x8b\x08\\x00\\xff"


def test_a_truncated_multibyte_character_is_escaped():
    assert from_bytes("\u2603".encode()[:2], 100) == "\\xe2\\x98"


def test_short_enough_text_is_not_cut():
    assert from_bytes(b"abcd", 4) == "abcd"


def test_long_text_is_cut_to_the_limit():
    assert from_bytes(b"abcdef", 4) == "abcd"


def test_the_limit_counts_utf8_bytes_and_never_splits_a_character():
    assert from_bytes("\u00e9\u00e9\u00e9".encode(), 5) == "\u00e9\u00e9"


def test_the_limit_never_splits_an_escape():
    for limit in range(2, 6):
        assert from_bytes(b"ab\x00cd", limit) == {2: "ab", 3: "ab", 4: "ab",
                                                 5: "ab"}[limit]
    assert from_bytes(b"ab\x00cd", 6) == "ab\\x00"
    assert from_bytes(b"ab\x00cd", 7) == "ab\\x00c"


def test_a_literal_backslash_at_the_cut_is_kept():
    assert from_bytes(b"ab\\cd", 3) == "ab\\"
    assert from_bytes(b"ab\\xyz", 4) == "ab\\x"


def test_text_with_nul_and_surrogates_is_storable():
    assert from_text("bad \x00 header", 100) == "bad \\x00 header"
    assert from_text("lone \udc80", 100) == "lone \\udc80"
    assert from_text("x" * 2000, 1000) == "x" * 1000


@given(st.binary(max_size=300), st.integers(min_value=0, max_value=400))
def test_any_bytes_become_storable_text_within_the_limit(data, limit):
    text = from_bytes(data, limit)
    assert "\x00" not in text
    assert len(text.encode("utf-8")) <= limit
    whole = from_bytes(data, 10_000)
    assert whole.startswith(text)


@given(st.binary(max_size=300))
def test_decodable_bytes_without_nul_are_unchanged(data):
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    if "\x00" not in decoded:
        assert from_bytes(data, 10_000) == decoded


@given(st.text(max_size=300), st.integers(min_value=0, max_value=400))
def test_any_text_becomes_storable(text, limit):
    result = from_text(text, limit)
    assert "\x00" not in result
    assert len(result.encode("utf-8")) <= limit
