"""Webhook signing: the bytes a delivery carries and the headers that prove who sent them.

Both webhook mechanisms (per-job callbacks and subscriptions) are signed the same way:

* ``X-Service-Signature`` is ``sha256=`` and the lowercase hex HMAC-SHA256, keyed by the secret,
  of the exact string ``<timestamp>.<raw request body>``.
* ``X-Service-Timestamp`` is a UTC ISO 8601 timestamp in whole seconds ending in ``Z``, so the
  dot that joins it to the body is unambiguous.

The bytes signed are the bytes sent: :func:`encode_body` produces them once and the caller sends
that exact value, never a re-serialisation. The secret is keyed as its UTF-8 bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from datetime import UTC, datetime
from typing import Any

SIGNATURE_PREFIX = "sha256="
TIMESTAMP_PATTERN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


def format_timestamp(moment: datetime) -> str:
    """``moment`` as ``YYYY-MM-DDTHH:MM:SSZ`` in UTC; naive is taken as UTC, fractions dropped."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    utc = moment.astimezone(UTC)
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}"
        f"T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}Z"
    )


def signed_message(timestamp: str, body: bytes) -> bytes:
    """The exact bytes the HMAC covers: ``<timestamp>.<raw body>``."""
    return timestamp.encode("utf-8") + b"." + body


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Service-Signature`` value for ``body`` sent at ``timestamp``."""
    digest = hmac.new(secret.encode("utf-8"), signed_message(timestamp, body), hashlib.sha256)
    return SIGNATURE_PREFIX + digest.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """Whether ``signature`` is :func:`sign`'s value for ``body`` sent at ``timestamp``
    (compared in constant time): what a receiver checks (``mockserver listen``,
    ``mockserver.testing``'s webhook receiver)."""
    return hmac.compare_digest(sign(secret, timestamp, body).encode(), signature.encode())


def encode_body(payload: dict[str, Any]) -> bytes:
    """The exact bytes to send: compact JSON, UTF-8, non-ASCII written raw, key order kept."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


def delivery_headers(
    *,
    secret: str,
    timestamp: str,
    body: bytes,
    event: str,
    event_id: str,
    job_id: str | None = None,
    subscription_id: str | None = None,
) -> dict[str, str]:
    """The headers of one delivery of ``body``.

    Exactly one of ``job_id`` (per-job callback) and ``subscription_id`` (subscription delivery)
    must be given; ``timestamp`` must be whole seconds ending in ``Z`` (see
    :func:`format_timestamp`).
    """
    if (job_id is None) == (subscription_id is None):
        raise ValueError("give exactly one of job_id (callback) and subscription_id (subscription)")
    if not TIMESTAMP_PATTERN.fullmatch(timestamp):
        raise ValueError(f"timestamp must be UTC whole seconds ending in Z, got {timestamp!r}")
    headers = {
        "Content-Type": "application/json",
        "X-Service-Signature": sign(secret, timestamp, body),
        "X-Service-Timestamp": timestamp,
        "X-Service-Event": event,
        "X-Service-Event-Id": event_id,
    }
    if job_id is not None:
        headers["X-Service-Job-Id"] = job_id
    else:
        headers["X-Service-Subscription-Id"] = str(subscription_id)
    return headers
