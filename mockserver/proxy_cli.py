"""``mockserver proxy``: ``conformance proxy`` with the mock's inspector on its port.

``mockserver proxy --upstream URL [--listen HOST:PORT] [--profile contract|full] [...]`` takes
every option of ``conformance proxy`` (the reports, ``--har``, ``--fail-on``, ``-- COMMAND``,
the webhook relay) and serves, on the same port, the mock's inspector (``/_mock/ui``): its
Requests view shows each exchange forwarded, with the judge's findings (mockserver/proxied.py).
Of the control plane only the inspector, the index, the document and the journal's reads are
served; the mock's API is not (every other request goes upstream).

The control plane is guarded as ``mockserver``'s is (the same code): on loopback it is open;
off loopback it needs ``--control-token`` (or ``$MOCKSERVER_CONTROL_TOKEN``), else a token made
for the run and printed once, unless ``--open-control-plane``.

It needs the ``conformance`` extra; without it, it says which command installs it.
"""

from __future__ import annotations

import argparse
import os
import sys

from mockserver import webhook_cli

USAGE_ERROR = 2
DESCRIPTION = (
    "Forward live traffic to a deployment and judge it by the contract and the stated rules "
    "(conformance proxy), with the mock's inspector on the same port (/_mock/ui): its Requests "
    "view shows each exchange with its findings."
)


def build_proxy_parser(prog: str = "mockserver proxy") -> argparse.ArgumentParser:
    from conformance.cli import EXTRA, missing_extra

    missing = missing_extra()
    if missing:
        from mockserver.extras import install_command

        print(
            f"{prog}: the conformance suite is not installed (missing: {', '.join(missing)}); "
            f"install it with: {install_command(EXTRA)}",
            file=sys.stderr,
            flush=True,
        )
        raise SystemExit(USAGE_ERROR)
    from conformance.proxy.cli import EPILOG, add_proxy_arguments

    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION, epilog=EPILOG)
    add_proxy_arguments(parser)
    guard = parser.add_argument_group("the inspector (GET /_mock/ui on the proxy's port)")
    guard.add_argument(
        "--control-token",
        default=os.environ.get(webhook_cli.ENV_TOKEN) or None,
        metavar="TOKEN",
        help="require Authorization: Bearer TOKEN for the journal (default: "
        f"${webhook_cli.ENV_TOKEN}; else, off loopback, a generated token printed once; on "
        "loopback, none)",
    )
    guard.add_argument(
        "--open-control-plane",
        action="store_true",
        help="off loopback, serve the journal without a token: anyone who reaches the port "
        "reads every exchange",
    )
    return parser


def run_proxy(args: argparse.Namespace) -> int:
    from conformance.proxy.cli import command_proxy, parse_listen
    from mockserver.cli import control_lines, control_token, fail
    from mockserver.proxied import Inspected
    from mockserver.settings import Settings

    try:
        host = parse_listen(args.listen)[0]
    except ValueError as exc:
        return fail(str(exc))
    if args.open_control_plane and args.control_token:
        return fail(
            "--open-control-plane serves /_mock/ without a token, but a control token is given "
            f"(--control-token or ${webhook_cli.ENV_TOKEN}): choose one"
        )
    args.host, args.control_plane = host, True
    token, generated = control_token(args)
    settings = Settings(host=host, control_token=token)
    inspected = Inspected(args.upstream, settings, guard=control_lines, generated=generated)
    return command_proxy(args, inspected)
