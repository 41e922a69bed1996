"""``mockserver``: start the mock server."""

from __future__ import annotations

import argparse

import uvicorn

from mockserver.app import create_app


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mockserver", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--log-level", default="info")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    print(f"mockserver: http://{args.host}:{args.port}/v1/openapi.json", flush=True)
    uvicorn.run(create_app(), host=args.host, port=args.port, log_level=args.log_level)
