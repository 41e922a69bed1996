"""Defects on the wire: rewriting finished responses (``finish_response``) and requests before
validation (``prepare_request``), and public operations (``admit_public``, ``count_public``).

:func:`rewriting_responses` and :func:`rewriting_requests` wrap the seam already in place, so
several defects compose.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace
from typing import Any

from starlette.responses import Response

from mockserver.areas.jobs.engine import TERMINAL
from mockserver.contract import Operation
from mockserver.platform import auth, ratelimit
from mockserver.platform.errors import ApiError, invalid_request
from mockserver.runtime import Runtime
from mockserver.seams import Headers, Query, Seams
from tests.defects.defect import Apply, Defect

_STAMP = re.compile(rb'(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?)Z"')
_RATE_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")


# -- responses -------------------------------------------------------------------------------


@dataclass
class Message:
    """A finished response, opened for rewriting."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body decoded, or None when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def rewrite(self, change: Callable[[Any], object]) -> None:
        """Let ``change`` change the decoded body in place, and encode it again (a body that is
        not JSON is left alone)."""
        value = self.json()
        if value is not None:
            change(value)
            self.body = json.dumps(value, separators=(",", ":")).encode()

    def edit(self, **changes: Any) -> None:
        """Change (or, with None, remove) top-level fields of a JSON object body."""

        def apply(value: Any) -> None:
            for key, new in changes.items():
                if new is None:
                    value.pop(key, None)
                else:
                    value[key] = new

        if isinstance(self.json(), dict):
            self.rewrite(apply)

    def code(self) -> str | None:
        value = self.json()
        return value.get("code") if isinstance(value, dict) else None


ResponseRewrite = Callable[[Operation | None, Message], None]


def rewriting_responses(rewrite: ResponseRewrite) -> Apply:
    """A defect that rewrites every finished response with ``rewrite`` (in place)."""

    def apply(seams: Seams) -> Seams:
        previous = seams.finish_response

        def finish(op: Operation | None, response: Response) -> Response:
            response = previous(op, response)
            headers = {k: v for k, v in response.headers.items() if k != "content-length"}
            message = Message(response.status_code, headers, bytes(response.body))
            rewrite(op, message)
            return Response(message.body, status_code=message.status, headers=message.headers)

        return replace(seams, finish_response=finish)

    return apply


def _not_found_as_empty_200(op: Operation | None, m: Message) -> None:
    if op is None:
        m.status, m.body = 200, b""


def _forbidden_instead_of_unauthorized(op: Operation | None, m: Message) -> None:
    if m.status == 401:
        m.status = 403
        m.edit(code="forbidden")


def _validation_answers_422(op: Operation | None, m: Message) -> None:
    if m.status == 400:
        m.status = 422


def _code_under_wrong_status(op: Operation | None, m: Message) -> None:
    if m.status == 404:
        m.edit(code="invalid_request")


def _error_body_without_code(op: Operation | None, m: Message) -> None:
    if m.status >= 400:
        m.edit(code=None)


def _success_flag_missing(op: Operation | None, m: Message) -> None:
    if 200 <= m.status < 300:
        m.edit(success=None)


def _timestamp_without_z(op: Operation | None, m: Message) -> None:
    m.body = _STAMP.sub(rb'\1+00:00"', m.body)


def _no_request_id_on_errors(op: Operation | None, m: Message) -> None:
    if m.status >= 400:
        m.headers.pop("x-request-id", None)


def _no_rate_limit_headers(op: Operation | None, m: Message) -> None:
    for name in _RATE_HEADERS:
        m.headers.pop(name, None)


def _rate_limited_without_retry_after(op: Operation | None, m: Message) -> None:
    if m.status == 429:
        m.headers.pop("retry-after", None)


def _insufficient_credits_without_shortfall(op: Operation | None, m: Message) -> None:
    if m.status == 402 and m.code() == "insufficient_credits":
        m.edit(error="not enough credits", details=None)


