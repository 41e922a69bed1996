"""The mock's one clock: rate-limit windows, cursor lifetimes, jobs and deliveries all read it.

``real`` follows the wall clock; ``manual`` stands still until the control plane moves it, so tests
never sleep.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

Listener = Callable[[datetime], None]


def parse_time(value: str) -> datetime:
    """An ISO 8601 timestamp (``Z`` allowed) as an aware UTC datetime."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


class Clock:
    """Base clock. Listeners are told whenever time jumps (manual advance)."""

    mode = "real"

    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def now(self) -> datetime:
        return datetime.now(UTC)

    def timestamp(self) -> float:
        return self.now().timestamp()

    def on_change(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def _changed(self) -> None:
        now = self.now()
        for listener in list(self._listeners):
            listener(now)


class RealClock(Clock):
    """The wall clock, in UTC."""


class ManualClock(Clock):
    """A clock that moves only when told to."""

    mode = "manual"

    def __init__(self, start: datetime) -> None:
        super().__init__()
        self._now = start.astimezone(UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> datetime:
        if seconds < 0:
            raise ValueError("the clock never goes backwards")
        self._now += timedelta(seconds=seconds)
        self._changed()
        return self._now

    def rewind(self, moment: datetime) -> None:
        """Put the clock back where a failed transaction found it (no listener is told)."""
        self._now = moment.astimezone(UTC)

    def set(self, moment: datetime) -> None:
        """Put the clock at a moment (used when a snapshot is restored)."""
        self._now = moment.astimezone(UTC)
        self._changed()


def make_clock(mode: str, start: datetime) -> Clock:
    if mode == "manual":
        return ManualClock(start)
    if mode == "real":
        return RealClock()
    raise ValueError(f"unknown clock mode {mode!r}; use 'real' or 'manual'")
