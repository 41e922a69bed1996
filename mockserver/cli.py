"""``mockserver``: serve the mock of the Content Generation and Campaign Automation Service.

``mockserver [serve] [options]`` serves the mock; ``serve`` is the default command, taken when the
first argument is an option or there is none. Other commands are registered in :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import ipaddress
import json
import os
import secrets
import signal
import socket
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from mockserver import proxy_cli, webhook_cli
from mockserver.fixtures import FixtureError, load_fixtures
from mockserver.platform.envelope import iso_z
from mockserver.registry import StartupError
from mockserver.resources import default_fixtures_path
from mockserver.settings import MIN_DELIVERY_LEASE, Settings
from mockserver.store import StoreError

if TYPE_CHECKING:
    from mockserver.app import MockApp
    from mockserver.seams import Seams

USAGE_ERROR = 2
DISTRIBUTION = "cgcas-kit"
DEFAULT_COMMAND = "serve"


def kit_version() -> str:
    """The installed kit's version (package metadata), else the source tree's."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        from mockserver import __version__

        return __version__


# ---------------------------------------------------------------------------------------------
# mockserver serve


def build_serve_parser(prog: str = "mockserver") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        usage="%(prog)s [serve] [options]",
        description=__doc__.split("\n\n")[0],
        epilog=commands_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mockserver {kit_version()}")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default %(default)s)"
    )
    parser.add_argument(
        "--port", type=int, default=8080, help="port (0: a free one; default %(default)s)"
    )
    parser.add_argument(
        "--fixtures",
        type=Path,
        default=None,
        help="fixtures file (default: the bundled fixtures/default.yaml)",
    )
    parser.add_argument("--seed", type=int, default=None, help="make generated ids reproducible")
    parser.add_argument(
        "--clock",
        choices=("real", "manual"),
        default="real",
        help="real time, or a clock that moves only through the control plane",
    )
    parser.add_argument(
        "--rate-limit",
        type=int,
        default=None,
        metavar="N",
        help="requests per minute per caller (default: the contract's 100)",
    )
    parser.add_argument(
        "--allow-private-callbacks",
        action="store_true",
        help="let callbacks and webhooks reach loopback, private addresses and plain http "
        "(development only)",
    )
    parser.add_argument(
        "--no-control-plane",
        dest="control_plane",
        action="store_false",
        help="do not serve /_mock/",
    )
    parser.add_argument(
        "--control-token",
        default=os.environ.get(webhook_cli.ENV_TOKEN) or None,
        metavar="TOKEN",
        help="require Authorization: Bearer TOKEN on /_mock/ (default: "
        f"${webhook_cli.ENV_TOKEN}; else, off loopback, a generated token the banner prints; "
        "on loopback, none)",
    )
    parser.add_argument(
        "--open-control-plane",
        action="store_true",
        help="off loopback, serve /_mock/ and the inspector without a token: anyone who "
        "reaches the port can reset, fault and read the mock",
    )
    parser.add_argument(
        "--sandbox-ttl",
        type=positive(float),
        default=3600.0,
        metavar="SECONDS",
        help="an idle sandbox ends after this many seconds (default %(default)g)",
    )
    parser.add_argument(
        "--max-sandboxes",
        type=positive(int),
        default=64,
        metavar="N",
        help="at most N sandboxes live at once (default %(default)s)",
    )
    parser.add_argument(
        "--delivery-lease",
        type=at_least(MIN_DELIVERY_LEASE),
        default=None,
        metavar="SECONDS",
        help="a process's claim on a webhook delivery lasts this long, renewed while its "
        "attempt is under way: another process sharing the store retries the delivery of one "
        f"that died mid-attempt after this long (at least {MIN_DELIVERY_LEASE:g}; default: "
        "the contract's attempt timeout plus 5 s, 15)",
    )
    parser.add_argument(
        "--state",
        type=Path,
        default=None,
        metavar="PATH",
        help="keep the state in this SQLite file: it survives restarts (default: in memory)",
    )
    parser.add_argument(
        "--store",
        default=os.environ.get("MOCKSERVER_STORE"),
        metavar="URL",
        help="keep the state in the store URL names: memory, sqlite:///PATH, or "
        "postgresql://... (shared by every worker and replica; default: $MOCKSERVER_STORE, "
        "else memory)",
    )
    parser.add_argument(
        "--workers",
        type=positive(int),
        default=1,
        metavar="N",
        help="serve with N worker processes (needs --store postgresql://...; default 1)",
    )
    parser.add_argument(
        "--log-level", default="info", choices=("critical", "error", "warning", "info", "debug")
    )
    return parser  # fmt: skip


def positive(kind: Callable[[str], float]) -> Callable[[str], float]:
    def read(text: str) -> float:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
        return value

    return read


def at_least(minimum: float) -> Callable[[str], float]:
    def read(text: str) -> float:
        value = float(text)
        if not minimum <= value < float("inf"):  # NaN and infinity too
            raise argparse.ArgumentTypeError(
                f"must be at least {minimum:g} (and finite), got {text}"
            )
        return value

    return read


