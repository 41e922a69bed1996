"""One proxy session: what passed is judged off the forwarding path, findings printed as they
happen, and everything needed for the reports kept, bounded.

The forwarder hands each exchange to :meth:`ProxySession.seen`, which only queues it (at most
:data:`QUEUE_SIZE`; beyond, an exchange is forwarded but not judged, and counted so): one judge
thread judges them in order, prints each finding as one line (``FINDING side rule operation:
message [x-request-id ...]``), adds the exchange to the HAR archive, and keeps the first
:data:`FINDINGS_KEPT` findings with their exchanges for the reports (every finding is counted).
A heartbeat prints a progress line, ``[conformance proxy MM:SS] ...`` in the style of
conformance/progress.py, at most every :data:`HEARTBEAT_SECONDS` when something was judged.

Other sources of findings (the webhook relay, :class:`Relay`: ``findings``, ``start()``,
``stop()``) run beside the proxy; their findings join the session's (:meth:`record`) before
the reports are written. The session runs in the judge's own process (conformance/proxy/
process.py).
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections import Counter, deque
from typing import Any, Protocol, TextIO

from conformance.proxy.findings import SIDES, Finding
from conformance.proxy.forward import Seen
from conformance.proxy.har import HarRecorder
from conformance.proxy.judge import Judge

QUEUE_SIZE = 10_000  # exchanges waiting for the judge
FINDINGS_KEPT = 1_000  # findings kept with their exchanges for the reports
HEARTBEAT_SECONDS = 25.0
FAIL_ON = ("any", "client", "deployment", "none")
ADDED_KEPT = 10_000  # the latest exchanges whose added latency is kept (for its percentiles)


class Relay(Protocol):
    """Another source of findings the session runs beside the proxy (the webhook relay)."""

    findings: list[Finding]

    def start(self) -> Any: ...

    def stop(self) -> Any: ...


class ProxySession:
    def __init__(
        self,
        judge: Judge,
        *,
        out: TextIO | None = None,
        har: HarRecorder | None = None,
        heartbeat: float = HEARTBEAT_SECONDS,
        started: float | None = None,
    ) -> None:
        self.judge = judge
        self.out = out or sys.stdout
        self.har = har
        self.heartbeat = heartbeat
        self.findings: list[Finding] = []  # the first FINDINGS_KEPT
        self.counts: Counter[str] = Counter()  # side -> findings
        self.by_rule: Counter[tuple[str, str]] = Counter()  # (rule, side) -> findings
        self.exchanges = 0
        self.added: deque[float] = deque(maxlen=ADDED_KEPT)  # seconds the proxy added, latest
        self.unjudged = 0  # queue full: forwarded, not judged
        self.started = time.time()
        self._clock = time.monotonic() if started is None else started
        self._queue: queue.Queue[Seen | None] = queue.Queue(QUEUE_SIZE)
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._worker = threading.Thread(target=self._work, name="proxy-judge", daemon=True)
        self._beat = threading.Thread(target=self._heartbeat, name="proxy-beat", daemon=True)

    # -- life -----------------------------------------------------------------------------------

    def start(self) -> ProxySession:
        self._worker.start()
        self._beat.start()
        return self

    def stop(self) -> None:
        """Judge what is queued, then stop."""
        self._queue.put(None)
        self._worker.join()
        self._stopped.set()
        self._beat.join(timeout=5)

    def seen(self, seen: Seen) -> None:
        """Called by the forwarder for each exchange: queued, never waited for."""
        try:
            self._queue.put_nowait(seen)
        except queue.Full:
            with self._lock:
                self.unjudged += 1

    # -- judging ----------------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            seen = self._queue.get()
            if seen is None:
                return
            try:
                exchange, findings = self.judge.judge(seen)
            except Exception as exc:  # a judge that crashes is said, never fatal to forwarding
                self.line(f"could not judge {seen.method} {seen.url}: {exc!r}")
                continue
            with self._lock:
                self.exchanges += 1
                if seen.total:
                    self.added.append(max(0.0, seen.total - seen.elapsed))
            if self.har is not None:
                self.har.add(exchange, seen.started)
            for finding in findings:
                self.record(finding)
                self.print(finding.line())

    def record(self, finding: Finding) -> None:
        """Count a finding, and keep it for the reports (the first FINDINGS_KEPT)."""
        with self._lock:
            self.counts[finding.side] += 1
            self.by_rule[(finding.rule, finding.side)] += 1
            if len(self.findings) < FINDINGS_KEPT:
                self.findings.append(finding)

    def failed(self, fail_on: str) -> bool:
        """Whether the findings fail the session under ``--fail-on``."""
        if fail_on == "none":
            return False
        if fail_on == "any":
            return sum(self.counts.values()) > 0
        return self.counts[fail_on] > 0

    # -- printing ---------------------------------------------------------------------------------

    def print(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def line(self, text: str) -> None:
        """A progress line, as conformance/progress.py writes them."""
        self.print(f"[conformance proxy {stamp(self._clock)}] {text}")

    def added_latency(self) -> dict[str, float | int]:
        """What forwarding added to the upstream's time (the request read, the answer passed
        on), over the latest exchanges: p50 and p99 in milliseconds."""
        times = sorted(self.added)
        if not times:
            return {"exchanges": 0}
        return {
            "exchanges": len(times),
            "p50Ms": round(times[len(times) // 2] * 1000, 3),
            "p99Ms": round(times[min(len(times) - 1, int(len(times) * 0.99))] * 1000, 3),
        }

    def summary(self) -> str:
        sides = ", ".join(f"{self.counts[side]} {side}" for side in SIDES)
        unjudged = f"; {self.unjudged} not judged (the judge fell behind)" if self.unjudged else ""
        return f"{self.exchanges} exchanges judged, findings: {sides}{unjudged}"

    def _heartbeat(self) -> None:
        last = -1
        while not self._stopped.wait(self.heartbeat):
            if self.exchanges != last:
                last = self.exchanges
                self.line(self.summary())


def stamp(since: float) -> str:
    """The time since ``since`` (monotonic) as progress lines show it: MM:SS, H:MM:SS."""
    seconds = int(time.monotonic() - since)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes:02d}:{seconds:02d}"