def _no_payload_limit(op: Operation | None, m: Message) -> None:
    if m.status == 413:
        m.status = 400
        m.edit(code="invalid_request", details={"reason": "body_too_large"})


# -- requests --------------------------------------------------------------------------------

RequestRewrite = Callable[[Operation, Query, Headers, Any], tuple[Query, Headers, Any]]


def rewriting_requests(rewrite: RequestRewrite) -> Apply:
    """A defect that rewrites (or refuses) every authenticated request before validation."""

    def apply(seams: Seams) -> Seams:
        previous = seams.prepare_request

        def prepare(
            op: Operation, query: Query, headers: Headers, body: Any
        ) -> tuple[Query, Headers, Any]:
            return rewrite(op, *previous(op, query, headers, body))

        return replace(seams, prepare_request=prepare)

    return apply


def _server_error_on_max_limit(
    op: Operation, query: Query, headers: Headers, body: Any
) -> tuple[Query, Headers, Any]:
    if ("limit", "100") in query:
        raise ApiError("internal_error", "defect: server-error-on-max-limit")
    return query, headers, body


def _limit_not_enforced(
    op: Operation, query: Query, headers: Headers, body: Any
) -> tuple[Query, Headers, Any]:
    kept = [(k, v) for k, v in query if k != "limit" or (v.isdigit() and 1 <= int(v) <= 100)]
    return kept, headers, body


def _deprecated_after_refused(
    op: Operation, query: Query, headers: Headers, body: Any
) -> tuple[Query, Headers, Any]:
    deprecated = op.operation_id in ("listAssets", "getVariationBatch")
    if deprecated and any(name == "after" for name, _ in query):
        raise invalid_request("the after parameter is not supported", reason="defect")
    return query, headers, body


def _idempotency_key_optional(
    op: Operation, query: Query, headers: Headers, body: Any
) -> tuple[Query, Headers, Any]:
    if "idempotency-key" not in {k.lower() for k in headers}:
        headers = {**headers, "Idempotency-Key": f"defect-{id(body)}-{len(query)}"}
    return query, headers, body


def _short_callback_secret_accepted(
    op: Operation, query: Query, headers: Headers, body: Any
) -> tuple[Query, Headers, Any]:
    if isinstance(body, dict):
        secret = body.get("callbackSecret")
        if isinstance(secret, str) and len(secret) < 32:
            body["callbackSecret"] = secret.ljust(32, "x")
    return query, headers, body


def _openapi_needs_key(seams: Seams) -> Seams:
    previous = seams.admit_public

    def admit(op: Operation, headers: Mapping[str, str]) -> None:
        if not headers.get("authorization"):
            raise ApiError("unauthorized", "defect: openapi-needs-key")
        previous(op, headers)

    return replace(seams, admit_public=admit)


def _openapi_rate_limited(seams: Seams) -> Seams:
    def count_public(
        rt: Runtime, op: Operation, headers: Mapping[str, str]
    ) -> ratelimit.RateState | None:
        try:
            caller = auth.authenticate(rt.world, headers.get("authorization"))
        except ApiError:
            return None  # without a (known) key there is no one to count against
        return rt.rate.hit(rt.seams.rate_identity(caller))

    return replace(seams, count_public=count_public)


# -- defects of the records, jobs, prices and deprecations checks ------------------------------


def _jobs_in(value: Any) -> list[dict[str, Any]]:
    """The job objects of a response body (``job``, or the items of ``jobs``)."""
    if not isinstance(value, dict):
        return []
    found = [value["job"]] if isinstance(value.get("job"), dict) else []
    return found + [j for j in value.get("jobs") or [] if isinstance(j, dict)]


def _rewrite_jobs(m: Message, change: Callable[[dict[str, Any]], None]) -> None:
    if _jobs_in(m.json()):  # a body without jobs keeps its bytes
        m.rewrite(lambda value: [change(job) for job in _jobs_in(value)])


