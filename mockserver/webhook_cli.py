"""``mockserver trigger`` and ``mockserver listen``: webhooks you can cause and see.

Both talk to a running mock (``--url``, default ``$MOCKSERVER_URL`` or http://127.0.0.1:8080)
through its control plane (``--control-token`` / ``$MOCKSERVER_CONTROL_TOKEN``), as the fixtures'
first owner key unless ``--key`` says otherwise; with ``--sandbox ID`` they act in that sandbox
(as its first owner key, read from ``GET /_mock/sandboxes/{id}``).

- ``trigger EVENT`` makes a subscription event happen now through a real job
  (``POST /_mock/events/trigger``) and says which job, which events and which deliveries.
- ``listen --forward-to URL`` receives on loopback, subscribes there (``POST /_mock/listeners``),
  and for each delivery checks the signature, forwards the exact bytes with the ``X-Service-*``
  headers to URL, answers the mock with URL's status (so a 5xx makes the mock retry) and
  prints one line. Ctrl-C (or SIGTERM) deletes the subscription and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from mockserver.platform import signing
from mockserver.platform.tls import tls_context

if TYPE_CHECKING:
    import httpx  # imported where used: the server, which imports this module, needs none

ENV_URL = "MOCKSERVER_URL"
ENV_TOKEN = "MOCKSERVER_CONTROL_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8080"
FAILED = 1
MAX_BODY = 16 * 1024 * 1024
FORWARD_TIMEOUT = 8.0  # below the mock's 10-second attempt timeout, so the mock hears the answer
FORWARDED_HEADERS = ("content-type",)  # and every x-service-* header


class CliError(Exception):
    pass


def subscription_events() -> list[str]:
    """The subscription events as the contract names them (``SubscriptionEventName``)."""
    from mockserver.contract import default_contract

    schemas = default_contract().document["components"]["schemas"]
    return list(schemas["SubscriptionEventName"]["enum"])


# -- talking to the mock ---------------------------------------------------------------------


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url",
        default=os.environ.get(ENV_URL) or DEFAULT_URL,
        help=f"the running mock (default ${ENV_URL} or {DEFAULT_URL})",
    )
    parser.add_argument(
        "--key", default=None, help="API key whose workspace to act in (default: first owner key)"
    )
    parser.add_argument("--sandbox", default=None, metavar="ID", help="act in this sandbox")
    parser.add_argument(
        "--control-token",
        default=os.environ.get(ENV_TOKEN),
        metavar="TOKEN",
        help=f"the mock's --control-token (default ${ENV_TOKEN})",
    )


def _headers(args: argparse.Namespace) -> dict[str, str]:
    return {"Authorization": f"Bearer {args.control_token}"} if args.control_token else {}


def _params(args: argparse.Namespace) -> dict[str, str]:
    return {"sandbox": args.sandbox} if args.sandbox else {}


async def control(
    mock: httpx.AsyncClient, method: str, path: str, body: Any = None, **params: str
) -> dict[str, Any]:
    """A control-plane call; a :class:`CliError` with the mock's own words when it refuses."""
    import httpx

    try:
        response = await mock.request(method, path, json=body, params=params or None)
    except httpx.HTTPError as exc:
        raise CliError(
            f"cannot reach the mock at {mock.base_url} ({type(exc).__name__}: {exc}); "
            "start it with `mockserver`, or pass --url"
        ) from None
    try:
        answer = response.json()
    except ValueError:
        answer = {}
    if response.status_code != 200 or not isinstance(answer, dict):
        detail = answer.get("error") if isinstance(answer, dict) else None
        raise CliError(f"{method} {path}: {response.status_code} {detail or response.text[:200]}")
    return answer


async def acting_key(mock: httpx.AsyncClient, args: argparse.Namespace) -> str | None:
    """``--key``; else a sandbox's first owner key; else None (the mock's first owner key)."""
    if args.key or not args.sandbox:
        return str(args.key) if args.key else None
    sandbox = (await control(mock, "GET", f"/_mock/sandboxes/{args.sandbox}"))["sandbox"]
    for key in sandbox["keys"]:
        if key["role"] == "owner":
            return str(key["key"])
    raise CliError(f"sandbox {args.sandbox} has no owner key; pass --key")


