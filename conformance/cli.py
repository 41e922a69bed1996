"""``conformance``: run the conformance suite against a deployment."""

from __future__ import annotations

import argparse

from conformance import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="conformance", description=__doc__)
    parser.add_argument("--version", action="version", version=f"conformance {__version__}")
    return parser


def main(argv: list[str] | None = None) -> None:
    build_parser().parse_args(argv)
