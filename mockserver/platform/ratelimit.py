"""Request rate per caller identity: a fixed window of one minute on the mock clock.

All keys of one member share the bucket (``auth.rate_identity``). ``GET /v1/openapi.json`` is
never counted, with a key or without (the dispatcher asks :func:`never_counted` for public
operations).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

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
    def __init__(self, limit: int, clock: Clock) -> None:
        self.limit = limit
        self.clock = clock
        self._windows: dict[str, tuple[float, int]] = {}  # identity -> (window start, count)
        self.changed: set[str] = set()  # identities counted since a store last wrote them

    def hit(self, identity: str) -> RateState:
        """Count one request; a refused request is not counted."""
        now = self.clock.timestamp()
        start, count = self._windows.get(identity, (now, 0))
        if now >= start + WINDOW_SECONDS:
            start, count = now, 0
        reset = max(1, math.ceil(start + WINDOW_SECONDS - now))
        if count >= self.limit:
            self._windows[identity] = (start, count)
            self.changed.add(identity)
            return RateState(self.limit, 0, reset, allowed=False)
        count += 1
        self._windows[identity] = (start, count)
        self.changed.add(identity)
        return RateState(self.limit, self.limit - count, reset, allowed=True)

    def reset(self) -> None:
        self.changed.update(self._windows)
        self._windows.clear()

    def window(self, identity: str) -> tuple[float, int] | None:
        """An identity's window (start, count), or None."""
        return self._windows.get(identity)

    def load(self, identity: str, window: tuple[float, int] | None) -> None:
        """Take an identity's window another process counted (a shared store)."""
        if window is None:
            self._windows.pop(identity, None)
        else:
            self._windows[identity] = (float(window[0]), int(window[1]))


def never_counted(rt: Runtime, op: Operation, headers: Mapping[str, str]) -> RateState | None:
    """A public operation's count: none (``GET /v1/openapi.json`` is never counted, with a key
    or without), so its answer carries no rate-limit state."""
    return None
