"""Storing a batch that one bad item must not sink: the whole batch in one statement, and
when the store refuses it, each half on its own, down to the single items it still refuses.

A batch of n items with one bad item costs about 2·log2(n) extra statements; the good
items are stored whatever the bad one is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

Item = TypeVar("Item")
Stored = TypeVar("Stored")


def store_in_halves(items: Sequence[Item], store: Callable[[Sequence[Item]], Stored], *,
                    refused: tuple[type[Exception], ...],
                    alone: Callable[[Item, Exception], Stored]) -> list[Stored]:
    """Return what `store` returned for each part of `items` it accepted, in order; an item
    `store` refuses on its own (one of the `refused` errors) goes to `alone` with the error,
    whose result stands in its place. Other errors propagate."""
    try:
        return [store(items)]
    except refused as error:
        if len(items) <= 1:
            if not items:
                raise
            return [alone(items[0], error)]
    half = len(items) // 2
    return (store_in_halves(items[:half], store, refused=refused, alone=alone)
            + store_in_halves(items[half:], store, refused=refused, alone=alone))
