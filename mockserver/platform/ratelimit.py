"""Request rate per caller identity: a fixed window of one minute on the mock clock.

All keys of one member share the bucket (``auth.rate_identity``). ``GET /v1/openapi.json`` is
never counted, with a key or without (the dispatcher asks :func:`never_counted` for public
operations).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mockserver.platform.clock import Clock

if TYPE_CHECKING:
    from mockserver.contract import Operation
    from mockserver.runtime import Runtime

WINDOW_SECONDS = 60


@dataclass(frozen=True)
class RateState:
    limit: int
    remaining: int
    reset_seconds: int
    allowed: bool

    def headers(self) -> dict[str, str]:
        return {
            "x-ratelimit-limit": str(self.limit),
            "x-ratelimit-remaining": str(self.remaining),
            "x-ratelimit-reset": str(self.reset_seconds),
        }


class RateLimiter:
    def __init__(self, limit: int, clock: Clock, shared: SharedBuckets | None = None) -> None:
        """``shared``: buckets kept in a store every process counts in (store/sql.py)."""
        self.limit = limit
        self.clock = clock
        self._windows: dict[str, tuple[float, int]] = {}  # identity -> (window start, count)
        self.shared = shared
        # The count the store made for this request with its catch-up (identity, window start,
        # the count with this request).
        self.counted: tuple[str, float, int] | None = None

    def hit(self, identity: str) -> RateState:
        """Count one request. A refused request takes nothing from the window: in memory it is
        not counted; in shared buckets any count past the limit refuses alike."""
        now = self.clock.timestamp()
        if self.shared is not None:
            counted, self.counted = self.counted, None
            if counted is not None and counted[0] == identity:
                start, count = counted[1], counted[2]
            else:
                start, count = self.shared.rate_hits({identity: 1}, now, WINDOW_SECONDS)[identity]
            reset = max(1, math.ceil(start + WINDOW_SECONDS - now))
            if count > self.limit:
                return RateState(self.limit, 0, reset, allowed=False)
            return RateState(self.limit, self.limit - count, reset, allowed=True)
        start, count = self._windows.get(identity, (now, 0))
        if now >= start + WINDOW_SECONDS:
            start, count = now, 0
        reset = max(1, math.ceil(start + WINDOW_SECONDS - now))
        if count >= self.limit:
            self._windows[identity] = (start, count)
            return RateState(self.limit, 0, reset, allowed=False)
        count += 1
        self._windows[identity] = (start, count)
        return RateState(self.limit, self.limit - count, reset, allowed=True)

    def reset(self) -> None:
        if self.shared is not None:
            self.shared.rate_reset()
        self._windows.clear()


class SharedBuckets(Protocol):
    """Buckets every process counts in (a PostgreSQL store's world: store/sql.py)."""

    def rate_hits(
        self, hits: dict[str, int], now: float, window: int
    ) -> dict[str, tuple[float, int]]:
        """Count ``hits[identity]`` requests of each identity: each one's window start and
        count after them (a request that takes the count over the limit is refused)."""
        ...

    def rate_reset(self) -> None: ...


def never_counted(rt: Runtime, op: Operation, headers: Mapping[str, str]) -> RateState | None:
    """A public operation's count: none (``GET /v1/openapi.json`` is never counted, with a key
    or without), so its answer carries no rate-limit state."""
    return None