def _client(args: argparse.Namespace) -> httpx.AsyncClient:
    import httpx

    return httpx.AsyncClient(
        base_url=args.url, headers=_headers(args), timeout=60, verify=tls_context()
    )


def _fail(command: str, message: str) -> int:
    print(f"mockserver {command}: {message}", file=sys.stderr, flush=True)
    return FAILED


# -- trigger ---------------------------------------------------------------------------------


def build_trigger_parser(prog: str = "mockserver trigger") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Make a webhook subscription event happen now, through a real job of the "
        "running mock (no credits spent).",
    )
    parser.add_argument("event", nargs="?", metavar="EVENT", help="an event name (see --list)")
    parser.add_argument(
        "--status",
        choices=("done", "failed", "qa_failed", "cancelled"),
        help="the job's end, where several send the event (job.failed: failed or qa_failed)",
    )
    parser.add_argument("--list", action="store_true", help="name the events and exit")
    add_common(parser)
    return parser


def run_trigger(args: argparse.Namespace) -> int:
    if args.list:
        print("\n".join(subscription_events()), flush=True)
        return 0
    if not args.event:
        return _fail("trigger", "name an EVENT (mockserver trigger --list names them)")
    try:
        answer = asyncio.run(_trigger(args))
    except CliError as exc:
        return _fail("trigger", str(exc))
    print(trigger_report(answer), flush=True)
    return 0


async def _trigger(args: argparse.Namespace) -> dict[str, Any]:
    async with _client(args) as mock:
        body: dict[str, Any] = {"event": args.event}
        if args.status:
            body["status"] = args.status
        key = await acting_key(mock, args)
        if key:
            body["key"] = key
        return await control(mock, "POST", "/_mock/events/trigger", body, **_params(args))


def trigger_report(answer: dict[str, Any]) -> str:
    lines = [
        f"{answer['event']} in {answer['workspace']}: job {answer['jobId']} "
        f"({answer['kind']}), now {answer['status']}"
    ]
    for entry in answer["events"]:
        phase = f" ({entry['phase']})" if entry["phase"] else ""
        lines.append(
            f"  #{entry['sequence']:<3} {entry['occurredAt']}  {entry['event']:<22} "
            f"{entry['status']}{phase}"
        )
    sent = answer["deliveries"]
    lines.append(
        f"  deliveries enqueued: {len(sent)}"
        + (f" ({', '.join(sent)})" if sent else "")
        + ("" if sent else " (no subscription of the workspace wants it)")
    )
    return "\n".join(lines)


# -- listen ----------------------------------------------------------------------------------


def build_listen_parser(prog: str = "mockserver listen") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Subscribe to the running mock's webhooks and forward each delivery, "
        "signature checked, to a local endpoint. Ctrl-C removes the subscription.",
    )
    parser.add_argument(
        "--forward-to",
        default=None,
        metavar="URL",
        help="where to forward deliveries (without it, each is verified, printed and answered 200)",
    )
    parser.add_argument(
        "--events", default=None, metavar="E1,E2", help="only these events (default all)"
    )
    parser.add_argument(
        "--listen",
        default="127.0.0.1:0",
        metavar="HOST:PORT",
        help="where to receive from the mock (default %(default)s: a free loopback port)",
    )
    add_common(parser)
    return parser


def run_listen(args: argparse.Namespace) -> int:
    host, _, port = args.listen.rpartition(":")
    if not host or not port.isdigit():
        return _fail("listen", f"--listen must be HOST:PORT, got {args.listen!r}")
    try:
        return asyncio.run(_listen(args, host.strip("[]"), int(port)))
    except CliError as exc:
        return _fail("listen", str(exc))


