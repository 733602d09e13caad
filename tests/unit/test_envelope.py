import json
import random
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

import db
import service
from db.event_keys import ordering_key
from db.vocabulary import PoisonKind
from service.ingest.envelope import Poison, derived_id, parse
from tests.catalogues.poison_messages import MAX_PAYLOAD, REASONS, poison

LIMIT = 1024


def read(value, *, limit=LIMIT, timestamp_ms=None, offset=7):
    if not isinstance(value, bytes | None):
        value = json.dumps(value).encode()
    return parse(value, topic="orders", partition=2, offset=offset, max_payload=limit,
                 timestamp_ms=timestamp_ms)


def refused(value, **kwargs) -> Poison:
    with pytest.raises(Poison) as caught:
        read(value, **kwargs)
    return caught.value


# -- ids ------------------------------------------------------------------------------------

def test_a_message_without_id_is_named_by_its_position():
    event = read({"type": "order.created"})
    assert event.id == "orders:2:7" == derived_id("orders", 2, 7)
    assert read({"type": "order.created"}).id == event.id  # redelivered: the same event


def test_id_wins_over_idempotency_key():
    assert read({"type": "t", "id": "evt_1", "idempotencyKey": "k"}).id == "evt_1"


def test_idempotency_key_is_the_id_when_id_is_absent_or_null():
    assert read({"type": "t", "idempotencyKey": "k-1"}).id == "k-1"
    assert read({"type": "t", "id": None, "idempotencyKey": "k-1"}).id == "k-1"
    assert read({"type": "t", "id": None, "idempotencyKey": None}).id == "orders:2:7"


def test_integer_ids_read_as_their_decimal_text():
    assert read({"type": "t", "id": 42}).id == "42"
    assert read({"type": "t", "id": -3}).id == "-3"
    assert read({"type": "t", "idempotencyKey": 9}).id == "9"


@pytest.mark.parametrize("bad", [True, 1.5, [], {}, ["a"]])
@pytest.mark.parametrize("key", ["id", "idempotencyKey"])
def test_other_id_types_are_refused(key, bad):
    poison = refused({"type": "t", key: bad})
    assert poison.kind == "invalid_id"
    assert poison.reason.startswith(f"invalid_id: `{key}` is a")
    assert poison.reason.endswith("; it must be a string or an integer")


@pytest.mark.parametrize("bad", ["", "   ", "x" * 256, "a\x00b", "\udc80"])
def test_unusable_string_ids_are_refused_not_replaced(bad):
    assert refused({"type": "t", "id": bad}).kind == "invalid_event"


def test_longest_id_is_accepted():
    assert read({"type": "t", "id": "x" * 255}).id == "x" * 255


# -- type -----------------------------------------------------------------------------------

def test_type_is_required():
    poison = refused({"payload": {}})
    assert poison.kind == "no_type"
    assert poison.reason == "no_type: no `type`; it must be a string"


@pytest.mark.parametrize(("bad", "named"), [(None, "null"), (3, "a number"),
                                            (True, "a boolean"), (["a"], "an array"),
                                            ({"a": 1}, "an object")])
def test_type_must_be_a_string(bad, named):
    poison = refused({"type": bad})
    assert poison.kind == "no_type"
    assert poison.reason == f"no_type: `type` is {named}; it must be a string"


@pytest.mark.parametrize("bad", ["", "  ", "t" * 256, "a\x00", "\ud800"])
def test_unusable_types_are_refused(bad):
    assert refused({"type": bad}).kind == "invalid_event"


# -- payload --------------------------------------------------------------------------------

def test_payload_wins_over_data():
    event = read({"type": "t", "payload": {"a": 1}, "data": {"b": 2}})
    assert json.loads(event.payload) == {"a": 1}


def test_data_is_the_payload_without_payload():
    assert json.loads(read({"type": "t", "data": [1, 2]}).payload) == [1, 2]


@pytest.mark.parametrize("value", [None, 0, "text", [], {}, False])
def test_payload_may_be_any_json_value_even_null(value):
    assert json.loads(read({"type": "t", "payload": value}).payload) == value
    assert json.loads(read({"type": "t", "data": value}).payload) == value


def test_the_whole_object_is_the_payload_without_payload_or_data():
    message = {"type": "t", "id": "e1", "amount": 3, "date": "2024-01-02T03:04:05Z"}
    assert json.loads(read(message).payload) == message


def test_payload_is_stored_as_compact_json():
    assert read(b'{ "type" : "t", "payload" : { "a" : [ 1 , 2 ] } }').payload == '{"a":[1,2]}'


