"""The loopback transport (conformance/loopback.py): chosen only for plain HTTP to this machine
without a proxy; the same request on the wire as httpx's own transport; responses decoded as
httpx decodes them; a connection the server closed is not reused; transport errors are httpx's."""

from __future__ import annotations

import gzip
import json
import socket
import threading
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from conformance.loopback import LoopbackTransport, transport_for
from conformance.target import Target, TargetUnreachable
from tests.conformance.support import Served, free_port


class Echo:
    """Answers each request with what it received (gzipped when asked for ``/gzip``)."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await Request(scope, receive).body()
        seen = {
            "method": scope["method"],
            "path": scope["raw_path"].decode(),
            "query": scope["query_string"].decode(),
            "headers": [[k.decode(), v.decode()] for k, v in scope["headers"]],
            "body": body.decode(),
        }
        content = json.dumps(seen).encode()
        headers = [(b"content-type", b"application/json"), (b"x-thing", b"1")]
        if scope["path"] == "/gzip":
            content = gzip.compress(content)
            headers.append((b"content-encoding", b"gzip"))
        await send({"type": "http.response.start", "status": 201, "headers": headers})
        await send({"type": "http.response.body", "body": content})


def test_the_transport_is_for_plain_http_to_this_machine_without_a_proxy(monkeypatch):
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(transport_for("http://127.0.0.1:8080"), LoopbackTransport)
    assert isinstance(transport_for("http://localhost:8080/v1"), LoopbackTransport)
    assert isinstance(transport_for("http://[::1]:8080"), LoopbackTransport)
    assert transport_for("https://127.0.0.1:8443") is None
    assert transport_for("http://api.example.com") is None
    assert transport_for("http://10.0.0.7:8080") is None
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.test:3128")
    assert transport_for("http://127.0.0.1:8080") is None


def test_the_same_request_and_response_as_with_httpx_own_transport():
    with Served(Echo()) as server:
        own, light = httpx.Client(), httpx.Client(transport=LoopbackTransport())
        for path in ("/v1/things/%C3%A9x?a=1&b=%20", "/gzip"):
            kwargs = {"headers": {"Authorization": "Bearer k", "X-A": "b"}, "content": b'{"a":1}'}
            expected = own.request("POST", server.base_url + path, **kwargs)
            got = light.request("POST", server.base_url + path, **kwargs)
            assert got.status_code == expected.status_code == 201
            assert got.json() == expected.json()  # what the server received, decoded
            assert dict(got.request.headers) == dict(expected.request.headers)
            assert got.headers["x-thing"] == "1" and got.http_version == "HTTP/1.1"
        empty = light.get(server.base_url + "/v1/x")
        assert empty.json()["body"] == "" and empty.json()["method"] == "GET"


def test_a_connection_the_server_closed_is_not_reused():
    with Served(Echo()) as server:
        transport = LoopbackTransport()
        client = httpx.Client(transport=transport)
        assert client.get(server.base_url + "/a").status_code == 201
        (connection,) = transport._connections.values()
        connection.sock.shutdown(socket.SHUT_RD)  # as if the server had gone
        assert client.get(server.base_url + "/b").status_code == 201
        (again,) = transport._connections.values()
        assert again is not connection


def test_transport_errors_are_httpx_errors_and_the_target_unreachable():
    port = free_port()
    target = Target(f"http://127.0.0.1:{port}", "k", timeout=2)
    assert isinstance(target.client._transport, LoopbackTransport)
    with pytest.raises(TargetUnreachable):
        target.request("GET", "/v1/capabilities")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: accepted.append(silent.accept()[0]), daemon=True)
    thread.start()
    client = httpx.Client(transport=LoopbackTransport(), timeout=0.5)
    with pytest.raises(httpx.ReadTimeout):
        client.get(f"http://127.0.0.1:{silent.getsockname()[1]}/")
    silent.close()
