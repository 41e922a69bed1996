"""Work that time drives: jobs moving on, runs reaching checkpoints, posts publishing.

Areas register a *ticker* with :func:`ticker`. A ticker brings its part of the world up to a
moment and answers when it next has something to do (an epoch second), or None. The runtime
runs the tickers whenever time may have moved: before each API request, whenever the manual
clock is advanced, and about once a second for the real clock. Because tickers apply every
transition that fell due, in order and stamped with the moment it fell due, advancing the
manual clock by an hour gives the same history as living through that hour. A tick is a
transaction: a ticker that fails leaves the state as it was before the tick.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from mockserver.platform.clock import Clock
from mockserver.platform.transactions import UnitOfWork

# A ticker is given the scheduler's subject (the runtime whose world it ticks) and the moment.
Ticker = Callable[[Any, datetime], "float | None"]
_TICKERS: dict[str, Ticker] = {}


def ticker(name: str) -> Callable[[Ticker], Ticker]:
    def register(func: Ticker) -> Ticker:
        _TICKERS[name] = func
        return func

    return register


class Scheduler:
    def __init__(self, clock: Clock, unit_of_work: UnitOfWork, subject: object) -> None:
        """``unit_of_work`` runs a tick as one transaction (retried on the store);
        ``subject`` is what each ticker is given (the scheduler itself never reads it)."""
        self._clock = clock
        self._unit_of_work = unit_of_work
        self._subject = subject
        self.next_due: float | None = 0.0  # run at the first tick
        self._running = False

    def due(self, when: float) -> None:
        """Something will need doing at ``when``: make sure the next tick runs by then."""
        if self.next_due is None or when < self.next_due:
            self.next_due = when

    def tick(self, force: bool = False) -> None:
        now = self._clock.now()
        if self._running or (
            not force and (self.next_due is None or now.timestamp() < self.next_due)
        ):
            return
        self._running = True
        try:
            # Its own transaction, or the caller's when one is open; run again, caught up,
            # when another process sharing the store wrote first.
            self.next_due = self._unit_of_work(lambda: self._run(now))
        finally:
            self._running = False

    def _run(self, now: datetime) -> float | None:
        upcoming: list[float] = []
        for func in list(_TICKERS.values()):
            when = func(self._subject, now)
            if when is not None:
                upcoming.append(when)
        return min(upcoming) if upcoming else None

    def describe(self) -> dict[str, Any]:
        return {"tickers": sorted(_TICKERS), "nextDue": self.next_due}
