"""What every response looks like: request ids, UTC timestamps ending in ``Z``, JSON bodies."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from starlette.responses import Response


def new_request_id() -> str:
    return f"req_{uuid.uuid4().hex}"


def iso_z(moment: datetime) -> str:
    """A timestamp as the interface document wants it: UTC, ISO 8601, ending in ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def encode_json(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        encode_json(body), status_code=status, headers=headers, media_type="application/json"
    )


def public(record: dict[str, Any]) -> dict[str, Any]:
    """A stored record as clients see it: internal keys (leading ``_``) left out."""
    return {key: value for key, value in record.items() if not key.startswith("_")}


@dataclass
class Reply:
    """What a handler answers: a status, a JSON body and extra headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
