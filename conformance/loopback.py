"""A lighter HTTP transport for a deployment on this machine (the bundled mock, mostly).

:class:`~conformance.target.Target` builds every request with httpx; on the wire, httpx's own
transport (httpcore: a connection pool, its state machines, h11) costs about 0.2 ms of CPU a
request, three times what the request itself costs the standard library's ``http.client``. For a
plain ``http://`` URL on a loopback address, with no proxy configured, :class:`LoopbackTransport`
sends the request httpx built, byte for byte the same headers and body, over one kept-alive
``http.client`` connection, and hands httpx the response to decode as usual. Anything else (TLS,
proxies, another host) keeps httpx's transport: :func:`transport_for` decides.
"""

from __future__ import annotations

import http.client
import ipaddress
import os
import select
from typing import Any
from urllib.parse import urlsplit

import httpx

_PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def is_loopback(base_url: str) -> bool:
    """Whether a URL is plain HTTP to this machine."""
    parts = urlsplit(base_url)
    if parts.scheme != "http" or not parts.hostname:
        return False
    if parts.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        return False


def transport_for(base_url: str) -> httpx.BaseTransport | None:
    """The transport for a target at ``base_url`` (None: httpx's own)."""
    if not is_loopback(base_url) or any(os.environ.get(name) for name in _PROXY_VARIABLES):
        return None
    return LoopbackTransport()


class LoopbackTransport(httpx.BaseTransport):
    """Requests over kept-alive ``http.client`` connections, one per host and port."""

    def __init__(self) -> None:
        self._connections: dict[tuple[str, int], http.client.HTTPConnection] = {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        address = (url.host, url.port or 80)
        timeout = _timeout(request)
        body = request.read()
        connection = self._connection(address, timeout)
        try:
            connection.putrequest(
                request.method,
                url.raw_path.decode("ascii"),
                skip_host=True,
                skip_accept_encoding=True,
            )
            for name, value in request.headers.raw:
                connection.putheader(name.decode("latin-1"), value.decode("latin-1"))
            connection.endheaders(body or None)
            response = connection.getresponse()
            content = response.read()
        except TimeoutError as exc:
            self._drop(address)
            raise httpx.ReadTimeout(str(exc), request=request) from exc
        except ConnectionRefusedError as exc:
            self._drop(address)
            raise httpx.ConnectError(str(exc), request=request) from exc
        except (OSError, http.client.HTTPException) as exc:
            self._drop(address)
            problem = f"{type(exc).__name__}: {exc}"
            raise httpx.RemoteProtocolError(problem, request=request) from exc
        if response.will_close:
            self._drop(address)
        return httpx.Response(
            response.status,
            headers=[(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.getheaders()],
            stream=httpx.ByteStream(content),
            extensions={
                "http_version": b"HTTP/1.1" if response.version == 11 else b"HTTP/1.0",
                "reason_phrase": response.reason.encode("latin-1", "replace"),
            },
            request=request,
        )

    def _connection(self, address: tuple[str, int], timeout: float | None) -> Any:
        connection = self._connections.get(address)
        if connection is not None and not _reusable(connection):
            self._drop(address)
            connection = None
        if connection is None:
            connection = http.client.HTTPConnection(address[0], address[1], timeout=timeout)
            self._connections[address] = connection
        else:
            connection.timeout = timeout
            if connection.sock is not None:
                connection.sock.settimeout(timeout)
        return connection

    def _drop(self, address: tuple[str, int]) -> None:
        connection = self._connections.pop(address, None)
        if connection is not None:
            connection.close()

    def close(self) -> None:
        for address in list(self._connections):
            self._drop(address)


def _reusable(connection: http.client.HTTPConnection) -> bool:
    """A kept-alive connection the server has not closed: nothing is readable on it between
    requests (what is, is its end, or bytes no request asked for), as httpcore judges it."""
    sock = connection.sock
    if sock is None:
        return True  # not connected yet: it connects on the next request
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


def _timeout(request: httpx.Request) -> float | None:
    timeouts = request.extensions.get("timeout", {})
    values = [v for v in (timeouts.get("connect"), timeouts.get("read")) if v is not None]
    return max(values) if values else None
