"""A run's progress as plain lines, for output that is not a terminal (a CI log).

:class:`ProgressLog` listens to a run (``RunConfig.on_event``) and prints, flushed, one line:

* as each check starts and ends, with the run's elapsed time and its running counts (checks done
  of those that make requests, requests, judgements and failures so far; at its end the check's
  own verdict, requests and time);
* for every wait longer than :data:`WAIT_SHOWN` seconds: what it waits for, and until when
  (wall clock, UTC, to the second);
* whenever :data:`HEARTBEAT_SECONDS` passed without a line: what is still running, or still
  waited for (a daemon thread, stopped when the ``with`` block ends).

Every line starts ``[conformance MM:SS]`` (the run's elapsed time; ``H:MM:SS`` past an hour) and
holds no ANSI code and no carriage return, so GitHub Actions and GitLab CI logs read it as it is.

The events it reads: ``check-start`` (a Check), ``check-end`` (its CheckResult), ``exchange``
(an Exchange), ``wait`` (a :class:`~conformance.target.Wait`), and ``requests`` (:class:`Sent`:
requests a worker process sent, counted there and reported in batches by :class:`Batch`, so that
a run with ``--workers N`` shows its requests without a message per exchange).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from conformance.checks import Check
from conformance.outcomes import CheckResult
from conformance.skips import NOTHING_TO_JUDGE
from conformance.target import Exchange, Wait

HEARTBEAT_SECONDS = 25.0  # the longest silence: under 30 s, with room for a busy machine
WAIT_SHOWN = 5.0  # a wait longer than this is announced
BATCH_SECONDS = 1.0  # how often a worker reports the requests it sent


@dataclass(frozen=True)
class Sent:
    """Requests sent for one check (None: outside any check) since the last report."""

    check: str | None
    count: int


class Batch:
    """A worker's requests, counted per check and reported at most every ``every`` seconds."""

    def __init__(
        self, every: float = BATCH_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.every = every
        self.clock = clock
        self.counts: Counter[str | None] = Counter()
        self.taken = clock()

    def add(self, exchange: Exchange) -> list[Sent]:
        """Count ``exchange``; the batch when it is due (else nothing)."""
        self.counts[exchange.check] += 1
        return self.take() if self.clock() - self.taken >= self.every else []

    def take(self) -> list[Sent]:
        """What was counted since the last report (and start counting again)."""
        sent = [Sent(check, count) for check, count in self.counts.items()]
        self.counts.clear()
        self.taken = self.clock()
        return sent


def counted(n: int, noun: str) -> str:
    """``1 request``, ``2 requests``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def clock_time(epoch: float) -> str:
    """``epoch`` as wall-clock time in UTC, to the second: ``14:03:27 UTC``."""
    return time.strftime("%H:%M:%S UTC", time.gmtime(round(epoch)))


def elapsed(seconds: float) -> str:
    """``MM:SS``, or ``H:MM:SS`` from an hour on."""
    minutes, secs = divmod(round(max(seconds, 0.0)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def wait_text(wait: Wait) -> str:
    """What a wait waits for and until when: ``Retry-After on 429 rate_limited, in
    auth-missing-key, until 14:03:27 UTC``."""
    by = f", in {wait.check}" if wait.check else ""
    return f"{wait.why}{by}, until {clock_time(wait.until)}"


def waiting(wait: Wait) -> str:
    """The line that announces a wait: ``waiting up to 60 s for ...``."""
    return f"waiting up to {round(wait.seconds)} s for {wait_text(wait)}"


def verdict_of(result: CheckResult) -> str:
    """The verdict a check ended with: ``passed``, ``FAILED (2)``, ``skipped (why)``."""
    if result.failures:
        return f"FAILED ({result.failed})"
    if result.passed:
        return "passed"
    return f"skipped ({result.skip_summary() or NOTHING_TO_JUDGE})"


@dataclass
class _Running:
    started: float
    requests: int = 0


class ProgressLog:
    """The run's progress as lines on ``out`` (see the module's documentation). Use it as the
    run's listener inside ``with``: the heartbeat runs for the block.

    ``interval`` (default :data:`HEARTBEAT_SECONDS`) is the longest silence; ``clock`` measures
    elapsed time (monotonic seconds) and ``now`` tells the wall clock (epoch seconds)."""

    def __init__(
        self,
        out: TextIO,
        checks: list[Check],
        *,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.out = out
        self.total = sum(1 for c in checks if c.run is not None)
        self.interval = HEARTBEAT_SECONDS if interval is None else interval
        self.clock = clock
        self.now = now
        self.started = self.last = clock()
        self.done = self.requests = self.judgements = self.failures = 0
        self.running: dict[str, _Running] = {}
        self.ended: dict[str, tuple[int, int]] = {}  # check -> (judgements, failures) at its end
        self.waits: dict[str | None, Wait] = {}  # the latest wait of each check, until it ends
        self._lock = threading.RLock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the heartbeat --------------------------------------------------------------------------

    def __enter__(self) -> ProgressLog:
        self._say(f"{self.total} checks to run")
        self._thread = threading.Thread(target=self._beat, daemon=True, name="progress")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()

    def _beat(self) -> None:
        while not self._stopped.wait(self._until_due()):
            self.beat()

    def _until_due(self) -> float:
        with self._lock:
            return max(0.001, min(self.interval, self.last + self.interval - self.clock()))

    def beat(self) -> None:
        """Say what is still going on, if nothing was said for the interval."""
        with self._lock:
            if self.clock() - self.last >= self.interval:
                self._say(self._still())

    def _still(self) -> str:
        waits = [w for w in self.waits.values() if w.until > self.now()]
        if waits:
            return "still waiting for " + "; ".join(wait_text(w) for w in waits)
        if not self.running:
            return f"still running ({self._counts()})"
        now = self.clock()
        doing = "; ".join(
            f"{name}: {counted(r.requests, 'request')}, elapsed {elapsed(now - r.started)}"
            for name, r in self.running.items()
        )
        return f"still running {doing} ({self._counts()})"

    # -- the listener ---------------------------------------------------------------------------

    def __call__(self, event: str, payload: Any) -> None:
        with self._lock:
            if event == "exchange":
                self._count(payload.check, 1)
            elif event == "requests":
                self._count(payload.check, payload.count)
            elif event == "preflight":  # its requests count in the run's, before any check
                self._count(None, payload.requests)
            elif event == "wait":
                self.waits[payload.check] = payload
                if payload.seconds > WAIT_SHOWN:
                    self._say(waiting(payload))
            elif event == "check-start":
                self.running[payload.name] = _Running(self.clock())
                self.waits.pop(None, None)  # what the run waited for before it has come
                self._say(f"start {payload.name} ({self._counts()})")
            elif event == "check-end":
                self._end(payload)
            elif event == "prepare-start":  # its long jobs start now, judged after the rest
                self._say(f"prepare {payload.name}: its jobs start now, judged later")
            elif event == "plan":  # with --time-budget: the requests the rate allows in it
                self._say(payload.describe())
            elif event == "depth-start":  # a later turn of a check that already ended once
                self.running[payload.name] = _Running(self.clock())
                self._say(f"more of {payload.name} ({self._counts()})")
            elif event == "depth-end":
                self._end(payload, again=True)

    def _count(self, check: str | None, n: int) -> None:
        self.requests += n
        self.waits.pop(check, None)  # a request was sent: its check no longer waits
        if check in self.running:
            self.running[check].requests += n

    def _end(self, result: CheckResult, again: bool = False) -> None:
        """A check's turn ended: its first (``check-end``) or a later one (``depth-end``); the
        running counts take what the check added since its last turn ended."""
        running = self.running.pop(result.name, None)
        self.waits.pop(result.name, None)
        self.done += 0 if again else 1
        judgements, failures = self.ended.get(result.name, (0, 0))
        self.judgements += result.judgements - judgements
        self.failures += result.failed - failures
        self.ended[result.name] = (result.judgements, result.failed)
        took = f" in {round(self.clock() - running.started)} s" if running else ""
        requests = counted(result.requests, "request")
        what = f"more of {result.name}" if again else result.name
        self._say(f"end {what}: {verdict_of(result)}, {requests}{took} ({self._counts()})")

    def _counts(self) -> str:
        return (
            f"checks {self.done}/{self.total}, {counted(self.requests, 'request')}, "
            f"{counted(self.judgements, 'judgement')}, {counted(self.failures, 'failure')}"
        )

    def _say(self, text: str) -> None:
        self.last = self.clock()
        line = f"[conformance {elapsed(self.last - self.started)}] {text}"
        print(printable(line), file=self.out, flush=True)


def printable(text: str) -> str:
    """``text`` as one line without control characters (a deployment's words may hold escape
    codes or line breaks): each run of them and of spaces becomes one space."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())