class PortInUse(OSError):
    pass


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port`` 0: a free one), before anything is said.

    Raises :class:`PortInUse` when the port is taken, :class:`OSError` for any other refusal.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if os.name != "nt":  # on Windows SO_REUSEADDR would let two servers share the port
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.EADDRINUSE, getattr(errno, "WSAEADDRINUSE", -1)):
            raise PortInUse(exc.errno, exc.strerror) from exc
        raise
    return sock


LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1) or ``localhost``: only this
    machine reaches a mock bound there."""
    if host.lower().rstrip(".") in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # any other name may resolve anywhere
        return False


def control_token(args: argparse.Namespace) -> tuple[str | None, bool]:
    """The control plane's token and whether the mock made it: the one given
    (``--control-token`` / ``$MOCKSERVER_CONTROL_TOKEN``); else, off loopback and unless
    ``--open-control-plane``, a new random one; else none."""
    if args.control_token:
        return args.control_token, False
    if not args.control_plane or args.open_control_plane or is_loopback(args.host):
        return None, False
    # Hex: a token that began with '-' could not follow --control-token as its own word.
    return secrets.token_hex(24), True


def settings_from(args: argparse.Namespace, port: int, token: str | None = None) -> Settings:
    return Settings(
        host=args.host,
        port=port,
        fixtures=args.fixtures or default_fixtures_path(),
        seed=args.seed,
        clock=args.clock,
        rate_limit=args.rate_limit,
        allow_private_callbacks=args.allow_private_callbacks,
        control_plane=args.control_plane,
        control_token=token,
        log_level=args.log_level,
        sandbox_ttl=args.sandbox_ttl,
        max_sandboxes=args.max_sandboxes,
        delivery_lease=args.delivery_lease,
        state=args.state,
        store=args.store,
    )


def banner(app: MockApp, *, generated: bool = False) -> str:
    """What the mock says once it listens. ``generated``: the control token is the mock's own,
    printed once here (with an inspector address that hands it to the page, in the fragment)."""
    settings = app.settings
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    base = f"http://{host}:{settings.port}"
    lines = [f"mockserver listening on {base}", f"  contract:      {base}/v1/openapi.json"]
    if settings.control_plane:
        lines.append(f"  control plane: {base}/_mock/  (described at {base}/_mock/openapi.json)")
        lines.append(f"  inspector:     {base}/_mock/ui  (what the mock did, in a browser)")
        lines += control_lines(settings, base, generated)
    lines.append(f"  clock:         {settings.clock}, now {iso_z(app.runtime.clock.now())}")
    lines.append(f"  state:         {store_line(settings)}")
    lines.append("  fixture keys:")
    for workspace in load_fixtures(settings.fixtures)["workspaces"]:
        members = workspace["members"]
        for key in workspace.get("keys", []):
            role = members[key["member"]]["role"]
            who = f"{workspace['slug']} / {key['member']} ({role})"
            lines.append(f"    {key['key']:<28} {who}")
    return "\n".join(lines)


def control_lines(settings: Settings, base: str, generated: bool) -> list[str]:
    """How the control plane is guarded, in the banner."""
    if generated:
        return [
            f"  control token: {settings.control_token}  (made for this run: off loopback "
            "/_mock/ needs Authorization: Bearer <token>; set your own with --control-token or "
            f"${webhook_cli.ENV_TOKEN})",
            f"  inspector with the token: {base}/_mock/ui#token={settings.control_token}",
        ]
    if settings.control_token is not None:
        given = f"--control-token or ${webhook_cli.ENV_TOKEN}"
        return [f"  control token: the one given ({given}); /_mock/ needs it as the Bearer"]
    if not is_loopback(settings.host):
        return [
            "  WARNING: the control plane is OPEN (--open-control-plane): anyone who reaches "
            "this port can reset the mock, inject faults, set credits and read every request"
        ]
    return []


def store_line(settings: Settings) -> str:
    if settings.state is not None:
        return f"{settings.state} (SQLite; survives restarts)"
    if settings.store not in (None, "memory"):
        from mockserver.store.postgres import redacted

        return redacted(str(settings.store))
    return "in memory (gone when the process ends; --state PATH keeps it)"


WORKER_SETTINGS = "MOCKSERVER_WORKER_SETTINGS"


def worker_app() -> MockApp:
    """The app of one worker process (``--workers N``), on the parent's settings."""
    from mockserver.app import create_app

    given = json.loads(os.environ[WORKER_SETTINGS])
    for name in ("fixtures", "state"):
        if given[name] is not None:
            given[name] = Path(given[name])
    return create_app(Settings(**given))


def fail(message: str) -> int:
    print(f"mockserver: {message}", file=sys.stderr, flush=True)
    return USAGE_ERROR


