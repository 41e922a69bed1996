"""``--har PATH``: what the proxy saw, as HAR 1.2, bounded and without secrets.

The archive holds the most recent :data:`ENTRIES` exchanges (older ones are dropped, and the
archive's ``comment`` says how many), each body cut to :data:`BODY_CHARS` characters: at most
about ``ENTRIES * 2 * BODY_CHARS`` characters of bodies (32 MiB), whatever the traffic. What it
holds is what the proxy keeps (conformance/proxy/redact.py): credentials masked in headers
(``Authorization: Bearer ${API_KEY}``, cookies ``[redacted]``), the contract's ``x-secret``
fields redacted in bodies, and credentials in a query string (:data:`SECRET_QUERY`) redacted.
"""

from __future__ import annotations

import json
from collections import deque
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from conformance import __version__
from conformance.proxy.redact import REDACTED
from conformance.target import Exchange

ENTRIES = 1000
BODY_CHARS = 16 * 1024
SECRET_QUERY = frozenset({"api_key", "apikey", "key", "token", "access_token", "secret"})


class HarRecorder:
    def __init__(self, entries: int = ENTRIES, body_chars: int = BODY_CHARS) -> None:
        self.entries: deque[dict[str, Any]] = deque(maxlen=entries)
        self.body_chars = body_chars
        self.seen = 0

    def add(self, exchange: Exchange, started: float) -> None:
        self.seen += 1
        self.entries.append(self._entry(exchange, started))

    def _text(self, body: bytes) -> str:
        text = body[: self.body_chars * 4].decode("utf-8", "replace")
        return text[: self.body_chars]

    def _entry(self, exchange: Exchange, started: float) -> dict[str, Any]:
        url = _masked_url(exchange.url)
        request_type = exchange.request_headers.get("content-type", "")
        response_type = exchange.response_headers.get("content-type", "")
        milliseconds = round(exchange.elapsed * 1000, 3)
        request: dict[str, Any] = {
            "method": exchange.method,
            "url": url,
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": _headers(exchange.request_headers),
            "queryString": [
                {"name": k, "value": v}
                for k, v in parse_qsl(urlsplit(url).query, keep_blank_values=True)
            ],
            "headersSize": -1,
            "bodySize": len(exchange.request_body),
        }
        if exchange.request_body:
            request["postData"] = {
                "mimeType": request_type,
                "text": self._text(exchange.request_body),
            }
        try:
            reason = HTTPStatus(exchange.status).phrase
        except ValueError:
            reason = ""
        return {
            "startedDateTime": datetime.fromtimestamp(started, UTC).isoformat(),
            "time": milliseconds,
            "request": request,
            "response": {
                "status": exchange.status,
                "statusText": reason,
                "httpVersion": "HTTP/1.1",
                "cookies": [],
                "headers": _headers(exchange.response_headers),
                "content": {
                    "size": len(exchange.response_body),
                    "mimeType": response_type,
                    "text": self._text(exchange.response_body),
                },
                "redirectURL": exchange.response_headers.get("location", ""),
                "headersSize": -1,
                "bodySize": -1,
            },
            "cache": {},
            "timings": {"send": 0, "wait": milliseconds, "receive": 0},
            "comment": exchange.operation_id or "",
        }

    def write(self, path: Path) -> None:
        dropped = self.seen - len(self.entries)
        archive = {
            "log": {
                "version": "1.2",
                "creator": {"name": "conformance proxy", "version": __version__},
                "entries": list(self.entries),
                "comment": (
                    f"{self.seen} exchanges seen; the most recent {len(self.entries)} kept"
                    + (f" ({dropped} older ones dropped)" if dropped else "")
                    + f"; bodies cut to {self.body_chars} characters; credentials and x-secret "
                    "fields redacted"
                ),
            }
        }
        path.write_text(json.dumps(archive, ensure_ascii=False, indent=1), encoding="utf-8")


def _headers(headers: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in headers.items()]


def _masked_url(url: str) -> str:
    parts = urlsplit(url)
    if not parts.query:
        return url
    query = [
        (k, REDACTED if k.lower() in SECRET_QUERY else v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
    ]
    return urlunsplit(parts._replace(query=urlencode(query)))
