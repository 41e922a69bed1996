"""``python -m tests.defects --defect NAME [mockserver serve options]``: serve the mock with
test-only defects (the mock's own parser and serving, with the overlay's seams)."""

from __future__ import annotations

import argparse
import sys

from mockserver import cli
from tests.defects import DEFECTS, seams_for

PROG = "python -m tests.defects"


def build_parser() -> argparse.ArgumentParser:
    parser = cli.build_serve_parser(PROG)
    parser.usage = "%(prog)s --defect NAME [--defect NAME ...] [mockserver serve options]"
    parser.add_argument(
        "--defect",
        action="append",
        required=True,
        metavar="NAME",
        help="break this rule of the contract on purpose (test only); one of: "
        + ", ".join(DEFECTS),
    )
    return parser


def main(argv: list[str]) -> int:
    if argv[:1] == [cli.DEFAULT_COMMAND]:
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    try:
        seams = seams_for(args.defect)
    except ValueError as exc:
        return cli.fail(str(exc))
    on = ", ".join(sorted(set(args.defect)))
    print(f"{PROG}: DEFECTS ON (test only): {on}", file=sys.stderr, flush=True)
    return cli.serve(args, seams=seams)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
