"""Servers for the conformance suite's tests: the mock in a thread, and small fake deployments."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

from conformance.api import RunConfig, run
from conformance.results import Report

OWNER = "sk_test_acme_owner"
GLOBEX = "sk_test_globex_owner"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served:
    """An ASGI app served by uvicorn on loopback, in a thread."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.port = free_port()
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="error", lifespan="off"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.base_url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def live_mock(**settings: Any) -> Served:
    """The bundled mock (manual clock, seeded, private callbacks allowed) as a live server."""
    from mockserver.app import create_app
    from mockserver.settings import Settings

    options = {"clock": "manual", "seed": 7, "allow_private_callbacks": True} | settings
    return Served(create_app(Settings(**options)))


def run_quietly(**options: Any) -> Report:
    options.setdefault("seed", 1)
    return run(RunConfig(**options))


def skip_reasons(report: Report) -> set[str]:
    return {reason for c in report.checks for reason in c.skipped}