def test_unicode_survives():
    event = read('{"type": "café", "payload": {"name": "Zoë 😀"}}'.encode())
    assert event.type == "café"
    assert json.loads(event.payload) == {"name": "Zoë 😀"}


def test_escaped_nul_and_lone_surrogates_in_the_payload_are_kept_as_escapes():
    # PostgreSQL's json type stores both escapes (jsonb would refuse them).
    event = read(b'{"type": "t", "payload": "a\\u0000b\\udc80"}')
    assert event.payload == '"a\\u0000b\\udc80"'


# -- time -----------------------------------------------------------------------------------

MOMENT = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)


@pytest.mark.parametrize("value", [
    "2024-05-06T07:08:09Z", "2024-05-06t07:08:09z", "2024-05-06T07:08:09+00:00",
    "2024-05-06T09:08:09+02:00", "2024-05-06 07:08:09Z", " 2024-05-06T07:08:09Z ",
    "2024-05-06T07:08:09", 1714979289, 1714979289.0, 1714979289000,
])
def test_date_reads_rfc3339_and_epoch_seconds_or_milliseconds(value):
    assert read({"type": "t", "date": value}).occurred_at == MOMENT


def test_fractional_times_are_kept():
    event = read({"type": "t", "date": "2024-05-06T07:08:09.250Z"})
    assert event.occurred_at == MOMENT.replace(microsecond=250_000)
    assert read({"type": "t", "date": 1714979289250}).occurred_at == event.occurred_at


def test_timestamp_is_read_when_date_is_absent_or_unreadable():
    assert read({"type": "t", "timestamp": "2024-05-06T07:08:09Z"}).occurred_at == MOMENT
    both = {"type": "t", "date": "yesterday", "timestamp": 1714979289}
    assert read(both).occurred_at == MOMENT


def test_date_wins_over_timestamp():
    message = {"type": "t", "date": 1714979289, "timestamp": 1}
    assert read(message).occurred_at == MOMENT


@pytest.mark.parametrize("value", [
    "yesterday", "", "2024-13-01T00:00:00Z", True, None, [], {}, 1e300, -1e300,
    "9999-12-31T23:59:59-01:00",
])
def test_unreadable_dates_fall_back_to_the_broker_timestamp(value):
    event = read({"type": "t", "date": value}, timestamp_ms=1714979289000)
    assert event.occurred_at == MOMENT


def test_without_any_time_the_event_takes_the_storage_time():
    assert read({"type": "t"}).occurred_at is None
    assert read({"type": "t"}, timestamp_ms=-1).occurred_at is None
    assert read({"type": "t"}, timestamp_ms=0).occurred_at is None


def test_nan_is_not_json_even_as_a_date():
    assert refused(b'{"type": "t", "date": NaN}').kind == "invalid_json"


# -- poison ---------------------------------------------------------------------------------

def test_a_tombstone_is_refused():
    poison = refused(None)
    assert poison.kind == "tombstone"
    assert poison.reason == "tombstone: the message has no value"


def test_size_is_checked_on_the_raw_bytes_before_anything_else():
    poison = refused(b"\xff" * (LIMIT + 1))
    assert poison.kind == "too_large"
    assert poison.reason == f"too_large: {LIMIT + 1} bytes is over the limit of {LIMIT} bytes"
    exact = json.dumps({"type": "t", "pad": ""}).encode()
    exact = exact.replace(b'""', b'"' + b"x" * (LIMIT - len(exact)) + b'"')
    assert len(exact) == LIMIT
    assert read(exact).type == "t"


def test_a_payload_that_grows_past_the_limit_when_encoded_is_refused():
    # Stored JSON escapes non-ASCII characters: 3 bytes of UTF-8 become 6 of "\\uXXXX".
    message = json.dumps({"type": "t", "payload": "€" * 300}, ensure_ascii=False).encode()
    assert len(message) < LIMIT
    poison = refused(message)
    assert poison.kind == "invalid_event"
    assert "over the limit" in poison.reason


@pytest.mark.parametrize("raw", [b"\xff\xfe", b'{"type": "t\xe9"}', b"\xc0\xaf",
                                 b'{"type": "\xed\xb2\x80"}'])
def test_invalid_utf8_is_refused(raw):
    poison = refused(raw)
    assert poison.kind == "invalid_utf8"
    assert poison.reason.startswith("invalid_utf8: byte ")


def test_a_byte_order_mark_is_ignored():
    assert read(b'\xef\xbb\xbf{"type": "t"}').type == "t"


@pytest.mark.parametrize("raw", [b"", b"   ", b"{", b"not json", b'{"type": "t"} trailing',
                                 b"{'type': 't'}", b'{"type": "t", "n": Infinity}',
                                 b'{"type": "t", "n": -Infinity}', b"\x00",
                                 b'{"type": "t", "n": ' + b"9" * 5000 + b"}"])
