"""The judge in a process of its own, so that judging never slows forwarding down.

Judging an exchange costs a few milliseconds of Python (the response schema, the observers,
the sequences); in the forwarding process it would hold the interpreter while requests wait.
:class:`JudgeProcess` forks a child (before the server starts any thread) that runs the
:class:`~conformance.proxy.session.ProxySession`: the forwarder hands each exchange to
:meth:`JudgeProcess.seen`, which queues it for the child without waiting (at most
:data:`QUEUE_SIZE` in flight; beyond, the exchange is forwarded but not judged, and counted).
The child runs at a lower scheduling priority (:data:`JUDGE_NICENESS`): on a busy machine
forwarding gets the CPU first and judging what is left, falling behind (and, past the queue,
dropping exchanges, counted) rather than slowing the traffic down.
The child prints the findings as they happen and the progress lines, and on :meth:`stop`
judges what is queued, adds the findings the parent's other sources (the webhook relay) made,
writes the reports and answers the exit status and its summary line.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import sys
from collections.abc import Callable
from typing import Any

from conformance.proxy.findings import Finding
from conformance.proxy.forward import Seen
from conformance.proxy.session import ProxySession

QUEUE_SIZE = 10_000  # exchanges on their way to the judge
JUDGE_NICENESS = 10  # the judge's scheduling priority below the forwarder's (os.nice)


class JudgeProcess:
    def __init__(
        self,
        make_session: Callable[[], ProxySession],
        write: Callable[[ProxySession, int], None],
    ) -> None:
        self.make_session = make_session
        self.write = write
        self.dropped = 0
        context = multiprocessing.get_context("fork")
        self.queue: Any = context.Queue(QUEUE_SIZE)
        self.answers, self._child_end = context.Pipe(duplex=False)
        self.process = context.Process(target=self._run, name="proxy-judge", daemon=True)

    def start(self) -> JudgeProcess:
        self.process.start()
        self._child_end.close()
        return self

    def seen(self, seen: Seen) -> None:
        """Called by the forwarder for each exchange: queued, never waited for."""
        try:
            self.queue.put_nowait(seen)
        except queue.Full:
            self.dropped += 1

    def stop(self, status: int, fail_on: str, findings: list[Finding]) -> tuple[int, str]:
        """Judge what is queued, write the reports: (exit status, summary line)."""
        self.queue.put(("end", status, fail_on, self.dropped, findings))
        code, summary = self.answers.recv()
        self.process.join(timeout=30)
        return code, summary

    def _run(self) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with contextlib.suppress(OSError):
            os.nice(JUDGE_NICENESS)  # forwarding first: judging takes the CPU it leaves
        session = self.make_session().start()
        while True:
            item = self.queue.get()
            if isinstance(item, Seen):
                session.seen(item)
                continue
            _, status, fail_on, dropped, findings = item
            break
        session.unjudged += dropped
        session.stop()
        for finding in findings:
            session.record(finding)
        code = status if status else (1 if session.failed(fail_on) else 0)
        try:
            self.write(session, code)
        finally:
            self._child_end.send((code, session.summary()))
            sys.stdout.flush()
