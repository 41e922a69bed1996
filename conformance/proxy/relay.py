"""The webhook relay: an endpoint a deployment delivers webhooks to, judged and forwarded.

Each delivery that reaches the relay's URL (``--relay-listen``) is judged (relay_rules.py: the
signature under ``--webhook-secret``, the timestamp's form, the headers, the event's envelope
against the contract, a redelivery's ``eventId``, a terminal status kept), then forwarded with
its exact bytes and headers to the integrator's endpoint (``--relay-to``), whose answer (status,
headers, body) goes back to the deployment: a 5xx of the integrator makes the deployment retry,
as it would without the relay. A path below the relay's URL is kept below ``--relay-to``'s.

A finding is the deployment's (it delivered badly), named by the suite's check whose rule it
broke. What the integrator answers is never a finding: an integrator that cannot be reached
(answered 502 to the deployment, which then retries) or that answers a 4xx is a note and a count.
Secrets are never printed nor kept in a finding (its exchange masks them).

Standalone, before ``conformance proxy --relay-to`` is at hand::

    python -m conformance.proxy.relay --relay-to http://127.0.0.1:3000/hooks \\
        --relay-listen 127.0.0.1:8787 --webhook-secret "$SECRET"

prints each finding as one line (and each delivery on stderr) and a summary on Ctrl-C/SIGTERM;
it exits 1 when there were findings.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
import uvicorn
from starlette.requests import Request

from conformance.contract import Contract
from conformance.profiles import PROFILES
from conformance.proxy.findings import Finding
from conformance.proxy.relay_rules import MEMORY, RETRIED, RULES, DeliveryJudge, Verdict
from conformance.receiver import parse_listen
from conformance.target import Exchange
from mockserver.platform.tls import tls_context
from mockserver.testing import prompt_server

FORWARD_TIMEOUT = 30.0  # seconds the integrator has to answer (the deployment's own may be less)
KEPT_BYTES = 4096  # of each body, in a finding's exchange
MAX_FINDINGS = 1_000  # findings kept, with their exchanges, for the reports; more are counted
MAX_NOTES = 1_000
SECRET_ENV = "CONFORMANCE_WEBHOOK_SECRET"  # one more secret, kept off the command line
# Not forwarded either way: connection-level headers, and what httpx sets anew.
HOP_BY_HOP = frozenset(
    ("connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
     "transfer-encoding", "upgrade", "host", "content-length", "content-encoding")
)  # fmt: skip


class Relay:
    """``Relay(forward_to, secrets).start()``: deliveries to :attr:`url` are judged and
    forwarded to ``forward_to``; :attr:`findings` and :attr:`counts` say what was seen.

    ``on_finding`` and ``on_note`` are called (from the relay's thread) as each happens;
    ``on_delivery`` once per delivery with a one-line summary. ``memory`` bounds the events,
    event identities and jobs remembered (each)."""

    def __init__(
        self,
        forward_to: str,
        secrets: Sequence[str] = (),
        listen: str = "127.0.0.1:0",
        *,
        contract: Contract | None = None,
        profile: str = "contract",
        on_finding: Callable[[Finding], None] | None = None,
        on_note: Callable[[str], None] | None = None,
        on_delivery: Callable[[str], None] | None = None,
        memory: int = MEMORY,
        forward_timeout: float = FORWARD_TIMEOUT,
    ) -> None:
        parts = urlsplit(forward_to)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"--relay-to must be an http(s) URL, not {forward_to!r}")
        self.forward_to = forward_to
        self.secrets = [s for s in secrets if s]
        contract = contract or Contract(profile=profile)
        self.judge = DeliveryJudge(contract.held, self.secrets, memory)
        self.on_finding, self.on_note, self.on_delivery = on_finding, on_note, on_delivery
        self.forward_timeout = forward_timeout
        self.findings: list[Finding] = []
        self.notes: deque[str] = deque(maxlen=MAX_NOTES)
        self.counts: Counter[str] = Counter()  # see :meth:`summary`
        self.answers: Counter[str] = Counter()  # the integrator's statuses ("502 unreachable")
        self.judged: Counter[str] = Counter()  # deliveries judged, by the check that judged them
        self.by_rule: Counter[str] = Counter()  # findings (kept or not), by rule
        self._lock = threading.Lock()
        self._masks = {s: f"${{WEBHOOK_SECRET_{i}}}" for i, s in enumerate(self.secrets, 1)}
        self.host, port = parse_listen(listen)
        self.port = port or _free_port(self.host)
        config = uvicorn.Config(
            self.app,
            host=self.host,
            port=self.port,
            log_level="error",
            lifespan="off",
            interface="asgi3",
        )
        self.server = prompt_server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True, name="relay")
        # One client for every forward, made in the relay's own loop (a client's TLS context
        # costs ~0.1 s to make) and closed there when the relay stops.
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def url(self) -> str:
        """Where a deployment delivers (subscribe this URL, or a path below it)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> Relay:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the webhook relay could not listen on {self.host}:{self.port}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        client, loop = self._client, self._loop
        if client is not None and loop is not None and loop.is_running():
            closing = asyncio.run_coroutine_threadsafe(client.aclose(), loop)
            with contextlib.suppress(Exception):
                closing.result(timeout=5)
        self.server.exit_now()
        self.thread.join(timeout=10)

    def __enter__(self) -> Relay:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def summary(self) -> dict[str, Any]:
        """Counts for the reports: deliveries, forwarded (the integrator answered), unreachable,
        redeliveries, unverified (no secret given), notes; findings by rule; the integrator's
        answers by status; the deliveries each check judged. No secret."""
        with self._lock:
            return {
                "deliveries": self.counts["deliveries"],
                "forwarded": self.counts["forwarded"],
                "unreachable": self.counts["unreachable"],
                "redeliveries": self.counts["redeliveries"],
                "unverified": self.counts["unverified"],
                "other": self.counts["other"],
                "notes": self.counts["notes"],
                "findings": self.counts["findings"],
                "findingsKept": len(self.findings),
                "findingsByRule": dict(self.by_rule),
                "answers": dict(self.answers),
                "judged": dict(self.judged),
                "secrets": len(self.secrets),
            }

    # -- one delivery ------------------------------------------------------------------------

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        body = await request.body()
        raw = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        headers = {k.lower(): v for k, v in raw}
        target = _below(self.forward_to, scope["path"], scope.get("query_string", b""))
        if scope["method"] != "POST":  # not a delivery (a health check, say): passed through
            with self._lock:
                self.counts["other"] += 1
            status, answer_headers, answer = await self._forward(
                scope["method"], target, raw, body, None
            )
            await _answer(send, status, answer_headers, answer)
            return
        try:
            with self._lock:
                verdict = self.judge.judge(headers, body)
        except Exception as exc:  # a judge that fails is said, never fatal to forwarding
            self._note(f"could not judge a delivery to {scope['path']}: {exc!r}")
            verdict = Verdict(RULES[0], None, headers.get("x-service-event"), None)
        started = time.monotonic()
        status, answer_headers, answer = await self._forward(
            scope["method"], target, raw, body, verdict
        )
        exchange = Exchange(
            index=0,
            method=scope["method"],
            url=self.url + scope["path"],
            request_headers=dict(raw),
            request_body=body[:KEPT_BYTES],
            status=status,
            response_headers={k.lower(): v for k, v in answer_headers},
            response_body=answer[:KEPT_BYTES],
            elapsed=time.monotonic() - started,  # the integrator's time to answer
            operation_id=verdict.operation_id,
            masks=self._masks,
        )
        self._record(verdict, headers, status, exchange)
        await _answer(send, status, answer_headers, answer)

    async def _forward(
        self,
        method: str,
        target: str,
        raw: list[tuple[str, str]],
        body: bytes,
        verdict: Verdict | None,
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        sent = [(k, v) for k, v in raw if k.lower() not in HOP_BY_HOP]
        if self._client is None:
            self._loop = asyncio.get_running_loop()
            self._client = httpx.AsyncClient(
                timeout=self.forward_timeout, follow_redirects=False, verify=tls_context()
            )
        try:
            response = await self._client.request(method, target, content=body, headers=sent)
        except httpx.HTTPError as exc:
            why = f"{type(exc).__name__}: {exc}".rstrip(": ")
            self._note(f"the integrator at {target} could not be reached ({why}); answered 502")
            with self._lock:
                self.counts["unreachable"] += 1
                self.answers["502 unreachable"] += 1
            return 502, [("content-type", "text/plain")], b"the integrator could not be reached"
        kept = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in HOP_BY_HOP]
        status = response.status_code
        with self._lock:
            self.counts["forwarded"] += 1
            self.answers[str(status)] += 1
        if verdict is not None and 400 <= status < 500:
            self._note(
                f"the integrator answered {status} to {verdict.event or 'a delivery'} "
                f"{verdict.event_id or ''}".rstrip()
                + (
                    " (a permanent rejection: the deployment must not retry it)"
                    if status not in RETRIED
                    else ""
                )
            )
        return status, kept, response.content

    def _record(
        self, verdict: Verdict, headers: dict[str, str], status: int, exchange: Exchange
    ) -> None:
        found = [
            Finding(
                b.rule,
                "deployment",
                b.message,
                operation_id=verdict.operation_id,
                request_id=headers.get("x-request-id"),
                exchange=exchange,
                quote=b.quote,
            )
            for b in verdict.broken
        ]
        with self._lock:
            self.judge.answered(verdict, headers, None if status == 502 else status)
            self.counts["deliveries"] += 1
            self.counts["redeliveries"] += verdict.redelivery
            self.counts["unverified"] += verdict.verified is None
            self.counts["findings"] += len(found)
            self.by_rule.update(f.rule for f in found)
            self.judged[verdict.rule] += 1
            room = MAX_FINDINGS - len(self.findings)
            self.findings.extend(found[: max(room, 0)])
        for note in verdict.notes:
            self._note(note)
        if self.on_delivery is not None:
            signature = {True: "ok", False: "BAD", None: "unverified"}[verdict.verified]
            self.on_delivery(
                f"{verdict.event or '-'} {verdict.event_id or '-'} signature {signature}"
                f"{' (redelivery)' if verdict.redelivery else ''} -> {status}"
                f"{f', {len(found)} finding(s)' if found else ''}"
            )
        if self.on_finding is not None:
            for finding in found:
                self.on_finding(finding)

    def _note(self, note: str) -> None:
        with self._lock:
            self.counts["notes"] += 1
            self.notes.append(note)
        if self.on_note is not None:
            self.on_note(note)


async def _answer(send: Any, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
    start = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _below(base: str, path: str, query: bytes) -> str:
    """``base`` for a delivery to the relay's root; a path below the root kept below ``base``."""
    target = base if path in ("", "/") else base.rstrip("/") + path
    if query:
        target += ("&" if "?" in target else "?") + query.decode("latin-1")
    return target


# -- standalone --------------------------------------------------------------------------------


def add_arguments(parser: Any, *, required: bool) -> None:
    """The relay's options (``--relay-to``, ``--relay-listen``, ``--webhook-secret``): the
    standalone relay's, and ``conformance proxy``'s (where ``--relay-to`` is optional)."""
    parser.add_argument(
        "--relay-to",
        required=required,
        metavar="URL",
        help="your webhook endpoint: deliveries are judged and forwarded there"
        + ("" if required else " (opens the relay)"),
    )
    parser.add_argument(
        "--relay-listen",
        default="127.0.0.1:8787",
        metavar="HOST:PORT",
        help="where the deployment delivers (default 127.0.0.1:8787)",
    )
    parser.add_argument(
        "--webhook-secret",
        action="append",
        default=[],
        metavar="SECRET",
        help="a signing secret (repeatable: a delivery signed with any is good); also read "
        f"from ${SECRET_ENV}; without one, signatures are not judged",
    )


def secrets_of(args: argparse.Namespace) -> list[str]:
    """The secrets given (``--webhook-secret``), and the one in ``$CONFORMANCE_WEBHOOK_SECRET``."""
    secrets = list(args.webhook_secret)
    if os.environ.get(SECRET_ENV):
        secrets.append(os.environ[SECRET_ENV])
    return secrets


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m conformance.proxy.relay",
        description="Receive a deployment's webhook deliveries, judge each by the contract and "
        "the interface document's rules, and forward it to your endpoint, passing its answer "
        "back.",
    )
    add_arguments(parser, required=True)
    parser.add_argument(
        "--profile",
        choices=PROFILES,
        default="contract",
        help="contract: only what the interface document states (default); full: the whole "
        "contract, inferred rules included",
    )
    parser.add_argument("--memory", type=int, default=MEMORY, help=argparse.SUPPRESS)
    return parser


def summary_line(summary: dict[str, Any]) -> str:
    rules = ", ".join(f"{rule} {n}" for rule, n in sorted(summary["findingsByRule"].items()))
    answers = ", ".join(f"{status}: {n}" for status, n in sorted(summary["answers"].items()))
    return (
        f"relay: {summary['deliveries']} deliveries ({summary['redeliveries']} redelivered, "
        f"{summary['unverified']} unverified), {summary['forwarded']} forwarded, "
        f"{summary['unreachable']} unreachable; integrator answers: {answers or 'none'}; "
        f"{summary['findings']} finding(s){f' ({rules})' if rules else ''}; "
        f"{summary['notes']} note(s)"
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    secrets = secrets_of(args)
    done = threading.Event()

    def finding(f: Finding) -> None:
        print(f.line(), flush=True)

    def note(text: str) -> None:
        print(f"NOTE {text}", file=sys.stderr, flush=True)

    def delivery(text: str) -> None:
        print(f"DELIVERY {text}", file=sys.stderr, flush=True)

    try:
        relay = Relay(
            args.relay_to,
            secrets,
            args.relay_listen,
            profile=args.profile,
            on_finding=finding,
            on_note=note,
            on_delivery=delivery,
            memory=args.memory,
        )
        relay.start()
    except (ValueError, RuntimeError) as exc:
        print(f"relay: {exc}", file=sys.stderr)
        return 2
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    judged = f"{len(secrets)} secret(s)" if secrets else "no secret: signatures not judged"
    print(
        f"relay: listening on {relay.url}, forwarding to {args.relay_to} "
        f"({judged}, profile {args.profile})",
        file=sys.stderr,
        flush=True,
    )
    while not done.wait(0.5):
        pass
    relay.stop()
    summary = relay.summary()
    print(summary_line(summary), flush=True)
    return 1 if summary["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
