"""The ordering key of an event's key: every key gives one, always the same, distinct keys
distinct ones, and a key that is usable text stays as it is."""

import base64
import hashlib

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from db.errors import InvalidInput
from db.event_keys import (
    DIGEST_PREFIX,
    ENCODED_BYTES,
    ENCODED_PREFIX,
    MAX_ORDERING_KEY_LENGTH,
    given_ordering_key,
    ordering_key,
)

SCHEMA_REGISTRY_KEY = b"\x00\x00\x00\x00\x01" + b"\x0ecustomer-42"  # magic 0, schema id 1
USABLE_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"),
                      min_size=1, max_size=MAX_ORDERING_KEY_LENGTH).filter(
    lambda text: not text.startswith((ENCODED_PREFIX, DIGEST_PREFIX)))
KEYS = st.one_of(st.binary(min_size=1, max_size=2 * ENCODED_BYTES),
                 USABLE_TEXT.map(str.encode),
                 st.sampled_from([ENCODED_PREFIX, DIGEST_PREFIX]).flatmap(
                     lambda prefix: USABLE_TEXT.map(lambda text: (prefix + text).encode())),
                 st.binary(min_size=ENCODED_BYTES - 2, max_size=ENCODED_BYTES + 2))


@settings(max_examples=200)
@given(USABLE_TEXT)
@example("customer-42 ✓")
@example("k" * MAX_ORDERING_KEY_LENGTH)
def test_a_key_that_is_usable_text_is_its_own_ordering_key(text):
    assert ordering_key(text.encode()) == text
    assert given_ordering_key(text) == text


@settings(max_examples=300)
@given(KEYS)
@example(SCHEMA_REGISTRY_KEY)
@example(b"\xff")
@example(b"k" * (MAX_ORDERING_KEY_LENGTH + 1))
def test_every_key_gives_a_stable_ordering_key_fit_to_store(key):
    made = ordering_key(key)
    assert made == ordering_key(bytes(key))  # the same key, always the same ordering key
    assert 0 < len(made) <= MAX_ORDERING_KEY_LENGTH
    assert "\x00" not in made
    made.encode("utf-8")  # storable text: no lone surrogates


@settings(max_examples=300)
@given(KEYS, KEYS)
@example(b"\x00\xff", ENCODED_PREFIX.encode() + b"AP8=")  # an encoded form, sent as a key
@example(b"k" * 300, (DIGEST_PREFIX + hashlib.sha256(b"k" * 300).hexdigest()).encode())
@example(b"\xff" * ENCODED_BYTES, b"\xff" * (ENCODED_BYTES + 1))
def test_distinct_keys_give_distinct_ordering_keys(one, other):
    assume(one != other)
    assert ordering_key(one) != ordering_key(other)


@pytest.mark.parametrize(("key", "made"), [
    (SCHEMA_REGISTRY_KEY, "~b64:AAAAAAEOY3VzdG9tZXItNDI="),
    (b"\x00\xff", "~b64:AP8="),
    (b"order-\x00-7", "~b64:b3JkZXItAC03"),
    (b"~b64:AP8=", "~b64:fmI2NDpBUDg9"),  # text that looks encoded is encoded itself
    (b"~sha256:x", "~b64:fnNoYTI1Njp4"),
    (b"~b64", "~b64"),  # only the whole prefix is reserved
    (b"\xed\xa0\x80", "~b64:7aCA"),  # an encoded surrogate is not UTF-8
    (b"k" * 256, DIGEST_PREFIX + hashlib.sha256(b"k" * 256).hexdigest()),
])
def test_a_key_that_cannot_be_its_own_ordering_key_is_encoded(key, made):
    assert ordering_key(key) == made


def test_base64_up_to_the_bound_then_a_digest():
    longest = bytes(range(256))[:ENCODED_BYTES]
    encoded = ordering_key(b"\xff" + longest[1:])
    assert encoded.startswith(ENCODED_PREFIX)
    assert base64.b64decode(encoded.removeprefix(ENCODED_PREFIX)) == b"\xff" + longest[1:]
    assert len(encoded) <= MAX_ORDERING_KEY_LENGTH
    digested = ordering_key(b"\xff" + bytes(ENCODED_BYTES))
    assert digested == DIGEST_PREFIX + hashlib.sha256(b"\xff" + bytes(ENCODED_BYTES)).hexdigest()


def test_no_key_and_an_empty_key_are_none():
    assert (ordering_key(None), ordering_key(b"")) == (None, None)
    assert (given_ordering_key(None), given_ordering_key("")) == (None, None)


def test_an_api_key_is_the_same_ordering_key_as_its_utf8_bytes_from_kafka():
    for text in ("order-7", "a\x00b", "k" * 300, "~b64:AP8="):
        assert given_ordering_key(text) == ordering_key(text.encode())


def test_an_api_key_that_is_not_unicode_text_is_refused():
    with pytest.raises(InvalidInput, match="orderingKey: must be valid Unicode"):
        given_ordering_key("order-\ud800")