def _deprecated_field_dropped(op: Operation | None, m: Message) -> None:
    def drop(job: dict[str, Any]) -> None:
        if isinstance(job.get("artifacts"), dict):
            job["artifacts"].pop("video", None)

    _rewrite_jobs(m, drop)


def _job_leaves_terminal(seams: Seams) -> Seams:
    # reads of each terminal job since the state was last replaced: a reset (or a restored
    # snapshot) forgets them, so that the same requests after a reset get the same answers
    terminal_reads: dict[str, int] = {}

    class Forgetting(type(seams)):  # type: ignore[misc]
        def world(self, data: dict[str, Any], *, seed: int | None) -> Any:
            terminal_reads.clear()  # a new world: the reset state, its jobs never read
            return super().world(data, seed=seed)

    def leave(op: Operation | None, m: Message) -> None:
        if op is None or op.operation_id != "getJob" or m.status != 200:
            return

        def change(job: dict[str, Any]) -> None:
            if job.get("status") in TERMINAL:
                seen = terminal_reads[job["id"]] = terminal_reads.get(job["id"], 0) + 1
                if seen > 1:  # read terminal once, then in flight again
                    job.update(status="running", artifacts=None)

        _rewrite_jobs(m, change)

    forgetting = Forgetting(**{f.name: getattr(seams, f.name) for f in fields(seams)})
    return rewriting_responses(leave)(forgetting)


def _charge_differs_from_quote(op: Operation | None, m: Message) -> None:
    if op is None or op.operation_id != "getCapabilities" or m.status != 200:
        return

    def lower(value: Any) -> None:
        for capability in value.get("capabilities", []):
            capability["price"] = capability["price"] * 9 // 10  # quoted below what is charged

    m.rewrite(lower)


def _products_none_as_empty(
    op: Operation, query: Query, headers: Headers, body: Any
) -> tuple[Query, Headers, Any]:
    channel_patch = op.operation_id == "updateChannel" and isinstance(body, dict)
    if channel_patch and body.get("products") == ["none"]:
        body["products"] = []  # "promotes nothing" kept as "nothing bound yet"
    return query, headers, body


def _partial_update_clears_unsent(
    op: Operation, query: Query, headers: Headers, body: Any
) -> tuple[Query, Headers, Any]:
    if op.operation_id == "updateCampaign" and isinstance(body, dict):
        cleared = {"description": "", "connectedAccountIds": [], "platforms": []}
        body = {**cleared, **body}  # a PATCH written as a whole record, unsent fields emptied
    return query, headers, body


def _offset_wins_over_cursor(
    op: Operation, query: Query, headers: Headers, body: Any
) -> tuple[Query, Headers, Any]:
    names = {name for name, _ in query}
    if op.operation_id == "listCatalogVideos" and {"cursor", "offset"} <= names:
        query = [(k, v) for k, v in query if k != "cursor"]
    return query, headers, body


# -- defects of the model (model-workspace) ---------------------------------------------------


def _channel_patch_resets_unsent(
    op: Operation, query: Query, headers: Headers, body: Any
) -> tuple[Query, Headers, Any]:
    if op.operation_id == "updateChannel" and isinstance(body, dict):
        body = {"niche": "", "voicePreset": "", **body}  # a PATCH applied as a whole record
    return query, headers, body


def _job_status_outside_set(op: Operation | None, m: Message) -> None:
    if op is None or op.operation_id not in ("getJob", "listJobs") or m.status != 200:
        return

    def rename(job: dict[str, Any]) -> None:
        if job.get("status") == "running":
            job["status"] = "processing"  # a value outside the contract's closed set

    _rewrite_jobs(m, rename)


def _job_events_out_of_order(op: Operation | None, m: Message) -> None:
    if op is None or op.operation_id != "listJobEvents" or m.status != 200:
        return
    if isinstance(m.json().get("events"), list):
        # newest first: the stream is no longer in sequence order
        m.rewrite(lambda value: value["events"].reverse())


