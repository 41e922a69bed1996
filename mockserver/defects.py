"""Test-only defects: ``mockserver --defect NAME`` breaks one rule of the contract on purpose.

They exist to prove the conformance suite able to fail (tests/conformance/test_defects.py runs
the suite against the mock with each defect and expects the named check to catch it). Never
switch one on for anything else. Most defects break the rule on the wire, in
:func:`on_response`; the rest are one-line hooks where the rule lives, each marked
``defect:`` with its name.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

if TYPE_CHECKING:
    from mockserver.contract import Operation

# name -> the rule of the contract it breaks
DEFECTS: dict[str, str] = {
    "no-request-id-on-errors": "every response carries x-request-id",
    "forbidden-instead-of-unauthorized": "a missing or invalid key answers 401 unauthorized",
    "empty-next-cursor": "nextCursor is null on the last page",
    "repeat-item-across-pages": "a walk sees each item once",
    "has-more-disagrees": "hasMore is true exactly when nextCursor is not null",
    "unbound-cursors": "cursors are bound to the query that produced them",
    "tampered-cursor-accepted": "an altered cursor answers 400 invalid_request",
    "limit-not-enforced": "limit outside its bounds answers 400 invalid_request",
    "deprecated-after-refused": "the deprecated after is still accepted",
    "stream-goes-backwards": "an ordered stream's nextAfter never goes backwards",
    "timestamp-without-z": "timestamps are UTC and end in Z",
    "code-under-wrong-status": "a code never leaves under another status",
    "not-found-as-empty-200": "an unknown path answers 404 not_found in the error body",
    "no-rate-limit-headers": "authenticated responses carry x-ratelimit-*",
    "error-body-without-code": "every error body has a code",
    "success-flag-missing": "every success body has success: true",
    "openapi-needs-key": "GET /v1/openapi.json answers without a key",
    "workspace-slug-ignored": "a disagreeing X-Workspace-Slug is refused",
    "cross-workspace-readable": "ids of other workspaces answer 404 not_found",
    "rate-limited-without-retry-after": "429 rate_limited carries Retry-After",
    "idempotency-key-optional": "a missing required Idempotency-Key answers 400",
    "replay-creates-again": "a retry with the same key answers the same resource",
    "replay-charges-twice": "an idempotent replay is not charged again",
    "secret-echoed": "the webhook secret is never returned",
    "signature-over-reserialised-body": "the signature is over the raw body bytes sent",
    "uppercase-signature-hex": "the signature is lowercase hex",
    "delivery-timestamp-without-z": "X-Service-Timestamp is UTC ending in Z",
    "new-event-id-on-retry": "a retried delivery keeps its eventId",
    "retry-after-400": "a delivery answered 400 is not retried",
    "short-callback-secret-accepted": "a callbackSecret under 32 characters answers 400",
    "insufficient-credits-without-shortfall": "402 insufficient_credits gives the shortfall",
    "budget-cap-lifted-by-top-up": "budget_capped does not clear with a top-up",
    "unavailable-capability-served": "an unavailable capability answers 503",
    "no-payload-limit": "a body over the size limit answers 413 payload_too_large",
    "validation-answers-422": "schema failures answer 400 invalid_request",
    "server-error-on-max-limit": "valid input never answers 5xx (limit 100 on a list)",
}

_STAMP = re.compile(rb'(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?)Z"')
_RATE_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")


def check(names: frozenset[str]) -> None:
    unknown = sorted(names - set(DEFECTS))
    if unknown:
        raise ValueError(
            "unknown defect(s): " + ", ".join(unknown) + "; known: " + ", ".join(DEFECTS)
        )


def on_response(active: frozenset[str], op: Operation | None, response: Response) -> Response:
    """Break the wire-level rules of the active defects in a finished response."""
    status = response.status_code
    headers = {k: v for k, v in response.headers.items() if k != "content-length"}
    body: bytes = response.body
    if "not-found-as-empty-200" in active and op is None:
        status, body = 200, b""
    if "forbidden-instead-of-unauthorized" in active and status == 401:
        status, body = 403, _edit(body, code="forbidden")
    if "validation-answers-422" in active and status == 400:
        status = 422
    if "code-under-wrong-status" in active and status == 404:
        body = _edit(body, code="invalid_request")
    if "error-body-without-code" in active and status >= 400:
        body = _edit(body, code=None)
    if "success-flag-missing" in active and 200 <= status < 300:
        body = _edit(body, success=None)
    if "timestamp-without-z" in active:
        body = _STAMP.sub(rb'\1+00:00"', body)
    if "no-request-id-on-errors" in active and status >= 400:
        headers.pop("x-request-id", None)
    if "no-rate-limit-headers" in active:
        for name in _RATE_HEADERS:
            headers.pop(name, None)
    if "rate-limited-without-retry-after" in active and status == 429:
        headers.pop("retry-after", None)
    return Response(body, status_code=status, headers=headers)


def _edit(body: bytes, **changes: Any) -> bytes:
    try:
        value = json.loads(body)
    except ValueError:
        return body
    if not isinstance(value, dict):
        return body
    for key, new in changes.items():
        if new is None:
            value.pop(key, None)
        else:
            value[key] = new
    return json.dumps(value, separators=(",", ":")).encode()


def on_request(
    active: frozenset[str],
    op: Operation,
    query: list[tuple[str, str]],
    headers: dict[str, str],
    body: Any,
) -> tuple[list[tuple[str, str]], dict[str, str], Any]:
    """Break the request-side rules of the active defects before validation."""
    from mockserver.platform.errors import ApiError, invalid_request

    names = {name for name, _ in query}
    if "server-error-on-max-limit" in active and ("limit", "100") in query:
        raise ApiError("internal_error", "defect: server-error-on-max-limit")
    if "limit-not-enforced" in active:
        query = [(k, v) for k, v in query if k != "limit" or (v.isdigit() and 1 <= int(v) <= 100)]
    deprecated = op.operation_id in ("listAssets", "getVariationBatch") and "after" in names
    if "deprecated-after-refused" in active and deprecated:
        raise invalid_request("the after parameter is not supported", reason="defect")
    if "idempotency-key-optional" in active and "idempotency-key" not in {
        k.lower() for k in headers
    }:
        headers = {**headers, "Idempotency-Key": f"defect-{id(body)}-{len(query)}"}
    if "short-callback-secret-accepted" in active and isinstance(body, dict):
        secret = body.get("callbackSecret")
        if isinstance(secret, str) and len(secret) < 32:
            body["callbackSecret"] = secret.ljust(32, "x")
    return query, headers, body
