"""The suite's own webhook receiver: a small ASGI app served by uvicorn in a thread.

It records the raw bytes and headers of every delivery (the signature is verified over exactly
those bytes, never over a re-serialised body) and answers as scripted: a :data:`Policy` picks the
status of each delivery (for example 503 to the first delivery of an event, so that its retry can
be observed, or 400, after which no retry may come).

Against the bundled mock it listens on loopback and its URL is ``http://127.0.0.1:PORT`` (the mock
runs with ``--allow-private-callbacks``). For a real deployment it listens on
``--receiver-listen`` and ``--receiver-url`` names the public HTTPS address (a tunnel or a load
balancer) that forwards to it, with the URL's path (``https://tunnel.example/hooks``) kept or
stripped: a delivery is known by its path below it.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import uvicorn
from starlette.requests import Request

from conformance.target import path_below
from mockserver.testing import prompt_server


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    status: int  # what the receiver answered
    received_at: float

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


# (path, headers, body, deliveries so far on that path) -> status to answer
Policy = Callable[[str, dict[str, str], bytes, list[Delivery]], int]


DELIVERIES = "webhook deliveries to the suite's receiver"


def always_ok(path: str, headers: dict[str, str], body: bytes, seen: list[Delivery]) -> int:
    return 200


def parse_listen(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--receiver-listen must be HOST:PORT, not {listen!r}")
    return host.strip("[]"), int(port)


class Receiver:
    def __init__(self, listen: str = "127.0.0.1:0", public_url: str | None = None) -> None:
        self.host, port = parse_listen(listen)
        self.port = port or _free_port(self.host)
        self.public_url = public_url.rstrip("/") if public_url else None
        # A public URL with a path (https://tunnel.example/hooks): a forwarder may keep it.
        self.public_path = urlsplit(self.public_url).path if self.public_url else ""
        self.deliveries: list[Delivery] = []
        self.policies: dict[str, Policy] = {}
        self._changed = threading.Condition()
        self.on_wait: Callable[[float, str], None] | None = None  # told before a wait begins
        config = uvicorn.Config(
            self.app,
            host=self.host,
            port=self.port,
            log_level="error",
            lifespan="off",
            interface="asgi3",
        )
        self.server = prompt_server(config)  # stops at once, not at uvicorn's next 0.1 s look
        self.thread = threading.Thread(target=self.server.run, daemon=True, name="receiver")

    @property
    def url(self) -> str:
        if self.public_url:
            return self.public_url
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> Receiver:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(
                    f"the webhook receiver could not listen on {self.host}:{self.port}"
                )
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.exit_now()
        self.thread.join(timeout=10)

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def route(self, path: str, policy: Policy = always_ok) -> str:
        """Answer deliveries to ``path`` with ``policy``; the public URL of that path."""
        self.policies[path] = policy
        return self.url + path

    def received(self, path: str) -> list[Delivery]:
        with self._changed:
            return [d for d in self.deliveries if d.path == path]

    def wait_for(
        self, predicate: Callable[[list[Delivery]], bool], timeout: float, why: str = DELIVERIES
    ) -> bool:
        """Wait (real time, at most ``timeout`` s) until the deliveries satisfy ``predicate``;
        a wait that begins is announced first (``on_wait(timeout, why)``)."""
        deadline = time.monotonic() + timeout
        if self.on_wait is not None and timeout > 0:
            with self._changed:
                met = predicate(list(self.deliveries))
            if not met:
                self.on_wait(timeout, why)
        with self._changed:
            while not predicate(list(self.deliveries)):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await Request(scope, receive).body()
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        path = path_below(scope["path"], self.public_path)  # the path it was routed as
        policy = self.policies.get(path)
        with self._changed:
            seen = [d for d in self.deliveries if d.path == path]
            status = policy(path, headers, body, seen) if policy else 404
            self.deliveries.append(Delivery(path, headers, body, status, time.monotonic()))
            self._changed.notify_all()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": b'{"received":true}'})


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