# -- roles, the credential store, Retry-After and failed calls' keys --------------------------

GOVERNED = ("createCommunityCampaign", "updateCommunityCampaign", "saveAutopilot")
HTTP_DATE = "Fri, 20 Nov 2026 09:01:00 GMT"  # a Retry-After form the contract does not allow


def _forbidden_as_not_found(op: Operation | None, m: Message) -> None:
    if op is not None and op.operation_id in GOVERNED and m.status == 403:
        m.status = 404
        m.edit(code="not_found", error="not found", details=None)


def _outage_answers_401(op: Operation | None, m: Message) -> None:
    if m.status == 503 and b"credential_store_unreachable" in m.body:
        m.status = 401
        m.headers.pop("retry-after", None)
        m.edit(code="unauthorized", error="invalid API key", details=None)


def _retry_after_not_integer(op: Operation | None, m: Message) -> None:
    if m.status == 429:
        m.headers["retry-after"] = HTTP_DATE


def _upstream_retry_after_not_integer(op: Operation | None, m: Message) -> None:
    if m.status == 503 and m.code() == "upstream_unavailable" and "retry-after" in m.headers:
        m.headers["retry-after"] = HTTP_DATE


#: The Idempotency-Key of the request being answered (set before validation, read at the end).
_ANSWERING: ContextVar[str | None] = ContextVar("answering-idempotency-key", default=None)


def _failed_call_holds_key(seams: Seams) -> Seams:
    """Every error answered to a request with an Idempotency-Key is kept under the key and
    replayed to the next request with it (validation failures and 402s included)."""
    held: dict[str, tuple[int, dict[str, Any]]] = {}
    previous_prepare, previous_finish = seams.prepare_request, seams.finish_response

    def prepare(
        op: Operation, query: Query, headers: Headers, body: Any
    ) -> tuple[Query, Headers, Any]:
        key = next((v for k, v in headers.items() if k.lower() == "idempotency-key"), None)
        _ANSWERING.set(key)
        if key is not None and key in held:
            status, error = held[key]
            raise ApiError(
                error["code"], error.get("error", ""), status=status, details=error.get("details")
            )
        return previous_prepare(op, query, headers, body)

    def finish(op: Operation | None, response: Response) -> Response:
        response = previous_finish(op, response)
        key = _ANSWERING.get()
        _ANSWERING.set(None)
        if key is not None and response.status_code >= 400:
            try:
                error = json.loads(bytes(response.body))
            except ValueError:
                return response
            if isinstance(error, dict) and isinstance(error.get("code"), str):
                held.setdefault(key, (response.status_code, error))
        return response

    return replace(seams, prepare_request=prepare, finish_response=finish)


