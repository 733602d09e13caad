import base64
import hashlib
import hmac
import time
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from service.policy.signing import (
    SECRET_PREFIX,
    headers,
    sign,
    signature_header,
    signing_key,
)
from tests.signatures import VerificationError, verify

KEY = bytes(range(24))
SECRET = SECRET_PREFIX + base64.b64encode(KEY).decode()  # whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX
FORMER = base64.b64encode(b"former-model secret key").decode()  # plain base64, no prefix
OTHER = SECRET_PREFIX + base64.b64encode(b"another key, rotated in").decode()
MSG_ID = "msg_2LJkfv1P4IvWZhTMvDbmYbN3hM4"
BODY = b'{"id":"evt_1","type":"user.created","timestamp":"2024-03-10T12:00:00Z","data":{}}'
TS = 1_710_072_000


def _hand_signature(key: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    content = msg_id.encode() + b"." + str(timestamp).encode() + b"." + body
    return "v1," + base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode()


def test_known_vector():
    expected = "v1,6tgD2IzLuKzRod1zBjtQM28OIkRKBMbIvzXqg7A0eC0="
    assert _hand_signature(KEY, MSG_ID, TS, BODY) == expected
    assert sign(SECRET, MSG_ID, TS, BODY) == expected


def test_standard_webhooks_published_vector():
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    signature = sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, b'{"test": 2432232314}')
    assert signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


@pytest.mark.parametrize(
    ("secret", "key"),
    [
        (SECRET, KEY),
        (FORMER, b"former-model secret key"),
        (SECRET_PREFIX + "AAEC", b"\x00\x01\x02"),
        (SECRET_PREFIX + "AAE", b"\x00\x01"),  # unpadded base64
        ("AAE=", b"\x00\x01"),
        ("webhook_secret_123", b"webhook_secret_123"),  # not base64: the text itself
        ("a", b"a"),
        ("abc-def_", b"abc-def_"),  # URL-safe alphabet is not the standard one
        ("whsec_not base64!", b"whsec_not base64!"),
        ("====", b"===="),
    ],
)
def test_signing_key(secret, key):
    assert signing_key(secret) == key


@pytest.mark.parametrize("secret", ["", SECRET_PREFIX])
def test_empty_key_is_refused(secret):
    with pytest.raises(ValueError, match="empty"):
        signing_key(secret)


def test_prefix_and_bare_base64_sign_alike():
    bare = SECRET.removeprefix(SECRET_PREFIX)
    assert sign(SECRET, MSG_ID, TS, BODY) == sign(bare, MSG_ID, TS, BODY)


@pytest.mark.parametrize("secret", [SECRET, FORMER, "webhook_secret_123"])
def test_sign_matches_hand_computation(secret):
    assert sign(secret, MSG_ID, TS, BODY) == _hand_signature(signing_key(secret), MSG_ID, TS, BODY)


def test_signature_covers_id_timestamp_and_body():
    reference = sign(SECRET, MSG_ID, TS, BODY)
    assert sign(SECRET, MSG_ID + "x", TS, BODY) != reference
    assert sign(SECRET, MSG_ID, TS + 1, BODY) != reference
    assert sign(SECRET, MSG_ID, TS, BODY + b" ") != reference
    assert sign(OTHER, MSG_ID, TS, BODY) != reference


def test_signature_header_keeps_order_and_drops_duplicates():
    one, two = sign(SECRET, MSG_ID, TS, BODY), sign(OTHER, MSG_ID, TS, BODY)
    assert signature_header([SECRET], MSG_ID, TS, BODY) == one
    assert signature_header([SECRET, OTHER], MSG_ID, TS, BODY) == f"{one} {two}"
    assert signature_header([OTHER, SECRET], MSG_ID, TS, BODY) == f"{two} {one}"
    bare = SECRET.removeprefix(SECRET_PREFIX)
    assert signature_header([SECRET, OTHER, SECRET, bare], MSG_ID, TS, BODY) == f"{one} {two}"


def test_signing_without_a_secret_is_refused():
    with pytest.raises(ValueError, match="no webhook secret"):
        signature_header([], MSG_ID, TS, BODY)


def test_headers():
    assert headers([SECRET, OTHER], MSG_ID, TS, BODY) == {
        "webhook-id": MSG_ID,
        "webhook-timestamp": "1710072000",
        "webhook-signature": signature_header([SECRET, OTHER], MSG_ID, TS, BODY),
    }


def test_round_trip():
    verify(SECRET, headers([SECRET], MSG_ID, TS, BODY), BODY, now=TS)
    verify([OTHER, FORMER], headers([FORMER], MSG_ID, TS, BODY), BODY, now=TS)


@pytest.mark.parametrize("secret", [SECRET, FORMER])
def test_standardwebhooks_library_verifies_our_requests(secret):
    now = int(time.time())
    assert Webhook(secret).verify(BODY, headers([secret], MSG_ID, now, BODY)) == {
        "id": "evt_1", "type": "user.created", "timestamp": "2024-03-10T12:00:00Z", "data": {},
    }


@pytest.mark.parametrize("known", [SECRET, OTHER, FORMER])
def test_standardwebhooks_library_verifies_during_rotation(known):
    now = int(time.time())
    sent = headers([SECRET, OTHER, FORMER], MSG_ID, now, BODY)
    assert len(sent["webhook-signature"].split(" ")) == 3
    Webhook(known).verify(BODY, sent)
    verify(known, sent, BODY)


def test_standardwebhooks_library_rejects_another_secret():
    now = int(time.time())
    with pytest.raises(WebhookVerificationError):
        Webhook(OTHER).verify(BODY, headers([SECRET], MSG_ID, now, BODY))


