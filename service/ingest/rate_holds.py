"""Messages over their tenant's events per second wait in their partitions: which partitions a
batch's waiting messages hold, from where and for how long, and the order in which a batch's
events take their tenants' publish slots.

A waiting message is neither stored nor rejected. Kafka commits a partition up to one offset,
so the partition is held at the first message that waits: that offset is committed, the
partition is paused, and once the wait is over it is read again from there (what was stored
beyond it creates nothing and takes no slot the second time). Every other partition goes on.

Pure: no clock, broker or database.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Seconds a partition is held at most before it is read again, whatever the wait: a rate
# raised or removed meanwhile applies to its waiting messages within this.
LONGEST_HOLD = 1.0

Partition = tuple[str, int]  # topic, partition


@dataclass(frozen=True)
class Hold:
    offset: int  # the partition's first message not stored: committed, and read again from
    seconds: float  # how long the partition is paused before it is read again


def holds(waiting: Iterable[tuple[Partition, int, float]]) -> dict[Partition, Hold]:
    """Return where and how long each partition with waiting messages (each given as its
    partition, offset and seconds to wait) is held: from its first waiting message, until the
    shortest of their waits is over (LONGEST_HOLD at most)."""
    found: dict[Partition, Hold] = {}
    for partition, offset, seconds in waiting:
        seconds = min(seconds, LONGEST_HOLD)
        held = found.get(partition)
        if held is not None:
            offset, seconds = min(offset, held.offset), min(seconds, held.seconds)
        found[partition] = Hold(offset, seconds)
    return found


def in_turns(partitions: Sequence[Partition]) -> list[int]:
    """Return the indices of a batch's messages (given by their partitions, in the batch's
    order) in turns: each partition's first message, then each one's second, and so on, so
    that a tenant's slots go to its messages of every partition alike."""
    seen: dict[Partition, int] = {}
    turns = []
    for index, partition in enumerate(partitions):
        turns.append((seen.get(partition, 0), index))
        seen[partition] = seen.get(partition, 0) + 1
    return [index for _, index in sorted(turns)]
