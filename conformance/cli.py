"""``conformance``: run the conformance suite against a deployment.

Exit status: 0 when every check passes, 1 when any fails, 2 for a usage error or a setup
problem (the preflight's, or one found during the run: an unreachable target, a key of the
wrong kind, a rate window that does not move ...), 3 when nothing was judged, 4 when no rule
was broken but a CI gate (--min-rule-coverage, --require) was not met.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import nullcontext
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from conformance.gcpolicy import collect_less_often

USAGE_ERROR = 2

#: The extra that adds the suite to the mock's dependencies (pyproject.toml), and what it adds.
EXTRA = "conformance"
EXTRA_MODULES = ("schemathesis", "hypothesis", "requests", "rich")

#: Where ``--mock-control-token`` comes from by default (as for ``mockserver listen``).
MOCK_CONTROL_TOKEN = "MOCKSERVER_CONTROL_TOKEN"


def missing_extra() -> list[str]:
    """The conformance extra's modules that are not installed (none: the suite can run)."""
    return [name for name in EXTRA_MODULES if find_spec(name) is None]


def not_installed(missing: list[str]) -> str:
    """The one line that says the suite is not installed, and the command that installs it in
    the way the kit was installed (mockserver/extras.py)."""
    from mockserver.extras import install_command

    return (
        f"conformance: the conformance suite is not installed (missing: {', '.join(missing)});"
        f" install it with: {install_command(EXTRA)}"
    )


try:
    from rich.console import Console

    from conformance import __version__
    from conformance.api import (
        RunConfig,
        TargetUnreachable,
        UsageError,
        check_setup,
        run,
        validate,
    )
    from conformance.checks import Check, all_checks
    from conformance.console import ProgressDisplay, print_report
    from conformance.plan import parse_duration
    from conformance.polling import DEFAULT_JOB_WAIT
    from conformance.profiles import PROFILES
    from conformance.progress import ProgressLog
    from conformance.signatures import check_timestamp_format, verify
except ModuleNotFoundError as exc:  # only the mock is installed: main() says so in one line
    if (exc.name or "").partition(".")[0] not in EXTRA_MODULES or not missing_extra():
        raise


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(USAGE_ERROR)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="conformance", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"conformance {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run_parser = commands.add_parser(
        "run",
        help="run the checks against a deployment",
        epilog="exit status: 0 passed; 1 a rule broken; 2 a usage error, an unreachable target "
        "or a setup problem; 3 nothing judged (every check skipped); 4 insufficient coverage (no "
        "rule broken, a CI gate unmet). The verdict line says how many of the judgeable rules "
        "were judged, and why the others were not.",
    )
    add_run_options(run_parser)
    out = run_parser.add_argument_group("reports")
    out.add_argument("--junit-xml", type=Path, metavar="PATH")
    out.add_argument("--report-json", type=Path, metavar="PATH")
    out.add_argument("--report-html", type=Path, metavar="PATH")
    out.add_argument(
        "--quiet",
        action="store_true",
        help="no progress: neither the progress bar on a terminal nor, elsewhere (a CI log), "
        "the lines as each check starts and ends, each wait over 5 s and at least every 30 s; "
        "the report is printed all the same",
    )
    out.add_argument("--no-progress", action="store_true", help="the same as --quiet")

    preflight_parser = commands.add_parser(
        "preflight",
        help="check the setup a run would have (reachability, keys, rate limit, receiver, mock) "
        "and exit 0, or 2 with one line saying what to change",
    )
    add_run_options(preflight_parser)
    preflight_parser.set_defaults(junit_xml=None, report_json=None, report_html=None)

    commands.add_parser("list-checks", help="name every check with a one-line description")
    rules_parser = commands.add_parser(
        "rules", help="every stated rule of the interface document and the checks that judge it"
    )
    rules_parser.add_argument("--check", metavar="CHECK", help="only the rules CHECK judges")

    from conformance.proxy.cli import add_proxy_parser

    add_proxy_parser(commands)

    verify_parser = commands.add_parser(
        "verify-signature", help="verify one webhook delivery offline"
    )
    verify_parser.add_argument("--secret", required=True, help="the signing secret")
    verify_parser.add_argument("--timestamp", required=True, help="X-Service-Timestamp")
    verify_parser.add_argument("--signature", required=True, help="X-Service-Signature")
    verify_parser.add_argument(
        "--body-file", required=True, type=Path, help="the raw body bytes as received"
    )
    return parser


