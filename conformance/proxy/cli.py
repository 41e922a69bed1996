"""``conformance proxy``: forward a client's traffic to a deployment and judge it.

``conformance proxy --upstream URL [--listen HOST:PORT[/PATH]] [--profile contract|full]``
serves until Ctrl-C or SIGTERM, then writes the reports asked for and exits: 1 when findings
fail it (``--fail-on``), else 0. With ``-- COMMAND ARGS`` it runs COMMAND with the proxy's
address in ``CONFORMANCE_PROXY_URL``, stops when COMMAND ends, and exits with COMMAND's status
when that is not 0, else 1 when findings fail it, else 0.

``--fail-on`` defaults to ``any``: a finding is a broken rule whichever side broke it, and a
CI job that wraps an integration test run wants to hear of its client's mistakes as much as
of the deployment's. Traffic that breaks the contract on purpose (a negative test suite, such
as ``conformance run`` itself) says ``--fail-on deployment``.

``--fallback-mock`` answers the operations a deployment still lacks with the bundled mock
(conformance/proxy/fallback.py), started here once, after the judge's process is forked.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from conformance.contract import Contract
from conformance.profiles import PROFILES
from conformance.proxy import relay
from conformance.proxy.fallback import MockFallback
from conformance.proxy.findings import Finding
from conformance.proxy.forward import Forwarder, Seen
from conformance.proxy.har import BODY_CHARS, ENTRIES, HarRecorder
from conformance.proxy.judge import Judge
from conformance.proxy.process import JudgeProcess
from conformance.proxy.report import write
from conformance.proxy.session import FAIL_ON, ProxySession, Relay, stamp
from conformance.target import Exchange

USAGE_ERROR = 2
PROXY_URL = "CONFORMANCE_PROXY_URL"
DEFAULT_LISTEN = "127.0.0.1:8788"


EPILOG = (
    "exit status: 0 no finding that fails it; 1 findings (--fail-on); 2 a usage error; with -- "
    "COMMAND: COMMAND's status when it is not 0."
)


class Around(Protocol):
    """What a caller adds around the proxy: ``mockserver proxy`` journals each exchange, gives
    it the judge's findings, and serves the mock's inspector on the proxy's port."""

    def make_judge(self, contract: Contract, upstream: str) -> Judge:
        """The judge (called in the judge's process)."""
        ...

    def seen(self, judging: JudgeProcess) -> Callable[[Seen], None]:
        """What the forwarder hands each exchange to (it passes them on to ``judging.seen``)."""
        ...

    def app(self, forwarder: Forwarder) -> Any:
        """The ASGI application served (the forwarder, or one in front of it)."""
        ...

    def lines(self, url: str) -> list[str]:
        """What is said once the proxy listens at ``url``."""
        ...


def add_proxy_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "proxy",
        help="forward live traffic to a deployment and judge it by the contract and the stated "
        "rules (passive conformance)",
        description=__doc__.split("\n\n")[0],
        epilog=EPILOG,
    )
    add_proxy_arguments(parser)
    return parser


def add_proxy_arguments(parser: argparse.ArgumentParser) -> None:
    """The proxy's options (``conformance proxy``'s, and ``mockserver proxy``'s)."""
    parser.add_argument("--upstream", required=True, metavar="URL", help="the deployment")
    parser.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT[/PATH]",
        help=f"where clients reach the proxy (default {DEFAULT_LISTEN}; port 0: any free port)",
    )
    parser.add_argument(
        "--profile",
        choices=PROFILES,
        default="contract",
        help="what the deployment is held to (default contract: the interface document's words)",
    )
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default="any",
        help="which findings make the exit status 1 (default any)",
    )
    parser.add_argument(
        "--timeout", type=float, default=300.0, metavar="SECONDS", help="upstream timeout"
    )
    parser.add_argument(
        "--fallback-mock",
        action="store_true",
        help="an operation of the contract that the upstream answers 404 for its route (not "
        "the contract's 404 envelope) or 501 is answered by the bundled mock instead, in a "
        "sandbox of its own; the reports mark each fallback",
    )
    out = parser.add_argument_group("reports (written on exit)")
    out.add_argument("--report-json", type=Path, metavar="PATH")
    out.add_argument("--junit-xml", type=Path, metavar="PATH")
    out.add_argument("--report-html", type=Path, metavar="PATH")
    out.add_argument(
        "--har",
        type=Path,
        metavar="PATH",
        help=f"what passed as HAR 1.2: the last {ENTRIES} exchanges (webhook deliveries relayed "
        f'included, marked "_relay": true), bodies cut to {BODY_CHARS} characters, credentials, '
        "signatures and x-secret fields redacted",
    )
    add_relay_options(parser)
    parser.add_argument(
        "command_line",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND ARGS",
        help="run COMMAND with CONFORMANCE_PROXY_URL set; stop when it ends",
    )