def test_text_that_is_not_json_is_refused(raw):
    poison = refused(raw, limit=10_000)
    assert poison.kind == "invalid_json"
    assert poison.reason.startswith("invalid_json: ")


def test_deep_nesting_is_refused_not_crashed():
    raw = b'{"type": "t", "payload": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    poison = refused(raw, limit=20_000)
    assert poison.reason == "invalid_json: nested too deeply"


def test_moderate_nesting_is_fine():
    raw = b'{"type": "t", "payload": ' + b"[" * 100 + b"]" * 100 + b"}"
    assert read(raw).payload == "[" * 100 + "]" * 100


def test_huge_numbers_that_cannot_be_kept_exactly_are_refused():
    poison = refused(b'{"type": "t", "payload": 1e400}')
    assert poison.kind == "invalid_event"


@pytest.mark.parametrize(("value", "named"), [([], "an array"), ("t", "a string"),
                                              (1.5, "a number"), (None, "null"),
                                              (True, "a boolean")])
def test_json_that_is_not_an_object_is_refused(value, named):
    poison = refused(json.dumps(value).encode())
    assert poison.kind == "not_an_object"
    assert poison.reason == f"not_an_object: the value is {named}, not an object"


def test_reasons_never_quote_the_message():
    secret = "card-4111111111111111"
    for raw in (f'{{"type": "t", "x": "{secret}"'.encode(), f'["{secret}"]'.encode(),
                f'{{"type": 1, "x": "{secret}"}}'.encode()):
        assert secret not in refused(raw).reason


# -- the poison generator of the fuzz test and the chaos run ---------------------------------

def test_every_generated_poison_message_is_refused_and_every_reason_occurs():
    rng = random.Random(7)
    kinds = Counter(refused(poison(rng), limit=MAX_PAYLOAD, offset=n).kind for n in range(2000))
    assert set(kinds) == REASONS


def test_every_kind_of_poison_is_raised_somewhere():
    """The rejection counter starts with a series per kind: none may be a kind never raised
    (by the envelope's rules and the consumer, or by the catalog's check that db/events.py
    makes, whose refusals the consumer turns into poison)."""
    source = "".join(path.read_text() for path in Path(service.__file__).parent.rglob("*.py"))
    raised = set(re.findall(r"Poison\(PoisonKind\.(\w+)", source))
    refused = set(re.findall(r"Refusal\(.*?PoisonKind\.(\w+)\)",
                             (Path(db.__file__).parent / "events.py").read_text(), re.DOTALL))
    assert raised | refused == set(PoisonKind.__members__)


# -- key and headers ------------------------------------------------------------------------

TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _with(key=None, headers=None, value=None):
    value = json.dumps(value or {"type": "t"}).encode()
    return parse(value, topic="orders", partition=2, offset=7, max_payload=LIMIT, key=key,
                 headers=headers)


def test_the_key_is_recorded_as_sent_never_required_and_is_the_ordering_key():
    event = _with(key="customer-42 ✓".encode())
    assert (event.key, event.ordering_key) == ("customer-42 ✓".encode(), "customer-42 ✓")
    assert (_with(key=None).key, _with(key=None).ordering_key) == (None, None)
    assert (_with(key=b"").key, _with(key=b"").ordering_key) == (b"", None)  # empty: no key
    assert _with(key=b"k").id == derived_id("orders", 2, 7)  # the key is no id


@pytest.mark.parametrize("key", [
    b"\x00\x00\x00\x00\x01\x0ecustomer-42",  # a schema registry's framed key
    b"\x00\xff", b"order-\x00-7", b"k" * 256, b"~b64:AP8=",
])
def test_a_key_that_cannot_be_its_own_ordering_key_is_kept_and_encoded_never_refused(key):
    event = _with(key=key)
    assert (event.key, event.ordering_key) == (key, ordering_key(key))
    assert event.ordering_key != key.decode("utf-8", "replace")


def test_trace_context_headers_are_kept_with_the_event():
    event = _with(headers=[("traceparent", TRACE.encode()), ("tracestate", b"a=b")])
    assert (event.trace_parent, event.trace_state) == (TRACE, "a=b")


@pytest.mark.parametrize("headers", [
    None, [], [("other", b"\xff\x00")], [("empty", None)], [("", b"")],
    [("traceparent", b"garbage")], [("traceparent", b"\xff")],
])
def test_other_headers_and_bad_trace_context_are_ignored(headers):
    event = _with(headers=headers, value={"type": "t", "id": "e1"})
    assert (event.id, event.trace_parent, event.trace_state) == ("e1", None, None)