class Forwarder:
    """Receives the mock's deliveries (HTTP/1.1 on loopback), checks, forwards, answers."""

    def __init__(self, forward_to: str | None) -> None:
        self.forward_to = forward_to
        self.secret = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status = await self._exchange(reader)
            try:
                phrase = http.HTTPStatus(status).phrase
            except ValueError:
                phrase = "Status"
            head = f"HTTP/1.1 {status} {phrase}\r\nContent-Length: 0\r\nConnection: close\r\n"
            writer.write(head.encode() + b"\r\n")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, UnicodeError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _exchange(self, reader: asyncio.StreamReader) -> int:
        method = (await reader.readline()).split(b" ", 1)[0]
        headers: list[tuple[str, str]] = []
        while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers.append((name.strip(), value.strip()))
        lower = {name.lower(): value for name, value in headers}
        if method != b"POST":
            return 405
        if "chunked" in lower.get("transfer-encoding", "").lower():
            return 411
        length = int(lower.get("content-length", "0"))
        if length > MAX_BODY:
            return 413
        body = await reader.readexactly(length)
        return await self.deliver(headers, lower, body)

    async def deliver(
        self, headers: list[tuple[str, str]], lower: dict[str, str], body: bytes
    ) -> int:
        timestamp = lower.get("x-service-timestamp", "")
        good = signing.verify(self.secret, timestamp, body, lower.get("x-service-signature", ""))
        forwarded = [
            (name, value)
            for name, value in headers
            if name.lower().startswith("x-service-") or name.lower() in FORWARDED_HEADERS
        ]
        if self.forward_to is None:
            status, answer = 200, "200 (not forwarded)"
        else:
            import httpx

            try:
                async with httpx.AsyncClient(
                    timeout=FORWARD_TIMEOUT, follow_redirects=False, verify=tls_context()
                ) as out:
                    response = await out.post(self.forward_to, content=body, headers=forwarded)
                status, answer = response.status_code, str(response.status_code)
            except httpx.HTTPError as exc:  # the mock retries a 502, as on a network error
                status, answer = 502, f"error: {type(exc).__name__}: {exc}".rstrip(": ")
        print(
            f"{timestamp or '-'}  {lower.get('x-service-event', '-'):<22} "
            f"{lower.get('x-service-event-id', '-')}  "
            f"signature {'ok' if good else 'BAD'}  -> {answer}",
            flush=True,
        )
        return status


async def _listen(args: argparse.Namespace, host: str, port: int) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(number, stop.set)
        except (NotImplementedError, RuntimeError):  # Windows
            signal.signal(number, lambda *_: loop.call_soon_threadsafe(stop.set))
    forwarder = Forwarder(args.forward_to)
    try:
        server = await asyncio.start_server(forwarder.handle, host, port)
    except OSError as exc:
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = server.sockets[0].getsockname()
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    shown = f"[{shown}]" if ":" in shown else shown
    receive_at = f"http://{shown}:{bound[1]}/"
    events = [e.strip() for e in args.events.split(",") if e.strip()] if args.events else None
    async with server, _client(args) as mock:
        body: dict[str, Any] = {"url": receive_at}
        if events:
            body["events"] = events
        key = await acting_key(mock, args)
        if key:
            body["key"] = key
        created = await control(mock, "POST", "/_mock/listeners", body, **_params(args))
        forwarder.secret = created["secret"]
        subscription = created["subscription"]
        where = f" sandbox {args.sandbox}," if args.sandbox else ""
        target = f"forwarding to {args.forward_to}" if args.forward_to else "not forwarding"
        print(
            f"listening on {receive_at} for {', '.join(subscription['events'])}\n"
            f"  subscription {subscription['id']} in{where} workspace {created['workspace']}, "
            f"{target}\n"
            f"  signing secret {created['secret']}\n"
            "  ready (Ctrl-C to stop)",
            flush=True,
        )
        await stop.wait()
        server.close()
        try:
            await control(mock, "DELETE", f"/_mock/listeners/{subscription['id']}", **_params(args))
        except CliError as exc:
            print(f"mockserver listen: could not delete the subscription: {exc}", file=sys.stderr)
            return FAILED
    print(f"stopped; subscription {subscription['id']} deleted", flush=True)
    return 0
