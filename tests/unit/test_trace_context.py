"""Reading W3C trace context from broker message headers, and continuing it."""

from __future__ import annotations

import pytest

from service.policy.trace_context import (
    MAX_TRACESTATE,
    TraceContext,
    child_traceparent,
    from_headers,
    parse_traceparent,
)

VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.mark.parametrize("value, expected", [
    (VALID, VALID),
    (f"  {VALID} ", VALID),
    ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"),
    # a future version may add fields; what this version knows is kept
    ("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-ever", VALID),
    (None, None),
    ("", None),
    ("garbage", None),
    ("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", None),
    ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", None),
    ("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", None),
    ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", None),
    ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", None),
    ("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", None),
    ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01", None),
    ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1", None),
    ("0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", None),
    ("00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01", None),
])
def test_traceparent_validation(value, expected):
    assert parse_traceparent(value) == expected


def test_headers_without_trace_context_give_none():
    assert from_headers(None) is None
    assert from_headers([]) is None
    assert from_headers([("source", b"billing"), ("content-type", b"application/json")]) is None


def test_a_valid_traceparent_with_its_tracestate():
    context = from_headers([("x", b"1"), ("traceparent", VALID.encode()),
                            ("tracestate", b"congo=t61rcWkgMzE")])
    assert context == TraceContext(VALID, "congo=t61rcWkgMzE")
    assert (context.trace_id, context.flags) == ("4bf92f3577b34da6a3ce929d0e0e4736", "01")


def test_header_names_match_whatever_their_case():
    assert from_headers([("TraceParent", VALID.encode()), ("TRACESTATE", b"a=b")]) == \
        TraceContext(VALID, "a=b")


@pytest.mark.parametrize("headers", [
    [("traceparent", b"not-a-traceparent"), ("tracestate", b"a=b")],
    [("traceparent", VALID.encode()), ("traceparent", VALID.encode())],
    [("traceparent", None)],
    [("traceparent", b"\xff\xfe")],
    [("traceparent", ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b" + "\u00e9-01")
      .encode())],
    [("tracestate", b"a=b")],
])
def test_unusable_trace_context_is_ignored(headers):
    assert from_headers(headers) is None


@pytest.mark.parametrize("states, kept", [
    ([b"a=b"], "a=b"),
    ([b"a=b", b"c=d"], "a=b,c=d"),
    ([b""], None),
    ([None], None),
    ([b"\xff"], None),
    ([b"a=\x01"], None),
    ([b"a=" + b"x" * MAX_TRACESTATE], None),
    ([b"a=" + b"x" * (MAX_TRACESTATE - 2)], "a=" + "x" * (MAX_TRACESTATE - 2)),
])
def test_tracestate_is_kept_only_when_usable(states, kept):
    headers = [("traceparent", VALID.encode())] + [("tracestate", s) for s in states]
    assert from_headers(headers) == TraceContext(VALID, kept)


@pytest.mark.parametrize("flags", ["00", "01"])
def test_a_child_continues_the_trace_and_its_sampling(flags):
    context = TraceContext(f"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-{flags}")
    assert child_traceparent(context, 0xABC) == \
        f"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000abc-{flags}"