def add_relay_options(parser: argparse.ArgumentParser) -> None:
    """The webhook relay's options (conformance/proxy/relay.py): ``--relay-to`` opens it."""
    relay.add_arguments(
        parser.add_argument_group("webhooks relayed and judged (like stripe listen)"),
        required=False,
    )


def build_relays(
    args: argparse.Namespace, on_exchange: Callable[[Exchange, float], None] | None = None
) -> list[Relay]:
    """The other sources of findings the proxy runs beside it (the webhook relay, when
    ``--relay-to`` asks for it): each with ``findings``, ``start()`` and ``stop()``; started once
    the proxy listens, stopped before the reports are written, their findings in the reports
    (printed here as they happen, each one line). ``on_exchange`` gets each delivery relayed,
    redacted, for the HAR."""
    if not args.relay_to:
        return []

    def printed(finding: Finding) -> None:
        print(finding.line(), flush=True)

    return [
        relay.Relay(
            args.relay_to,
            relay.secrets_of(args),
            args.relay_listen,
            profile=args.profile,
            on_finding=printed,
            on_exchange=on_exchange,
        )
    ]


def parse_listen(text: str) -> tuple[str, int, str]:
    """``HOST:PORT[/PATH]`` as (host, port, path)."""
    address, slash, path = text.partition("/")
    host, colon, port = address.rpartition(":")
    if not colon or not port.isdigit() or not host:
        raise ValueError(f"--listen must be HOST:PORT[/PATH], not {text!r}")
    return host.strip("[]"), int(port), (slash + path).rstrip("/")


class _Refused(Exception):
    """A start-up the options make impossible: said on stderr, exit status USAGE_ERROR."""


def command_proxy(args: argparse.Namespace, around: Around | None = None) -> int:
    """Serve the proxy until stopped (or COMMAND ends); ``around``: what a caller adds."""
    parts = urlsplit(args.upstream)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        print(f"conformance proxy: --upstream must be an http(s) URL, not {args.upstream!r}",
              file=sys.stderr)  # fmt: skip
        return USAGE_ERROR
    try:
        host, port, path = parse_listen(args.listen)
    except ValueError as exc:
        print(f"conformance proxy: {exc}", file=sys.stderr)
        return USAGE_ERROR
    command = list(args.command_line or [])
    if command[:1] == ["--"]:
        command = command[1:]
    started = time.monotonic()

    def line(text: str) -> None:
        print(f"[conformance proxy {stamp(started)}] {text}", flush=True)

    contract = Contract(profile=args.profile)
    judging = _judging(args, contract, around, started)  # forked before any thread
    # From here a Ctrl-C or SIGTERM asks for an orderly stop, even one that arrives before the
    # proxy listens: the start-up goes on, then stops at once, writing its reports.
    stopping = _stop_on_signals()
    try:
        sock = _bind(host, port)
    except OSError as exc:
        judging.process.kill()
        print(f"conformance proxy: cannot listen on {args.listen}: {exc}", file=sys.stderr)
        return USAGE_ERROR
    try:
        relays, fallback = _start_beside(args, contract, judging, line)
    except _Refused as exc:
        judging.process.kill()
        print(f"conformance proxy: {exc}", file=sys.stderr)
        return USAGE_ERROR
    on_seen = around.seen(judging) if around else judging.seen
    forwarder = Forwarder(
        args.upstream, on_seen, listen_path=path, timeout=args.timeout, fallback=fallback
    )
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}{path}"
    server = _serve(around.app(forwarder) if around else forwarder, sock)
    line(f"listening on {url}, forwarding to {args.upstream} (profile {args.profile})")
    for said in around.lines(url) if around else []:
        line(said)
    if command and not stopping.is_set():
        status = _run(command, url, line)
    else:
        status = _wait_for_signal(stopping)
    code, summary = _wind_down(server, relays, fallback, judging, status, args.fail_on)
    line(f"stopped: {summary}; exit status {code}")
    return code


