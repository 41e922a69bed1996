"""One request through a mock's ASGI app, with no network: what the bench scripts measure."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

OWNER = b"Bearer sk_test_acme_owner"


async def request(
    app: Any,
    method: str,
    path: str,
    query: str = "",
    body: bytes = b"",
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> tuple[int, bytes]:
    """The status and body of one request (as the owner of workspace acme, JSON body)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(b"authorization", OWNER), (b"content-type", b"application/json"), *headers],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8080),
    }
    status = 0
    chunks: list[bytes] = []
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(chunks)