def serve(args: argparse.Namespace, *, seams: Seams | None = None) -> int:
    """Bind, build the mock, say where it is (only once that is true), serve until stopped.

    ``seams`` replaces the app's named seams (mockserver/seams.py; tests only).
    """
    try:
        sock = bind_socket(args.host, args.port)
    except PortInUse:
        return fail(
            f"port {args.port} is in use; pick another with --port N, or --port 0 for a free one"
        )
    except OSError as exc:
        return fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    except (OverflowError, ValueError) as exc:  # a port outside 0-65535, a malformed host
        return fail(f"cannot listen on {args.host}:{args.port}: {exc}")
    if args.workers > 1 and not str(args.store or "").startswith(("postgresql:", "postgres:")):
        sock.close()
        return fail(
            "--workers N needs --store postgresql://...: each worker is a process, and "
            "processes share state only through PostgreSQL"
        )
    if args.open_control_plane and args.control_token:
        sock.close()
        return fail(
            "--open-control-plane serves /_mock/ without a token, but a control token is given "
            f"(--control-token or ${webhook_cli.ENV_TOKEN}): choose one"
        )
    with sock:
        port = int(sock.getsockname()[1])
        try:
            from mockserver.app import create_app

            token, generated = control_token(args)
            app = create_app(settings_from(args, port, token), seams=seams)
        except (FixtureError, StartupError, StoreError, ValueError) as exc:
            return fail(str(exc))

        import uvicorn

        print(banner(app, generated=generated), flush=True)
        # uvicorn shuts down gracefully on SIGINT and SIGTERM, then re-raises the signal against
        # the handlers it found. Handlers that do nothing let the process end normally (status 0)
        # after the graceful shutdown, instead of dying of the signal or printing a
        # KeyboardInterrupt.
        for stop in (signal.SIGINT, signal.SIGTERM):
            signal.signal(stop, lambda *_: None)
        if args.workers > 1:
            app.close()  # each worker builds its own (the store holds the state they share)
            serve_workers(app, args, port, sock)
        else:
            config = uvicorn.Config(app, host=args.host, port=port, log_level=args.log_level)
            try:
                uvicorn.Server(config).run(sockets=[sock])
            finally:
                app.close()
    print("mockserver stopped", flush=True)
    return 0


def serve_workers(app: MockApp, args: argparse.Namespace, port: int, sock: socket.socket) -> None:
    """Serve the bound socket with ``args.workers`` processes (uvicorn's supervisor)."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    os.environ[WORKER_SETTINGS] = json.dumps(dataclasses.asdict(app.settings), default=str)
    config = uvicorn.Config(
        "mockserver.cli:worker_app",
        factory=True,
        host=args.host,
        port=port,
        workers=args.workers,
        log_level=args.log_level,
    )
    Multiprocess(config, sockets=[sock]).run()


# ---------------------------------------------------------------------------------------------
# Commands

#: A command: ``build_parser(prog)`` makes its parser; ``run(args)`` does it and returns the exit
#: status.
BuildParser = Callable[[str], argparse.ArgumentParser]
Run = Callable[[argparse.Namespace], int]

#: ``mockserver NAME ...`` runs ``COMMANDS[NAME]``. To add a command (``listen``, ``trigger``), add
#: ``"NAME": (build_parser, run)`` here and a one-line summary to ``SUMMARIES`` (shown by
#: ``mockserver --help``). ``serve`` stays the default when the first argument is an option or
#: there is none, so a command's name must not start with ``-``.
COMMANDS: dict[str, tuple[BuildParser, Run]] = {
    "serve": (build_serve_parser, serve),
    "listen": (webhook_cli.build_listen_parser, webhook_cli.run_listen),
    "trigger": (webhook_cli.build_trigger_parser, webhook_cli.run_trigger),
    "proxy": (proxy_cli.build_proxy_parser, proxy_cli.run_proxy),
}

SUMMARIES: dict[str, str] = {
    "serve": "serve the mock (the default command)",
    "listen": "forward a running mock's webhooks to a local endpoint, signatures checked",
    "trigger": "make a webhook event happen now in a running mock (trigger --list)",
    "proxy": "judge live traffic to a deployment, each exchange and its findings in the inspector",
}


def commands_epilog() -> str:
    lines = ["commands:"]
    for name in COMMANDS:
        lines.append(f"  {name:<10} {SUMMARIES.get(name, '')}".rstrip())
    lines.append("Run 'mockserver COMMAND --help' for a command's options.")
    return "\n".join(lines)


def dispatch(argv: list[str]) -> int:
    """The exit status of ``mockserver`` with arguments ``argv``."""
    if argv and not argv[0].startswith("-"):
        name, rest = argv[0], argv[1:]
        if name not in COMMANDS:
            known = ", ".join(COMMANDS)
            return fail(f"unknown command {name!r} (commands: {known}; default: serve)")
    else:
        name, rest = DEFAULT_COMMAND, argv
    build_parser, run = COMMANDS[name]
    prog = "mockserver" if name == DEFAULT_COMMAND else f"mockserver {name}"
    return run(build_parser(prog).parse_args(rest))


def build_parser() -> argparse.ArgumentParser:
    """The default command's parser (``mockserver --help``)."""
    return build_serve_parser()


def main(argv: list[str] | None = None) -> None:
    raise SystemExit(dispatch(sys.argv[1:] if argv is None else list(argv)))