def add_run_options(run_parser: argparse.ArgumentParser) -> None:
    """The options that say what a run targets and how (``run`` and ``preflight`` share them)."""
    target = run_parser.add_argument_group("target")
    target.add_argument("--base-url", metavar="URL", help="the deployment, e.g. https://api.x")
    target.add_argument("--api-key", metavar="KEY", help="a workspace API key")
    target.add_argument(
        "--second-key", metavar="KEY", help="a key of another workspace (cross-workspace checks)"
    )
    target.add_argument(
        "--restricted-key",
        metavar="KEY",
        help="a key of a lower role (not owner or admin) in the workspace of --api-key "
        "(auth-forbidden-role); against the mock an editor's fixture key is used",
    )
    target.add_argument(
        "--same-person-key",
        metavar="KEY",
        help="another key of the person who holds --api-key (rate-limit-shared-bucket: one "
        "person's keys share one rate-limit bucket); against the mock two fixture keys of one "
        "member are used",
    )
    target.add_argument(
        "--mock",
        action="store_true",
        help="start the bundled mock (manual clock, private callbacks) and test it",
    )
    target.add_argument(
        "--mock-url",
        metavar="URL",
        help="the bundled mock, already running with --allow-private-callbacks and the default "
        "fixtures (its control plane is used); the run works in a sandbox of its own, made at "
        "the start and ended at the end, so that several runs can share one mock",
    )
    target.add_argument(
        "--mock-control-token",
        metavar="TOKEN",
        default=os.environ.get(MOCK_CONTROL_TOKEN) or None,
        help="with --mock-url: the mock's control token (off loopback its control plane needs "
        f"one: the banner prints the token it made; default ${MOCK_CONTROL_TOKEN})",
    )
    target.add_argument(
        "--no-sandbox",
        dest="sandbox",
        action="store_false",
        help="with --mock-url: run in the mock's base world (its fixture keys; the mock must run "
        "with --clock manual) instead of a sandbox of its own; not with --workers N > 1",
    )
    how = run_parser.add_argument_group("how")
    how.add_argument(
        "--profile",
        choices=PROFILES,
        help="contract: only what the interface document states (default for --base-url); "
        "full: the whole contract (default for --mock)",
    )
    how.add_argument(
        "--allow-spend",
        action="store_true",
        help="allow paid and creating calls (never made otherwise, except against --mock)",
    )
    how.add_argument(
        "--allow-faults",
        action="store_true",
        help="let fault checks (auth-credential-store-outage) inject faults through a fault hook "
        "the deployment offers (a /_mock/ control plane); always allowed against --mock",
    )
    how.add_argument(
        "--long-video-url",
        metavar="URL",
        help="a video longer than remix url sources may be (180 seconds), for "
        "workflows-remix-pricing to see it refused before any charge (the mock has its own)",
    )
    how.add_argument("--max-requests", type=int, metavar="N", help="bound the whole run")
    how.add_argument(
        "--time-budget",
        type=_duration,
        metavar="DURATION",
        help="end the run within DURATION (10m, 90s, 1h, or seconds): its requests are planned "
        "at the rate limit the deployment announces, every check judging once before any adds "
        "depth; waits that would end later are not made",
    )
    how.add_argument(
        "--job-wait",
        type=float,
        metavar="SECONDS",
        help="how long a check polls a real deployment's job, at the recommended interval, "
        f"before it skips (default {DEFAULT_JOB_WAIT:g})",
    )
    how.add_argument("--seed", type=int, metavar="N", help="make generation reproducible")
    how.add_argument(
        "--only",
        nargs="+",
        action="extend",
        default=[],
        metavar="CHECK",
        help="checks or families to run (repeatable; commas also separate)",
    )
    how.add_argument(
        "--skip",
        nargs="+",
        action="extend",
        default=[],
        metavar="CHECK",
        help="checks to leave out (repeatable; commas also separate)",
    )
    how.add_argument(
        "--shard",
        type=_shard,
        default=None,
        metavar="I/N",
        help="run part I of N: N CI jobs with --shard 1/N ... N/N together make one full run",
    )
    how.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="run the checks in N worker processes (each its deal of them, after --shard; "
        "--max-requests is shared out). Against the bundled mock each worker runs in a sandbox "
        "of its own. Against --base-url N > 1 is allowed only for a read-only run: refused with "
        "--allow-spend (the checks then create and spend), --allow-faults, or the rate-limit "
        "probe, since workers share one workspace and one key (default 1)",
    )
    gates = run_parser.add_argument_group(
        "CI gates",
        "unmet, and no rule broken, the verdict is 'insufficient coverage' (exit 4; a broken rule "
        "still exits 1, a setup problem 2)",
    )
    gates.add_argument(
        "--min-rule-coverage",
        type=float,
        metavar="PCT",
        help="judge at least PCT percent of the rules this target makes judgeable (the figure "
        "of the verdict line: 'N of M judgeable rules judged')",
    )
    gates.add_argument(
        "--require",
        nargs="+",
        action="extend",
        default=[],
        metavar="CHECK",
        help="a check that must judge something, or a family whose every check this target can "
        "run must (against a deployment, checks that need the bundled mock's control plane are "
        "left out of a family); repeatable; commas also separate",
    )
    hooks = run_parser.add_argument_group("webhooks")
    hooks.add_argument(
        "--receiver-listen",
        default="127.0.0.1:0",
        metavar="HOST:PORT",
        help="where the suite's webhook receiver listens (default %(default)s)",
    )
    hooks.add_argument(
        "--receiver-url",
        metavar="PUBLIC_URL",
        help="the receiver's public HTTPS address, for a real deployment to deliver to",
    )
    hooks.add_argument(
        "--webhook-wait",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long to wait for deliveries from a real deployment (default %(default)s)",
    )


