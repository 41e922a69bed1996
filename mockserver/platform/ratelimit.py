"""Request rate per caller identity: a fixed window of one minute on the mock clock.

All keys of one member share the bucket (``auth.rate_identity``). ``GET /v1/openapi.json`` is
never counted, with a key or without (the dispatcher asks :func:`never_counted` for public
operations). On the manual clock a window ends only when the clock is moved, so a refusal says
so (:meth:`RateLimiter.refusal`); the control plane lists the buckets, empties one and sets the
limit (``/_mock/rate-limits``, control/ratelimits.py; a reset puts the start-up limit back).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mockserver.platform.clock import Clock
from mockserver.platform.errors import ApiError

if TYPE_CHECKING:
    from mockserver.contract import Operation

WINDOW_SECONDS = 60
# A request counted in a shared bucket with its catch-up (store/replica.py): its identity,
# the window's start, and the count with it.
Counted = tuple[str, float, int]


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


@dataclass(frozen=True)
class Bucket:
    """One identity's window: when it started (on the mock clock) and the requests counted in
    it (in shared buckets refused ones too, so the count may pass the limit)."""

    identity: str
    start: float
    count: int


class RateLimiter:
    def __init__(self, limit: int, clock: Clock, shared: SharedBuckets | None = None) -> None:
        """``shared``: buckets kept in a store every process counts in (store/sql.py)."""
        self.limit = limit
        self.start_limit = limit  # what the mock started with; a reset puts it back
        self.clock = clock
        self._windows: dict[str, tuple[float, int]] = {}  # identity -> (window start, count)
        self.shared = shared

    def hit(self, identity: str, counted: Counted | None = None) -> RateState:
        """Count one request. A refused request takes nothing from the window: in memory it is
        not counted; in shared buckets any count past the limit refuses alike. ``counted``:
        the count the store made for this request with its catch-up (identity, window start,
        the count with this request), used when it was made for ``identity``."""
        now = self.clock.timestamp()
        if self.shared is not None:
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

    @property
    def changed_limit(self) -> int | None:
        """The limit set through the control plane, or None while it is the start-up one."""
        return None if self.limit == self.start_limit else self.limit

    def set_limit(self, limit: int | None) -> None:
        """Requests per window from the next request on (None: the start-up limit). The counts
        of open windows are kept."""
        self.limit = self.start_limit if limit is None else limit

    def refusal(self, state: RateState) -> ApiError:
        """The 429 for a refused request. On the manual clock the window moves only with the
        mock's clock, so the answer says so: move the clock, empty the bucket, or raise the
        limit. On the real clock the text is the window's alone."""
        message = (
            f"rate limit of {state.limit} requests per minute reached; "
            f"retry after {state.reset_seconds} seconds"
        )
        if self.clock.mode == "manual":
            message += (
                " on the mock's clock. This mock runs on the manual clock: the window moves only"
                " when that clock does, never with wall time. Move it with POST"
                " /_mock/clock/advance (mockserver's control plane), empty the bucket with DELETE"
                " /_mock/rate-limits/{workspace}/{member}, raise the limit with PUT"
                " /_mock/rate-limits, or start the mock with a higher --rate-limit"
            )
        return ApiError("rate_limited", message, headers={"Retry-After": str(state.reset_seconds)})

    def buckets(self) -> list[Bucket]:
        """The windows still open now (a person whose window has ended has a full bucket and
        is not listed)."""
        now = self.clock.timestamp()
        if self.shared is not None:
            found = self.shared.rate_buckets()
        else:
            found = {identity: window for identity, window in self._windows.items()}
        return [
            Bucket(identity, start, count)
            for identity, (start, count) in found.items()
            if now < start + WINDOW_SECONDS and count > 0
        ]

    def reset(self, identity: str | None = None) -> None:
        """Empty one identity's bucket, or every one (None)."""
        if self.shared is not None:
            self.shared.rate_reset(identity)
        if identity is None:
            self._windows.clear()
        else:
            self._windows.pop(identity, None)


class SharedBuckets(Protocol):
    """Buckets every process counts in (a PostgreSQL store's world: store/sql.py)."""

    def rate_hits(
        self, hits: dict[str, int], now: float, window: int
    ) -> dict[str, tuple[float, int]]:
        """Count ``hits[identity]`` requests of each identity: each one's window start and
        count after them (a request that takes the count over the limit is refused)."""
        ...

    def rate_buckets(self) -> dict[str, tuple[float, int]]:
        """Each identity's window start and count, as last counted."""
        ...

    def rate_reset(self, identity: str | None = None) -> None:
        """Empty one identity's bucket, or every one (None)."""
        ...


def never_counted(rt: object, op: Operation, headers: Mapping[str, str]) -> RateState | None:
    """A public operation's count: none (``GET /v1/openapi.json`` is never counted, with a key
    or without), so its answer carries no rate-limit state. ``rt``: the runtime the seam is
    given (seams.py: ``count_public``), unread here."""
    return None
