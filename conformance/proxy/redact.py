"""What the proxy keeps of a request is never a secret: credentials and ``x-secret`` fields.

* headers: ``Authorization`` keeps its scheme and reads ``${API_KEY}`` (so a kept exchange's
  curl command runs with the key as a shell variable); the other credential headers
  (:data:`CREDENTIAL_HEADERS`) read ``[redacted]``;
* bodies: every value of a field the contract marks ``x-secret: true`` (a signing secret)
  reads ``[redacted]``, wherever it sits in a JSON body, request or response;
* the caller's identity (for the sequence rules: one workspace's idempotency keys, one
  caller's 402) is a digest of its credential, never the credential.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[redacted]"
API_KEY = "${API_KEY}"
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "cookie", "set-cookie"}
)


def secret_fields(document: Mapping[str, Any]) -> frozenset[str]:
    """The names of every property the contract marks ``x-secret: true``."""
    schemas = (document.get("components") or {}).get("schemas") or {}
    refs = {
        f"#/components/schemas/{name}"
        for name, schema in schemas.items()
        if isinstance(schema, dict) and schema.get("x-secret") is True
    }
    names: set[str] = set()
    stack: list[Any] = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for name, value in (node.get("properties") or {}).items():
                if isinstance(value, dict) and (
                    value.get("x-secret") is True or value.get("$ref") in refs
                ):
                    names.add(name)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(names)


def caller(headers: Iterable[tuple[str, str]]) -> str | None:
    """Who sent a request, as a digest of its credential (None: it carried none)."""
    for name, value in headers:
        if name.lower() in ("authorization", "x-api-key"):
            return hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()[:16]
    return None


def masked_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The headers as the proxy keeps them: credentials masked (repeated names joined)."""
    kept: dict[str, str] = {}
    for name, value in headers:
        lower = name.lower()
        if lower in ("authorization", "proxy-authorization"):
            scheme, _, rest = value.partition(" ")
            value = f"{scheme} {API_KEY}" if rest else REDACTED
        elif lower in CREDENTIAL_HEADERS:
            value = REDACTED
        kept[lower] = f"{kept[lower]}, {value}" if lower in kept else value
    return kept


def redacted_body(body: bytes, secrets: frozenset[str]) -> bytes:
    """``body`` with the value of every ``x-secret`` field replaced (a JSON body that names
    one); a body that names one but cannot be read as JSON is not kept at all."""
    if not body or not secrets or not any(f'"{n}"'.encode() in body for n in secrets):
        return body
    try:
        value = json.loads(body)
    except ValueError:
        return f"{REDACTED}: a body of {len(body)} bytes naming a secret field".encode()
    return json.dumps(_redact(value, secrets), ensure_ascii=False).encode("utf-8")


def _redact(value: Any, secrets: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {
            k: REDACTED if k in secrets and v is not None else _redact(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact(v, secrets) for v in value]
    return value


def secret_values(body: bytes, secrets: frozenset[str]) -> list[str]:
    """The string values of the ``x-secret`` fields of a JSON body, longest first (so that
    text quoting them can be cut)."""
    if not body or not any(f'"{n}"'.encode() in body for n in secrets):
        return []
    try:
        value = json.loads(body)
    except ValueError:
        return []
    found: set[str] = set()
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if k in secrets and isinstance(v, str) and v:
                    found.add(v)
                    found.add(v[:20])  # a message may quote the start of a long value
                else:
                    stack.append(v)
        elif isinstance(node, list):
            stack.extend(node)
    return sorted(found, key=len, reverse=True)