def test_we_verify_what_the_library_signs():
    now = int(time.time())
    webhook = Webhook(SECRET)
    signature = webhook.sign(MSG_ID, datetime.fromtimestamp(now, tz=UTC), BODY.decode())
    sent = {"webhook-id": MSG_ID, "webhook-timestamp": str(now), "webhook-signature": signature}
    verify(SECRET, sent, BODY)


@pytest.mark.parametrize(
    "tamper",
    [
        {"webhook-id": MSG_ID + "x"},
        {"webhook-timestamp": str(TS + 1)},
        {"webhook-signature": "v1," + base64.b64encode(b"\0" * 32).decode()},
        {"webhook-signature": "v2," + sign(SECRET, MSG_ID, TS, BODY).removeprefix("v1,")},
        {"webhook-signature": sign(SECRET, MSG_ID, TS, BODY).removeprefix("v1,")},
        {"webhook-signature": sign(SECRET, MSG_ID, TS, BODY)[:-2]},
        {"webhook-signature": "v1,"},
        {"webhook-signature": "v1,\u00e9t\u00e9"},
    ],
)
def test_tampered_headers_are_rejected(tamper):
    sent = headers([SECRET], MSG_ID, TS, BODY) | tamper
    with pytest.raises(VerificationError, match="no matching signature"):
        verify(SECRET, sent, BODY, now=TS)


def test_tampered_body_is_rejected():
    with pytest.raises(VerificationError, match="no matching signature"):
        verify(SECRET, headers([SECRET], MSG_ID, TS, BODY), BODY + b"\n", now=TS)


def test_wrong_secret_is_rejected():
    with pytest.raises(VerificationError, match="no matching signature"):
        verify([OTHER, FORMER], headers([SECRET], MSG_ID, TS, BODY), BODY, now=TS)


def test_any_v1_entry_may_match():
    good = sign(SECRET, MSG_ID, TS, BODY)
    for signature in (f"v1a,xyz v2,abc {good}", f"  {good}   v1,bad  ", f"garbage\t{good}"):
        sent = headers([SECRET], MSG_ID, TS, BODY) | {"webhook-signature": signature}
        verify(SECRET, sent, BODY, now=TS)


@pytest.mark.parametrize(
    ("offset", "accepted"),
    [(0, True), (300, True), (-300, True), (301, False), (-301, False), (10**6, False)],
)
def test_tolerance_both_directions(offset, accepted):
    sent = headers([SECRET], MSG_ID, TS, BODY)
    now = TS + offset  # receiver clock ahead (> 0: message too old) or behind (< 0: too new)
    if accepted:
        verify(SECRET, sent, BODY, now=now)
    else:
        with pytest.raises(VerificationError, match="old" if offset > 0 else "ahead"):
            verify(SECRET, sent, BODY, now=now)


def test_tolerance_is_configurable():
    sent = headers([SECRET], MSG_ID, TS, BODY)
    verify(SECRET, sent, BODY, now=TS + 3600, tolerance=3600)
    with pytest.raises(VerificationError, match="more than 10s old"):
        verify(SECRET, sent, BODY, now=TS + 11, tolerance=10)


def test_default_now_is_the_clock():
    verify(SECRET, headers([SECRET], MSG_ID, int(time.time()), BODY), BODY)
    with pytest.raises(VerificationError, match="old"):
        verify(SECRET, headers([SECRET], MSG_ID, TS, BODY), BODY)


@pytest.mark.parametrize("missing", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_missing_header_is_named(missing):
    sent = headers([SECRET], MSG_ID, TS, BODY)
    del sent[missing]
    with pytest.raises(VerificationError, match=f"missing {missing} header"):
        verify(SECRET, sent, BODY, now=TS)
    with pytest.raises(VerificationError, match=f"missing {missing} header"):
        verify(SECRET, sent | {missing: ""}, BODY, now=TS)


@pytest.mark.parametrize("timestamp", ["soon", "1.5e9", "1710072000.0", "-1", "+1710072000",
                                       "1_710_072_000", "\u0661\u0667", "9" * 5000])
def test_non_integer_timestamp_is_rejected(timestamp):
    sent = headers([SECRET], MSG_ID, TS, BODY) | {"webhook-timestamp": timestamp}
    with pytest.raises(VerificationError, match="invalid webhook-timestamp"):
        verify(SECRET, sent, BODY, now=TS)


def test_header_names_are_case_insensitive():
    sent = {name.upper(): value for name, value in headers([SECRET], MSG_ID, TS, BODY).items()}
    verify(SECRET, sent, BODY, now=TS)


def test_svix_header_names_are_accepted():
    sent = {name.replace("webhook-", "Svix-"): value
            for name, value in headers([SECRET], MSG_ID, TS, BODY).items()}
    verify(SECRET, sent, BODY, now=TS)


def test_webhook_headers_win_over_svix_headers():
    sent = headers([SECRET], MSG_ID, TS, BODY) | {"svix-signature": "v1,wrong", "svix-id": "x"}
    verify(SECRET, sent, BODY, now=TS)


@settings(max_examples=50, deadline=None)
@given(key=st.binary(min_size=1, max_size=64), msg_id=st.text(min_size=1),
       timestamp=st.integers(0, 2**40), body=st.binary())
def test_round_trip_for_any_message(key, msg_id, timestamp, body):
    secret = SECRET_PREFIX + base64.b64encode(key).decode()
    assert signing_key(secret) == key
    sent = headers([secret], msg_id, timestamp, body)
    assert sent["webhook-signature"] == _hand_signature(key, msg_id, timestamp, body)
    verify(secret, sent, body, now=timestamp)
