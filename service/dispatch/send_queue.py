"""Claimed deliveries waiting for a send slot: taken in turn across tenants and, within each,
across its configs, never more than a config's share of the worker's sends at once.

Pure bookkeeping (no I/O, no clock), so the dispatcher's fairness is tested on its own: a
config whose endpoint hangs holds at most its share of the `capacity` send slots — `per_config`
by default, or the share its items name (a config's own cap), never more than `capacity`. The
worker holds at most HOLD shares of a config (one sending, the others waiting behind), and
claims more of it only once half a share has been sent: so a hung endpoint's backlog never
fills the worker while other configs wait, a fast endpoint always has deliveries ready when
a send slot frees (a claim takes a few milliseconds, longer on a busy worker), and claims
come half a share at a time rather than one send at a time. Turns go by tenant first, as the
claims do: a tenant with a thousand configs waiting takes one turn for each turn of a tenant
with one.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Generic, Protocol, TypeVar

from service.policy.claim_age import HOLD


class Sendable(Protocol):
    @property
    def config_id(self) -> str: ...

    @property
    def tenant_id(self) -> int: ...

    @property
    def max_in_flight(self) -> int | None: ...  # the config's own share, if it has one

    @property
    def config_version(self) -> int: ...  # the config's version when it was claimed


T = TypeVar("T", bound=Sendable)


class SendQueue(Generic[T]):
    """Waiting items by tenant and config, round robin at both; at most `capacity` sending,
    `per_config` each."""

    def __init__(self, capacity: int, per_config: int) -> None:
        if capacity < 1 or per_config < 1:
            raise ValueError("capacity and per_config must be at least 1")
        self.capacity = capacity
        self.per_config = per_config
        # By tenant, then config; insertion order is the turn order at both.
        self._waiting: dict[int, dict[str, deque[T]]] = {}
        self._queued: Counter[str] = Counter()  # waiting items by config
        self._sending: Counter[str] = Counter()
        self._shares: dict[str, int] = {}  # configs with a share of their own, as last seen
        self.sending = 0  # in all

    def add(self, item: T) -> None:
        """Queue `item` behind the others of its config."""
        if item.max_in_flight is None:
            self._shares.pop(item.config_id, None)
        else:
            self._shares[item.config_id] = max(1, min(item.max_in_flight, self.capacity))
        configs = self._waiting.setdefault(item.tenant_id, {})
        configs.setdefault(item.config_id, deque()).append(item)
        self._queued[item.config_id] += 1

    def share(self, config_id: str) -> int:
        """Return how many sends of `config_id` may be under way at once."""
        return self._shares.get(config_id, self.per_config)

    def take(self) -> T | None:
        """Return the next item to send and count it as sending, or None if none may go:
        the first tenant in turn with a config that has something waiting and a send to spare
        goes, its first such config in turn; both move to the back of their turns."""
        if self.sending >= self.capacity:
            return None
        for tenant_id, configs in self._waiting.items():
            for config_id, items in configs.items():
                if self._sending[config_id] < self.share(config_id):
                    item = items.popleft()
                    self._unqueue(config_id, 1)
                    del configs[config_id]
                    if items:
                        configs[config_id] = items  # back of its tenant's turn
                    del self._waiting[tenant_id]
                    if configs:
                        self._waiting[tenant_id] = configs  # back of the turn
                    self._sending[config_id] += 1
                    self.sending += 1
                    return item
        return None

    def drain(self) -> Iterator[T]:
        """Take every item that may go now (see `take`)."""
        while (item := self.take()) is not None:
            yield item

    def done(self, config_id: str) -> bool:
        """Count one send of `config_id` as finished; return True if that gave the worker
        room to claim of it again (see `rooms`)."""
        was_full = self.room(config_id) < self._refill(config_id)
        self._sending[config_id] -= 1
        self.sending -= 1
        if self._sending[config_id] <= 0:
            del self._sending[config_id]
        return was_full and self.room(config_id) >= self._refill(config_id)

    def withdraw(self, config_ids: Collection[str]) -> list[T]:
        """Remove and return the waiting items of `config_ids` (their sends go on)."""
        wanted = set(config_ids)
        return self._remove(lambda item: item.config_id in wanted)

    def withdraw_outdated(self, versions: Mapping[str, int]) -> list[T]:
        """Remove and return the waiting items claimed before their config's version grew
        to the one in `versions` (the config changed since)."""
        return self._remove(lambda item: item.config_version < versions.get(item.config_id,
                                                                               -1))

    def _remove(self, matches: Callable[[T], bool]) -> list[T]:
        """Remove and return the waiting items that match, keeping the others' turns."""
        removed: list[T] = []
        for tenant_id, configs in list(self._waiting.items()):
            for config_id, items in list(configs.items()):
                kept = deque(item for item in items if not matches(item))
                removed.extend(item for item in items if matches(item))
                self._unqueue(config_id, len(items) - len(kept))
                if kept:
                    configs[config_id] = kept
                else:
                    del configs[config_id]
            if not configs:
                del self._waiting[tenant_id]
        return removed

    def waiting_configs(self) -> set[str]:
        """Return the configs with items waiting."""
        return set(self._queued)

    def _unqueue(self, config_id: str, count: int) -> None:
        self._queued[config_id] -= count
        if self._queued[config_id] <= 0:
            del self._queued[config_id]

    def clear(self) -> None:
        """Forget the waiting items (they stay claimed; the caller hands them back)."""
        self._waiting.clear()
        self._queued.clear()

    def room(self, config_id: str) -> int:
        """Return how many more of `config_id` the worker may hold: HOLD shares, less what
        is sending and waiting."""
        return HOLD * self.share(config_id) - self._held(config_id)

    def rooms(self) -> dict[str, int]:
        """Return how many of each config held to claim now: its room, or 0 while the room
        is less than half a share (claiming one or two at a time would cost a claim per
        send; the refill comes when half a share is sent)."""
        return {config_id: room if room >= self._refill(config_id) else 0
                for config_id in self._sending.keys() | self._queued.keys()
                for room in [self.room(config_id)]}

    def saturated(self) -> set[str]:
        """Return the configs to claim none of now (see `rooms`)."""
        return {config_id for config_id, room in self.rooms().items() if room <= 0}

    def _refill(self, config_id: str) -> int:
        return max(1, self.share(config_id) // 2)

    def _held(self, config_id: str) -> int:
        return self._sending[config_id] + self._queued[config_id]

    @property
    def waiting(self) -> int:
        return self._queued.total()