def _wind_down(
    server: Any,
    relays: list[Relay],
    fallback: MockFallback | None,
    judging: JudgeProcess,
    status: int,
    fail_on: str,
) -> tuple[int, str]:
    """Stop serving, then what ran beside; the judge judges what is queued and writes the
    reports: (exit status, summary line)."""
    server.should_exit = True
    server_thread = getattr(server, "thread", None)
    if server_thread is not None:
        server_thread.join(timeout=10)
    for each in relays:
        each.stop()
    if fallback is not None:
        fallback.stop()
    found = [finding for each in relays for finding in each.findings]
    return judging.stop(status, fail_on, found)


def _judging(
    args: argparse.Namespace, contract: Contract, around: Around | None, started: float
) -> JudgeProcess:
    """The judge's process, started (forked: before any thread), and how it writes the
    reports when it stops."""

    def make_session() -> ProxySession:
        judge = (around.make_judge if around else Judge)(contract, args.upstream)
        return ProxySession(judge, har=HarRecorder() if args.har else None, started=started)

    def write_reports(session: ProxySession, code: int) -> None:
        write(
            session,
            args.upstream,
            report_json=args.report_json,
            junit_xml=args.junit_xml,
            report_html=args.report_html,
            exit_code=code,
        )
        if args.har is not None and session.har is not None:
            session.har.write(args.har)

    return JudgeProcess(make_session, write_reports).start()


def _start_beside(
    args: argparse.Namespace,
    contract: Contract,
    judging: JudgeProcess,
    line: Callable[[str], None],
) -> tuple[list[Relay], MockFallback | None]:
    """What runs beside the proxy, started: the webhook relays (``--relay-to``) and the
    bundled mock of ``--fallback-mock``; :class:`_Refused` (nothing left running) when one
    cannot start."""
    try:
        relays = build_relays(args, judging.relayed if args.har else None)
    except ValueError as exc:
        raise _Refused(str(exc)) from None
    try:
        for each in relays:
            each.start()
            line(f"relaying webhooks: deliveries to {each.url} are judged and forwarded to "
                 f"{args.relay_to}")  # fmt: skip
    except RuntimeError as exc:
        raise _Refused(str(exc)) from None
    if not args.fallback_mock:
        return relays, None
    try:
        fallback = MockFallback(contract, args.upstream, timeout=args.timeout).start()
    except RuntimeError as exc:
        for each in relays:
            each.stop()
        raise _Refused(f"--fallback-mock: {exc}") from None
    line(f"fallback: operations the upstream lacks are answered by the bundled mock at "
         f"{fallback.base_url}, sandbox {fallback.sandbox}")  # fmt: skip
    return relays, fallback


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    return sock


def _serve(app: Any, sock: socket.socket) -> Any:
    import uvicorn

    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_keep_alive=75,
        server_header=False,
        date_header=False,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="proxy-server", daemon=True
    )
    thread.start()
    server.thread = thread  # type: ignore[attr-defined]
    while not server.started and thread.is_alive():
        threading.Event().wait(0.01)
    return server


def _stop_on_signals() -> threading.Event:
    """An event SIGINT and SIGTERM set (instead of raising KeyboardInterrupt anywhere)."""
    stop = threading.Event()

    def handler(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    return stop


def _wait_for_signal(stop: threading.Event) -> int:
    while not stop.wait(1.0):
        pass
    return 0


def _run(command: list[str], url: str, line: Callable[[str], None]) -> int:
    env = dict(os.environ, **{PROXY_URL: url})
    try:
        child = subprocess.Popen(command, env=env)
    except OSError as exc:
        line(f"could not run {command[0]}: {exc}")
        return 127

    def handler(signum: int, frame: Any) -> None:
        child.send_signal(signum)

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    status = child.wait()
    return status if status >= 0 else 128 - status
