"""The rule that says whether a portal session's event types cover a subscription, checked
against what the subscriptions match, over every small case."""

from __future__ import annotations

import itertools

from db.catalog import WILDCARD, covers, subscription_patterns

SEGMENTS = ("a", "b")


def _types(alphabet: tuple[str, ...], depth: int) -> list[str]:
    return [".".join(parts) for n in range(1, depth + 1)
            for parts in itertools.product(alphabet, repeat=n)]


TYPES = _types(SEGMENTS, 3)
SUBSCRIPTIONS = [*TYPES, *(t + ".*" for t in _types(SEGMENTS, 2)), WILDCARD]
# Types beyond every subscription's alphabet and depth: a pattern reaches them, a type never.
UNIVERSE = _types((*SEGMENTS, "z"), 4)


def _matches(subscription: str, event_type: str) -> bool:
    return subscription in subscription_patterns(event_type)


def _covered(allowed: tuple[str, ...], subscription: str) -> bool:
    """What covering means: every type the subscription matches, some allowed one matches."""
    return all(any(_matches(a, t) for a in allowed)
               for t in UNIVERSE if _matches(subscription, t))


def test_covers_says_what_the_subscriptions_match_for_every_pair_of_allowed_ones():
    for allowed in itertools.combinations(SUBSCRIPTIONS, 2):
        for subscription in SUBSCRIPTIONS:
            assert covers(allowed, subscription) == _covered(allowed, subscription), \
                (allowed, subscription)


def test_every_subscription_covers_itself_and_the_wildcard_covers_all():
    for subscription in SUBSCRIPTIONS:
        assert covers([subscription], subscription)
        assert covers([WILDCARD], subscription)
    assert not covers(["a.*"], "a")
    assert covers(["a.*"], "a.b.*")
