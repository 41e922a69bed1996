"""The suite keeps no cookie a deployment sets (conformance.target.SuiteClient): each request
carries only what its case or check says, so a session cookie can never authenticate a request
the suite sends without a key, nor one check's cookie reach the next."""

from __future__ import annotations

import json
from typing import Any

import httpx

from conformance.target import SuiteClient, Target
from tests.conformance.support import Served


class SetsCookies:
    """Sets a session cookie on every answer, and echoes the Cookie header it received."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        received = dict(scope["headers"]).get(b"cookie", b"").decode()
        headers = [
            (b"content-type", b"application/json"),
            (b"set-cookie", b"session=s3cr3t; Path=/"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": json.dumps(received).encode()})


def test_a_cookie_the_deployment_sets_is_never_sent_back():
    with Served(SetsCookies()) as server:
        target = Target(server.base_url, "sk_key")
        first = target.request("GET", "/v1/capabilities")
        assert (first.header("set-cookie") or "").startswith("session=")
        later = [target.request("GET", path) for path in ("/v1/a", "/v1/b")]
        assert [exchange.json() for exchange in later] == ["", ""]
        assert not any("cookie" in exchange.request_headers for exchange in later)
        for transport in (None, httpx.HTTPTransport()):  # the loopback one, and httpx's own
            with SuiteClient(transport=transport) as client:
                client.get(server.base_url + "/v1/a")
                assert client.get(server.base_url + "/v1/b").json() == ""
                assert not client.cookies
                # A Cookie header a case gives its request is sent, once.
                given = client.get(server.base_url + "/v1/c", headers={"Cookie": "mine=1"})
                assert given.json() == "mine=1"
                assert client.get(server.base_url + "/v1/d").json() == ""
        with httpx.Client() as plain:  # what the test would see with httpx's default store
            plain.get(server.base_url + "/v1/a")
            assert plain.get(server.base_url + "/v1/b").json() == "session=s3cr3t"