DEFECTS: dict[str, Defect] = {
    "no-request-id-on-errors": Defect(
        "every response carries x-request-id", rewriting_responses(_no_request_id_on_errors)
    ),
    "forbidden-instead-of-unauthorized": Defect(
        "a missing or invalid key answers 401 unauthorized",
        rewriting_responses(_forbidden_instead_of_unauthorized),
    ),
    "timestamp-without-z": Defect(
        "timestamps are UTC and end in Z", rewriting_responses(_timestamp_without_z)
    ),
    "code-under-wrong-status": Defect(
        "a code never leaves under another status", rewriting_responses(_code_under_wrong_status)
    ),
    "not-found-as-empty-200": Defect(
        "an unknown path answers 404 not_found in the error body",
        rewriting_responses(_not_found_as_empty_200),
    ),
    "no-rate-limit-headers": Defect(
        "authenticated responses carry x-ratelimit-*", rewriting_responses(_no_rate_limit_headers)
    ),
    "error-body-without-code": Defect(
        "every error body has a code", rewriting_responses(_error_body_without_code)
    ),
    "success-flag-missing": Defect(
        "every success body has success: true", rewriting_responses(_success_flag_missing)
    ),
    "rate-limited-without-retry-after": Defect(
        "429 rate_limited carries Retry-After",
        rewriting_responses(_rate_limited_without_retry_after),
    ),
    "insufficient-credits-without-shortfall": Defect(
        "402 insufficient_credits gives the shortfall",
        rewriting_responses(_insufficient_credits_without_shortfall),
    ),
    "no-payload-limit": Defect(
        "a body over the size limit answers 413 payload_too_large",
        rewriting_responses(_no_payload_limit),
    ),
    "validation-answers-422": Defect(
        "schema failures answer 400 invalid_request", rewriting_responses(_validation_answers_422)
    ),
    "openapi-needs-key": Defect("GET /v1/openapi.json answers without a key", _openapi_needs_key),
    "openapi-rate-limited": Defect(
        "GET /v1/openapi.json is not rate limited (no request to it is counted)",
        _openapi_rate_limited,
    ),
    "limit-not-enforced": Defect(
        "limit outside its bounds answers 400 invalid_request",
        rewriting_requests(_limit_not_enforced),
    ),
    "deprecated-after-refused": Defect(
        "the deprecated after is still accepted", rewriting_requests(_deprecated_after_refused)
    ),
    "idempotency-key-optional": Defect(
        "a missing required Idempotency-Key answers 400",
        rewriting_requests(_idempotency_key_optional),
    ),
    "short-callback-secret-accepted": Defect(
        "a callbackSecret under 32 characters answers 400",
        rewriting_requests(_short_callback_secret_accepted),
    ),
    "server-error-on-max-limit": Defect(
        "valid input never answers 5xx (limit 100 on a list)",
        rewriting_requests(_server_error_on_max_limit),
    ),
    "partial-update-clears-unsent": Defect(
        "a PATCH changes only the fields sent",
        rewriting_requests(_partial_update_clears_unsent),
    ),
    "products-none-as-empty": Defect(
        'products ["none"] (promotes nothing) differs from [] (nothing bound yet)',
        rewriting_requests(_products_none_as_empty),
    ),
    "charge-differs-from-quote": Defect(
        "prices are read from the table the charge uses, so quote and charge agree",
        rewriting_responses(_charge_differs_from_quote),
    ),
    "job-leaves-terminal": Defect("a terminal job status never changes", _job_leaves_terminal),
    "deprecated-field-dropped": Defect(
        "a deprecated field stays returned (a render job's artifacts.video)",
        rewriting_responses(_deprecated_field_dropped),
    ),
    "offset-wins-over-cursor": Defect(
        "when cursor and the deprecated offset are both sent, the cursor wins",
        rewriting_requests(_offset_wins_over_cursor),
    ),
    "forbidden-as-not-found": Defect(
        "a governance refusal answers 403 forbidden, never 404",
        rewriting_responses(_forbidden_as_not_found),
    ),
    "outage-answers-401": Defect(
        "a credential-store outage answers 503 upstream_unavailable with Retry-After, never 401",
        rewriting_responses(_outage_answers_401),
    ),
    "retry-after-not-integer": Defect(
        "Retry-After on a 429 is seconds to wait (an integer)",
        rewriting_responses(_retry_after_not_integer),
    ),
    "upstream-retry-after-not-integer": Defect(
        "Retry-After on a 503 upstream_unavailable, when sent, is seconds to wait",
        rewriting_responses(_upstream_retry_after_not_integer),
    ),
    "failed-call-holds-key": Defect("a failed call does not hold its key", _failed_call_holds_key),
    "channel-patch-resets-unsent": Defect(
        "a PATCH changes only the fields sent (a channel's)",
        rewriting_requests(_channel_patch_resets_unsent),
    ),
    "job-status-outside-set": Defect(
        "a job's status is one of the closed set the contract gives",
        rewriting_responses(_job_status_outside_set),
    ),
    "job-events-out-of-order": Defect(
        "a job's event stream is ordered: each sequence above the one before",
        rewriting_responses(_job_events_out_of_order),
    ),
}
