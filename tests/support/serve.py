"""Serving an ASGI app with uvicorn on loopback, in a thread, for tests over real HTTP.

The same machinery integrators use (mockserver.testing.ThreadedServer), as a context manager.
"""

from __future__ import annotations

import socket

from mockserver.testing import ThreadedServer


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served(ThreadedServer):
    """``with Served(app) as server:`` serves ``app`` at ``server.base_url`` for the block."""

    def __enter__(self) -> Served:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
