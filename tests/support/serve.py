"""Serving an ASGI app with uvicorn on loopback, in a thread, for tests over real HTTP."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served:
    """``with Served(app) as server:`` serves ``app`` at ``server.base_url`` for the block."""

    def __init__(self, app: Any, **config: Any) -> None:
        self.app = app
        self.port = free_port()
        options = {"log_level": "warning", "timeout_graceful_shutdown": 1} | config
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, **options)
        )
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
