"""A world kept in this process only (no ``--store``): the default, and every sandbox of it.

Nothing to catch up with, nothing to write, and no other process to conflict with: a unit of
work runs once. The implementation of :class:`~mockserver.store.base.Persistence` that costs
nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from mockserver.platform.ratelimit import Counted
from mockserver.store.base import Changes

T = TypeVar("T")


class InMemory:
    shared = False

    def catch_up(self) -> None:
        return None

    async def catch_up_together(self, identity: Callable[[], str | None]) -> Counted | None:
        return None

    def committed(self, changes: Changes) -> None:
        return None

    def keep_runtime_state(self) -> None:
        return None

    async def retrying(self, work: Callable[[], Awaitable[T]]) -> T:
        return await work()

    def retrying_sync(self, work: Callable[[], T]) -> T:
        return work()
