"""The defects the suite must catch, each breaking one rule of the contract.

Each is a test-only ``--defect NAME`` of the bundled mock (implemented in the mock by the team)
and names the check that must catch it. Many are also emulated today by :class:`DefectProxy`,
a proxy in front of the mock that breaks the rule on the wire, so that the suite is proven able
to fail before the mock has its defects.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlencode

import httpx
from starlette.requests import Request


@dataclass(frozen=True)
class Defect:
    name: str
    rule: str  # the rule of the contract it breaks
    only: tuple[str, ...]  # what a run selects to catch it quickly
    check: str  # the check that must fail


DEFECTS = [
    Defect("no-request-id-on-errors", "every response carries x-request-id",
           ("envelope",), "envelope-request-id"),
    Defect("forbidden-instead-of-unauthorized", "a missing or invalid key answers 401 "
           "unauthorized", ("auth-missing-key",), "auth-missing-key"),
    Defect("empty-next-cursor", "nextCursor is null on the last page",
           ("pagination-walk",), "pagination-walk"),
    Defect("repeat-item-across-pages", "a walk sees each item once",
           ("pagination-walk",), "pagination-walk"),
    Defect("has-more-disagrees", "hasMore is true exactly when nextCursor is not null",
           ("pagination-walk",), "pagination-walk"),
    Defect("unbound-cursors", "cursors are bound to the query that produced them",
           ("pagination-cursors",), "pagination-cursors"),
    Defect("tampered-cursor-accepted", "an unusable cursor answers 400 invalid_request",
           ("pagination-cursors",), "pagination-cursors"),
    Defect("limit-not-enforced", "limit outside 1 to 100 answers 400 invalid_request",
           ("pagination-limit-bounds",), "pagination-limit-bounds"),
    Defect("deprecated-after-refused", "deprecated `after` on assets is still accepted",
           ("pagination-deprecated-params",), "pagination-deprecated-params"),
    Defect("stream-goes-backwards", "an ordered stream's nextAfter never goes backwards",
           ("pagination-ordered-streams",), "pagination-ordered-streams"),
    Defect("timestamp-without-z", "timestamps are UTC and end in Z",
           ("envelope",), "envelope-timestamps"),
    Defect("code-under-wrong-status", "a code is never moved to another status (404 answers "
           "invalid_request)", ("envelope",), "envelope-error-code"),
    Defect("not-found-as-empty-200", "an unknown path answers 404 not_found with a JSON "
           "error body", ("envelope",), "envelope-json"),
    Defect("no-rate-limit-headers", "authenticated responses carry x-ratelimit-*",
           ("envelope",), "envelope-rate-limit-headers"),
    Defect("error-body-without-code", "every error body has a code",
           ("envelope",), "envelope-error-body"),
    Defect("success-flag-missing", "every success body has success: true",
           ("envelope",), "envelope-success-flag"),
    Defect("openapi-needs-key", "GET /v1/openapi.json answers without a key",
           ("auth-public-contract",), "auth-public-contract"),
    Defect("workspace-slug-ignored", "a disagreeing X-Workspace-Slug is refused",
           ("auth-workspace-slug",), "auth-workspace-slug"),
    Defect("cross-workspace-readable", "ids of other workspaces answer 404 not_found",
           ("auth-cross-workspace",), "auth-cross-workspace"),
    Defect("rate-limited-without-retry-after", "429 rate_limited carries Retry-After",
           (), "rate-limit"),
    Defect("idempotency-key-optional", "a missing required Idempotency-Key answers 400",
           ("idempotency-key-required",), "idempotency-key-required"),
    Defect("replay-creates-again", "a retry with the same key answers the same resource",
           ("idempotency-replay",), "idempotency-replay"),
    Defect("replay-charges-twice", "an idempotent replay is charged once",
           ("idempotency-single-charge",), "idempotency-single-charge"),
    Defect("secret-echoed", "the webhook secret is never returned",
           ("webhooks-subscription-deliveries",), "webhooks-subscription-deliveries"),
    Defect("signature-over-reserialised-body", "the signature is over the raw body bytes",
           ("webhooks-subscription-deliveries",), "webhooks-subscription-deliveries"),
    Defect("uppercase-signature-hex", "the signature is lowercase hex",
           ("webhooks-callback-deliveries",), "webhooks-callback-deliveries"),
    Defect("delivery-timestamp-without-z", "X-Service-Timestamp is UTC ending in Z",
           ("webhooks-callback-deliveries",), "webhooks-callback-deliveries"),
    Defect("new-event-id-on-retry", "a retried delivery keeps its eventId",
           ("webhooks-callback-deliveries",), "webhooks-callback-deliveries"),
    Defect("retry-after-400", "a delivery answered 400 is not retried",
           ("webhooks-subscription-deliveries",), "webhooks-subscription-deliveries"),
    Defect("short-callback-secret-accepted", "a callbackSecret under 32 characters is "
           "refused with 400", ("webhooks-url-policy",), "webhooks-url-policy"),
    Defect("insufficient-credits-without-shortfall", "402 insufficient_credits gives the "
           "shortfall in details", ("limits-payment-required",), "limits-payment-required"),
    Defect("budget-cap-lifted-by-top-up", "budget_capped does not clear with a top-up",
           ("limits-payment-required",), "limits-payment-required"),
    Defect("unavailable-capability-served", "a capability reported unavailable answers 503 "
           "capability_unavailable", ("limits-capability-unavailable",),
           "limits-capability-unavailable"),
    Defect("no-payload-limit", "a body over the size limit answers 413 payload_too_large",
           ("limits-payload-too-large",), "limits-payload-too-large"),
    Defect("validation-answers-422", "schema failures answer 400 invalid_request",
           ("schema-negative", "schema-responses"), "schema-negative"),
    Defect("server-error-on-max-limit", "no 5xx for valid input (limit = 100 on a list)",
           ("pagination-walk", "schema-server-errors"), "schema-server-errors"),
    Defect("default-not-applied", "an omitted field takes its stated default",
           ("records-defaults",), "records-defaults"),
    Defect("unconnected-account-accepted", "a community campaign needs a connected account",
           ("records-community-account",), "records-community-account"),
    Defect("classification-drifts", "classification is deterministic",
           ("workflows-classify-deterministic",), "workflows-classify-deterministic"),
    Defect("deprecations-unmarked", "deprecations are marked deprecated: true in the document",
           ("schema-published-document",), "schema-published-document"),
    Defect("capabilities-billed", "GET /v1/capabilities is free; never billed",
           ("limits-capabilities-free",), "limits-capabilities-free"),
    Defect("openapi-rate-limited", "GET /v1/openapi.json is not rate limited (none counted)",
           ("auth-openapi-not-rate-limited",), "auth-openapi-not-rate-limited"),
    Defect("unowned-project-filed", "a project the workspace does not own answers not_found; "
           "the work is never filed elsewhere", ("auth-unowned-project",),
           "auth-unowned-project"),
    Defect("usage-needs-spend", "reading usage never needs a key that can spend",
           ("auth-usage-without-spend",), "auth-usage-without-spend"),
    Defect("revocation-ignored", "revoking a key takes effect within 30 seconds",
           ("auth-key-revocation",), "auth-key-revocation"),
    Defect("render-delivered-to-subscriptions", "subscriptions cover neither renders from "
           "POST /v1/video/render nor 3D jobs", ("webhooks-subscription-coverage",),
           "webhooks-subscription-coverage"),
    Defect("qa-failed-artifacts", "media is never published from a qa_failed job (artifacts "
           "null)", ("webhooks-qa-failed-not-published",), "webhooks-qa-failed-not-published"),
    Defect("overlapping-retries-execute", "an Idempotency-Key identifies the logical operation: "
           "overlapping retries execute once", ("idempotency-overlapping-retries",),
           "idempotency-overlapping-retries"),
    Defect("overlapping-charges-lost", "the workspace is billed every call: paid calls at once "
           "are all charged", ("limits-concurrent-billing",), "limits-concurrent-billing"),
    Defect("bucket-per-key", "all keys of one person share the rate-limit bucket",
           (), "rate-limit-shared-bucket"),
    Defect("other-key-not-paused", "a 429 earned with one key of a person pauses their other "
           "keys during Retry-After", (), "rate-limit-shared-bucket"),
    Defect("paused-autopilot-runs", "a paused autopilot refuses manual runs, approvals and "
           "retries with 409 conflict", ("workflows-autopilot-paused",),
           "workflows-autopilot-paused"),
    Defect("stale-generation-accepted", "a stale expectedGeneration answers 409 conflict with "
           "details.currentGeneration", ("workflows-approve-generation",),
           "workflows-approve-generation"),
    Defect("remix-priced-flat", "a remix costs one video analysis per url source",
           ("workflows-remix-pricing",), "workflows-remix-pricing"),
    Defect("max-credits-ignored", "a live price above maxCredits answers 409 conflict, nothing "
           "charged", ("workflows-max-credits",), "workflows-max-credits"),
    Defect("stale-word-cursor-served", "a wordCursor of a changed composition answers 409 "
           "stale_cursor", ("workflows-stale-word-cursor",), "workflows-stale-word-cursor"),
    Defect("legacy-cursor-accepted", "GET /v1/projects refuses cursors issued before the "
           "2026-10-10 store switch", ("pagination-legacy-projects-cursor",),
           "pagination-legacy-projects-cursor"),
    Defect("partial-update-clears-unsent", "a PATCH changes only the fields sent",
           ("records-partial-update",), "records-partial-update"),
    Defect("products-none-as-empty", 'products ["none"] differs from [] and is kept as sent',
           ("records-products-none",), "records-products-none"),
    Defect("charge-differs-from-quote", "quote and charge agree",
           ("limits-quote-equals-charge",), "limits-quote-equals-charge"),
    Defect("job-leaves-terminal", "a terminal job status never changes",
           ("jobs-status-closed-set",), "jobs-status-closed-set"),
    Defect("deprecated-field-dropped", "a deprecated field stays returned (artifacts.video)",
           ("schema-deprecated-fields",), "schema-deprecated-fields"),
    Defect("offset-wins-over-cursor", "when cursor and offset are both sent, cursor wins",
           ("pagination-catalog-precedence",), "pagination-catalog-precedence"),
    Defect("forbidden-as-not-found", "a governance refusal answers 403 forbidden, never 404",
           ("auth-forbidden-role",), "auth-forbidden-role"),
    Defect("outage-answers-401", "a credential-store outage answers 503 upstream_unavailable "
           "with Retry-After, never 401", ("auth-credential-store-outage",),
           "auth-credential-store-outage"),
    Defect("retry-after-not-integer", "Retry-After on a 429 is seconds to wait (an integer)",
           ("rate-limit",), "rate-limit-retry-after"),
    Defect("upstream-retry-after-not-integer", "Retry-After on a 503 upstream_unavailable, "
           "when sent, is seconds to wait", ("auth-credential-store-outage",
           "envelope-retry-after-503"), "envelope-retry-after-503"),
    Defect("failed-call-holds-key", "a failed call does not hold its key",
           ("idempotency-failed-call-frees-key",), "idempotency-failed-call-frees-key"),
    Defect("refused-call-charged", "nothing is charged for a paid call that was refused",
           ("model-workspace",), "model-workspace"),
    Defect("channel-patch-resets-unsent", "a PATCH changes only the fields sent (a channel's)",
           ("model-workspace",), "model-workspace"),
    Defect("job-status-outside-set", "a job's status is one of the contract's closed set",
           ("model-workspace",), "model-workspace"),
    Defect("job-events-out-of-order", "a job's event stream is in sequence order",
           ("model-workspace",), "model-workspace"),
    Defect("malformed-key-answers-400", "a malformed Authorization header answers 401",
           ("auth-malformed-key",), "auth-malformed-key"),
    Defect("unknown-key-answers-404", "an unknown key answers 401 unauthorized",
           ("auth-unknown-key",), "auth-unknown-key"),
    Defect("campaign-without-updated-at", "a campaign carries its required updatedAt",
           ("pagination-walk", "schema-responses"), "schema-responses"),
    Defect("server-error-on-film-format", "valid input never answers 5xx",
           ("schema-positive",), "schema-positive"),
    Defect("created-record-unreadable", "a link's target exists",
           ("schema-stateful",), "schema-stateful"),
]  # fmt: skip

_STAMP = re.compile(rb'("\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?)Z"')


class DefectProxy:
    """An ASGI proxy in front of a live mock that breaks one rule on the wire."""

    PROXIED: ClassVar[set[str]] = {
        "no-request-id-on-errors", "forbidden-instead-of-unauthorized", "empty-next-cursor",
        "repeat-item-across-pages", "has-more-disagrees", "unbound-cursors",
        "limit-not-enforced", "timestamp-without-z", "code-under-wrong-status",
        "not-found-as-empty-200", "no-rate-limit-headers", "error-body-without-code",
        "success-flag-missing", "openapi-needs-key", "workspace-slug-ignored",
        "rate-limited-without-retry-after", "idempotency-key-optional", "replay-creates-again",
        "secret-echoed", "no-payload-limit", "validation-answers-422", "deprecated-after-refused",
        "server-error-on-max-limit",
    }  # fmt: skip

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.defect = ""
        self.last_item: dict[str, Any] = {}
        self.client: httpx.AsyncClient | None = None  # made on the server's event loop

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await Request(scope, receive).body()
        headers = {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in scope["headers"]
            if k.lower() != b"host"
        }
        raw_query = scope["query_string"].decode("latin-1")
        query = parse_qsl(raw_query, keep_blank_values=True)
        original = list(query)
        path = scope["raw_path"].decode("latin-1") if scope.get("raw_path") else scope["path"]
        early = self.before(scope["method"], path, query, headers, body)
        if early is not None:
            status, out_headers, content = early
        else:
            if query != original:
                raw_query = urlencode(query)
            url = self.upstream + path + ("?" + raw_query if raw_query else "")
            if self.client is None:
                self.client = httpx.AsyncClient(timeout=60)
            response = await self.client.request(
                scope["method"], url, headers=headers, content=body
            )
            status, content = response.status_code, response.content
            out_headers = {
                k: v
                for k, v in response.headers.items()
                if k not in ("content-length", "content-encoding", "transfer-encoding")
            }
            if path.startswith("/v1/"):
                status, out_headers, content = self.after(
                    path, query, headers, body, status, out_headers, content
                )
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (k.encode("latin-1"), v.encode("latin-1")) for k, v in out_headers.items()
                ],
            }
        )
        await send({"type": "http.response.body", "body": content})

    # -- requests ---------------------------------------------------------------------------

    def before(
        self, method: str, path: str, query: list[tuple[str, str]], headers: dict[str, str],
        body: bytes,
    ) -> tuple[int, dict[str, str], bytes] | None:  # fmt: skip
        d = self.defect
        anonymous = "authorization" not in headers
        if d == "openapi-needs-key" and path == "/v1/openapi.json" and anonymous:
            error = {"success": False, "error": "key", "code": "unauthorized"}
            return (
                401,
                {"x-request-id": "req_proxy", "content-type": "application/json"},
                (json.dumps(error).encode()),
            )
        if d == "workspace-slug-ignored":
            headers.pop("x-workspace-slug", None)
        if d == "unbound-cursors" and any(k == "cursor" for k, _ in query):
            query[:] = [(k, v) for k, v in query if k in ("cursor", "limit")]
        if d == "limit-not-enforced":
            query[:] = [(k, str(min(max(int(v), 1), 100)) if k == "limit" and v.lstrip("-")
                         .isdigit() else v) for k, v in query]  # fmt: skip
        if d == "idempotency-key-optional" and method == "POST":
            headers.setdefault("idempotency-key", f"proxy-{uuid.uuid4().hex}")
        if d == "replay-creates-again" and "idempotency-key" in headers:
            headers["idempotency-key"] = f"proxy-{uuid.uuid4().hex}"
        if d == "server-error-on-max-limit" and ("limit", "100") in query:
            error = {"success": False, "error": "boom", "code": "internal_error"}
            return (
                500,
                {"x-request-id": "req_proxy", "content-type": "application/json"},
                (json.dumps(error).encode()),
            )
        return None

    # -- responses --------------------------------------------------------------------------

    def after(
        self, path: str, query: list[tuple[str, str]], request_headers: dict[str, str],
        request_body: bytes, status: int, headers: dict[str, str], content: bytes,
    ) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
        d = self.defect
        try:
            data = json.loads(content)
        except ValueError:
            data = None
        if d == "no-request-id-on-errors" and status >= 400:
            headers.pop("x-request-id", None)
        if d == "forbidden-instead-of-unauthorized" and status == 401:
            status, data = 403, {**data, "code": "forbidden"}
        if d == "timestamp-without-z":
            content = _STAMP.sub(rb'\1+00:00"', content)
            data = None
        if d == "code-under-wrong-status" and status == 404:
            data = {**data, "code": "invalid_request"}
        if d == "not-found-as-empty-200" and status == 404:
            return 200, {k: v for k, v in headers.items() if k != "content-type"}, b""
        if d == "no-rate-limit-headers" and status < 300:
            headers = {k: v for k, v in headers.items() if not k.startswith("x-ratelimit")}
        if d == "error-body-without-code" and status >= 400 and isinstance(data, dict):
            data.pop("code", None)
        if d == "success-flag-missing" and status < 300 and isinstance(data, dict):
            data.pop("success", None)
        if d == "rate-limited-without-retry-after" and status == 429:
            headers.pop("retry-after", None)
        if d == "no-payload-limit" and status == 413:
            status, data = 400, {**data, "code": "invalid_request"}
        if d == "validation-answers-422" and status == 400:
            status = 422
        after = any(k == "after" for k, _ in query)
        if d == "deprecated-after-refused" and after and path == "/v1/assets":
            status = 400
            data = {"success": False, "error": "after is gone", "code": "invalid_request"}
        if d == "secret-echoed" and path == "/v1/webhook-subscriptions" and status == 200:
            secret = json.loads(request_body).get("secret")
            data["subscription"]["secret"] = secret
        if isinstance(data, dict) and "nextCursor" in data:
            data = self._paging(path, query, data)
        if data is not None:
            content = json.dumps(data).encode()
        return status, headers, content

    def _paging(self, path: str, query: list[tuple[str, str]], data: dict[str, Any]) -> Any:
        d = self.defect
        if d == "empty-next-cursor" and data["nextCursor"] is None:
            data["nextCursor"] = ""
        if d == "has-more-disagrees" and data["nextCursor"] is None and "hasMore" in data:
            data["hasMore"] = True
        if d == "repeat-item-across-pages":
            items = next((v for v in data.values() if isinstance(v, list)), None)
            if items is not None:
                first_page = not any(k == "cursor" for k, _ in query)
                if not first_page and path in self.last_item:
                    items.insert(0, self.last_item[path])
                if items:
                    self.last_item[path] = items[-1]
        return data
