"""The passes of a run, and which of a deep check's items each pass covers.

An unbounded run is one pass (:data:`WHOLE`); a bounded run gives a deep check a breadth pass
(:data:`BREADTH`: what it needs to judge once) and a depth pass (:data:`DEPTH`: what the first
left). How the passes are planned and what each may spend is conformance/plan.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

WHOLE = "whole"  # an unbounded run, or a check that is not deep: everything in one pass
BREADTH = "breadth"  # a deep check's first pass: what it needs to judge once
DEPTH = "depth"  # a deep check's second pass: what its first pass left

T = TypeVar("T")


def share(
    items: Sequence[T], phase: str, kept: dict[str, Any], key: str, judged: Callable[[], int]
) -> Iterator[T]:
    """The items of a check's list one pass covers. Whole: all. Breadth: items until the check
    has judged (``judged()``, its count of judgements, went up), the item under way when a pass
    stopped counted as not covered. Depth: the items the breadth pass did not cover."""
    slot = f"share:{key}"
    if phase == WHOLE:
        yield from items
        return
    if phase == DEPTH:
        yield from items[kept.get(slot, 0) :]
        return
    before = judged()
    for i, item in enumerate(items):
        kept[slot] = i
        if judged() > before:
            return
        yield item
    kept[slot] = len(items)