def config_from(args: argparse.Namespace) -> RunConfig:
    return RunConfig(
        base_url=args.base_url,
        api_key=args.api_key,
        second_key=args.second_key,
        restricted_key=args.restricted_key,
        same_person_key=args.same_person_key,
        mock=args.mock,
        mock_url=args.mock_url,
        mock_control_token=args.mock_control_token,
        profile=args.profile,
        allow_spend=args.allow_spend,
        allow_faults=args.allow_faults,
        max_requests=args.max_requests,
        time_budget=args.time_budget,
        seed=args.seed,
        only=_names(args.only),
        skip=_names(args.skip),
        shard=args.shard,
        min_rule_coverage=args.min_rule_coverage,
        require=_names(args.require),
        receiver_listen=args.receiver_listen,
        receiver_url=args.receiver_url,
        webhook_wait=args.webhook_wait,
        job_wait=args.job_wait,
        long_video_url=args.long_video_url,
        junit_xml=args.junit_xml,
        report_json=args.report_json,
        report_html=args.report_html,
        workers=args.workers,
        sandbox=args.sandbox,
    )


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _shard(text: str) -> tuple[int, int]:
    index, slash, count = text.partition("/")
    if not slash or not index.isdigit() or not count.isdigit() or not 1 <= int(index) <= int(count):
        raise argparse.ArgumentTypeError(f"{text!r}: give I/N with 1 <= I <= N, such as 2/4")
    return int(index), int(count)


