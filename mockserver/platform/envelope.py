"""What every response looks like: request ids, UTC timestamps ending in ``Z``, JSON bodies."""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from starlette.responses import Response

# Request ids need to be unique, not secret: a generator of its own, seeded from the system.
_ids = random.Random(os.urandom(32))


def new_request_id() -> str:
    """``req_`` and 128 random bits in hex."""
    return f"req_{_ids.getrandbits(128):032x}"


def iso_z(moment: datetime) -> str:
    """A timestamp as the interface document wants it: UTC, ISO 8601, ending in ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def encode_json(body: Any) -> bytes:
    """Compact UTF-8 JSON. orjson (several times faster than the json module) writes the same
    bytes for everything the mock answers; what it refuses (an integer beyond 64 bits, a key
    that is not a string) is written by the json module instead."""
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        encode_json(body), status_code=status, headers=headers, media_type="application/json"
    )


def public(record: dict[str, Any]) -> dict[str, Any]:
    """A stored record as clients see it: internal keys (leading ``_``) left out."""
    shown = dict(record)  # a plain dict (records are tracked dicts) to take keys out of
    for key in [key for key in shown if key[:1] == "_"]:
        del shown[key]
    return shown


@dataclass
class Reply:
    """What a handler answers: a status, a JSON body and extra headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
