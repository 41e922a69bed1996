"""``mockserver``: serve the mock of the Content Generation and Campaign Automation Service."""

from __future__ import annotations

import argparse
import signal
import socket
import sys
from pathlib import Path

import uvicorn

from mockserver.app import create_app
from mockserver.fixtures import FixtureError, load_fixtures
from mockserver.registry import StartupError
from mockserver.resources import default_fixtures_path
from mockserver.settings import Settings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mockserver", description=__doc__)
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
        default=None,
        metavar="TOKEN",
        help="require Authorization: Bearer TOKEN on /_mock/",
    )
    parser.add_argument(
        "--log-level", default="info", choices=("critical", "error", "warning", "info", "debug")
    )
    parser.add_argument(
        "--defect", action="append", default=[], metavar="NAME", help=argparse.SUPPRESS
    )
    return parser  # fmt: skip


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def settings_from(args: argparse.Namespace) -> Settings:
    port = args.port or free_port(args.host)
    return Settings(
        host=args.host,
        port=port,
        fixtures=args.fixtures or default_fixtures_path(),
        seed=args.seed,
        clock=args.clock,
        rate_limit=args.rate_limit,
        allow_private_callbacks=args.allow_private_callbacks,
        control_plane=args.control_plane,
        control_token=args.control_token,
        log_level=args.log_level,
        defects=frozenset(args.defect),
    )


def banner(settings: Settings) -> str:
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    base = f"http://{host}:{settings.port}"
    lines = [f"mockserver listening on {base}", f"  contract:      {base}/v1/openapi.json"]
    if settings.control_plane:
        lines.append(f"  control plane: {base}/_mock/  (described at {base}/_mock/openapi.json)")
    lines.append(f"  clock:         {settings.clock}")
    lines.append("  fixture keys:")
    for workspace in load_fixtures(settings.fixtures)["workspaces"]:
        members = workspace["members"]
        for key in workspace.get("keys", []):
            role = members[key["member"]]["role"]
            who = f"{workspace['slug']} / {key['member']} ({role})"
            lines.append(f"    {key['key']:<28} {who}")
    if settings.defects:
        lines.append("  DEFECTS ON (test only): " + ", ".join(sorted(settings.defects)))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        settings = settings_from(args)
        app = create_app(settings)
    except (FixtureError, StartupError, ValueError) as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    print(banner(settings), flush=True)
    # uvicorn shuts down gracefully on SIGINT and SIGTERM, then re-raises the signal against the
    # handlers it found. Handlers that do nothing let the process end normally (status 0) after
    # the graceful shutdown, instead of dying of the signal or printing a KeyboardInterrupt.
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, lambda *_: None)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=settings.log_level)
    print("mockserver stopped", flush=True)
