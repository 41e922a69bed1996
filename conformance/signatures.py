"""Independent verifier of webhook signatures, as a receiver would write it.

Deliberately separate from the mock server's signer (it imports nothing from ``mockserver``): the
conformance suite judges a deployment only through the public interface. The rules:

* ``X-Service-Signature`` is ``sha256=`` and exactly 64 lowercase hex digits: the HMAC-SHA256,
  keyed by the secret (its UTF-8 bytes), of ``<X-Service-Timestamp>.<raw request body>``;
* the raw received bytes are verified, never a re-serialised body; the comparison is constant
  time;
* ``X-Service-Timestamp`` is UTC, whole seconds, ending in ``Z``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from datetime import datetime

_SIGNATURE = re.compile(r"sha256=[0-9a-f]{64}")
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


def expected_signature(secret: str, timestamp: str, body: bytes) -> str:
    """The header value a correct sender puts on ``body`` sent at ``timestamp``."""
    message = timestamp.encode("utf-8") + b"." + body
    return "sha256=" + hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signature_header: str) -> bool:
    """Whether ``signature_header`` is the well-formed, correct signature of ``body``."""
    if not _SIGNATURE.fullmatch(signature_header):
        return False
    expected = expected_signature(secret, timestamp, body)
    return hmac.compare_digest(expected.encode("ascii"), signature_header.encode("ascii"))


def check_timestamp_format(value: str) -> bool:
    """Whether ``value`` is a real UTC instant written ``YYYY-MM-DDTHH:MM:SSZ``."""
    if not _TIMESTAMP.fullmatch(value):
        return False
    try:
        datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return False
    return True