def command_run(args: argparse.Namespace) -> int:
    console = Console()
    if not console.is_terminal:
        console = Console(width=120)  # CI logs: wide enough for the summary table
    config = config_from(args)
    try:
        checks = validate(config)
    except UsageError as exc:
        print(f"conformance: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    display = None if args.quiet or args.no_progress else progress_for(console, checks)

    def listen(event: str, payload: Any) -> None:
        if event == "preflight":
            for line in payload.findings:
                console.print(f"preflight: {line}", markup=False, highlight=False)
        if display is not None:
            display(event, payload)

    config.on_event = listen
    try:
        with display or nullcontext():
            report = run(config)
    except (UsageError, TargetUnreachable) as exc:
        return cannot_run(exc)
    if report.setup_problem:  # the findings are printed; the reports say it too
        print(f"conformance: setup problem: {report.setup_problem}", file=sys.stderr)
        return report.exit_code
    print_report(console, report)
    return report.exit_code


def progress_for(console: Console, checks: list[Check]) -> ProgressDisplay | ProgressLog:
    """A live progress bar on a terminal; elsewhere (a CI log, a file) progress as lines."""
    if console.is_terminal and sys.stdout.isatty():
        return ProgressDisplay(console, checks)
    return ProgressLog(sys.stdout, checks)


def cannot_run(exc: Exception) -> int:
    """A usage error, or a target that never answered (the bundled mock would not start):
    one line on stderr, exit status 2."""
    if isinstance(exc, TargetUnreachable):
        print(f"conformance: the target is unreachable: {exc}", file=sys.stderr)
    else:
        print(f"conformance: error: {exc}", file=sys.stderr)
    return USAGE_ERROR


def command_preflight(args: argparse.Namespace) -> int:
    """Print what the preflight finds; 0, or 2 with one line on stderr saying what to change."""
    try:
        found = check_setup(config_from(args))
    except (UsageError, TargetUnreachable) as exc:
        return cannot_run(exc)
    for line in found.findings:
        print(f"preflight: {line}")
    print(f"preflight: {found.requests} request{'' if found.requests == 1 else 's'} sent")
    if found.problem:
        print(f"conformance: setup problem: {found.problem}", file=sys.stderr)
        return USAGE_ERROR
    print("preflight: ready: a run can judge this target as set up")
    return 0


def command_list_checks() -> int:
    checks = all_checks()
    width = max(len(c.name) for c in checks)
    for check in checks:
        flags = f"  [{', '.join(check.flags)}]" if check.flags else ""
        print(f"{check.name:<{width}}  {check.description}{flags}")
    return 0


def command_verify_signature(args: argparse.Namespace) -> int:
    try:
        body = args.body_file.read_bytes()
    except OSError as exc:
        print(f"conformance: error: cannot read {args.body_file}: {exc}", file=sys.stderr)
        return USAGE_ERROR
    problems = []
    if not check_timestamp_format(args.timestamp):
        problems.append(f"the timestamp {args.timestamp!r} is not UTC YYYY-MM-DDTHH:MM:SSZ")
    if not verify(args.secret, args.timestamp, body, args.signature):
        problems.append("the signature does not match sha256=<lowercase hex HMAC-SHA256> of "
                        "'<timestamp>.<raw body>'")  # fmt: skip
    if problems:
        for problem in problems:
            print(f"invalid: {problem}")
        return 1
    print("valid: the signature matches the raw body and the timestamp")
    return 0


def _names(values: list[str]) -> list[str]:
    """``--only a b --only c,d`` names a, b, c and d."""
    return [name for value in values for name in value.split(",") if name]


def command_rules(args: argparse.Namespace) -> int:
    from conformance.rules import render, rules, rules_of

    selected = rules_of(args.check) if args.check else rules()
    if args.check and not selected:
        print(f"conformance: no stated rule is judged by {args.check!r}", file=sys.stderr)
        return USAGE_ERROR
    print(render(selected))
    return 0


def main(argv: list[str] | None = None) -> None:
    if missing := missing_extra():
        print(not_installed(missing), file=sys.stderr)
        raise SystemExit(USAGE_ERROR)
    args = build_parser().parse_args(argv)
    collect_less_often()  # this process is the suite's own (conformance/gcpolicy.py)
    if args.command == "run":
        status = command_run(args)
    elif args.command == "preflight":
        status = command_preflight(args)
    elif args.command == "list-checks":
        status = command_list_checks()
    elif args.command == "rules":
        status = command_rules(args)
    elif args.command == "proxy":
        from conformance.proxy.cli import command_proxy

        status = command_proxy(args)
    else:
        status = command_verify_signature(args)
    raise SystemExit(status)
