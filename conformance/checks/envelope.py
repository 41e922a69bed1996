"""Envelope: what every response carries, judged on every response the run receives.

The rules read the contract: the error body is ``components.schemas.Error``; the codes a status
may carry are the ``x-known-codes`` of its reusable error response's ``code``; the headers an
authenticated response carries are those its documented response declares.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema_rs

from conformance.checks import REGISTRY, Check, observer
from conformance.context import Context
from conformance.target import Exchange

FAMILY = "envelope"
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|z|[+-]\d{2}:?\d{2})?")
_UTC_Z = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z")
_RATE_LIMIT_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")


def _key(exchange: Exchange) -> tuple[Any, ...]:
    return (exchange.operation_id or exchange.path, exchange.status)


@observer("envelope-request-id", FAMILY, "every response carries a non-empty x-request-id header")
def request_id(ctx: Context, exchange: Exchange) -> None:
    ctx.expect(
        bool(exchange.header("x-request-id")),
        "x-request-id",
        f"the {exchange.status} response has no x-request-id header",
        exchange=exchange,
        quote=ctx.held.quote("#/components/headers/RequestId")
        + " (Every response carries `x-request-id`.)",
        key=_key(exchange),
    )


def _success_body_declared(ctx: Context, exchange: Exchange) -> bool:
    op = ctx.contract.full.operations.get(exchange.operation_id or "")
    if op is None:
        return False
    schema = ctx.contract.full.success_schema(op)
    return schema is not None and "success" in ctx.contract.full.flatten(schema)["properties"]


@observer(
    "envelope-success-flag", FAMILY, "`success` is true on every 2xx body and false on every error"
)
def success_flag(ctx: Context, exchange: Exchange) -> None:
    body = exchange.json()
    if exchange.ok:
        if not _success_body_declared(ctx, exchange):
            return
        ctx.expect(
            isinstance(body, dict) and body.get("success") is True,
            "success-true",
            lambda: (
                f"a {exchange.status} body must have success: true; got {_show(body, exchange)}"
            ),
            exchange=exchange,
            quote=ctx.held.quote("#/components/schemas/Ok"),
            key=_key(exchange),
        )
    elif exchange.status >= 400:
        ctx.expect(
            isinstance(body, dict) and body.get("success") is False,
            "success-false",
            lambda: (
                f"a {exchange.status} body must have success: false; got {_show(body, exchange)}"
            ),
            exchange=exchange,
            quote=ctx.held.quote("#/components/schemas/Error"),
            key=_key(exchange),
        )


def _error_validator(ctx: Context) -> Any:
    cache = ctx.session._checkers
    if "error-body" not in cache:
        schema = ctx.held.document["components"]["schemas"]["Error"]
        root = {**schema, "components": ctx.held.document["components"]}
        cache["error-body"] = jsonschema_rs.Draft202012Validator(root)
    return cache["error-body"]


@observer(
    "envelope-error-body",
    FAMILY,
    "every error body is the standard one: success, error, code, details",
)
def error_body(ctx: Context, exchange: Exchange) -> None:
    if exchange.status < 400:
        return
    body = exchange.json()
    if body is None:
        ctx.fail(
            "error-body",
            f"the {exchange.status} body is not JSON: {_show(body, exchange)}",
            exchange=exchange,
            quote=ctx.held.quote("#/components/schemas/Error"),
            key=_key(exchange),
        )
        return
    errors = [
        f"{'/'.join(map(str, e.instance_path)) or 'body'}: {e.message}"
        for e in _error_validator(ctx).iter_errors(body)
    ]
    ctx.expect(
        not errors,
        "error-body",
        f"the {exchange.status} body is not the standard error body: {'; '.join(errors)}",
        exchange=exchange,
        quote=ctx.held.quote("#/components/schemas/Error"),
        key=_key(exchange),
    )


@observer(
    "envelope-error-code",
    FAMILY,
    "each error `code` is one the contract lists for its status (an unknown code is a warning)",
)
def error_code(ctx: Context, exchange: Exchange) -> None:
    code = exchange.code
    if exchange.status < 400 or not isinstance(code, str):
        return
    table = ctx.held.error_codes
    known = table.get(exchange.status)
    quote = (
        f"{exchange.status}: {ctx.held.error_description(exchange.status)} "
        "(a code is never renamed, removed or moved to another status within v1)"
    )
    if known is None:
        ctx.warn(
            f"status {exchange.status} is not in the contract's error table (code {code!r})",
            subject=exchange.operation_id or exchange.path,
            key=("status", exchange.status, code),
        )
        return
    if code in known:
        ctx.passed()
        return
    elsewhere = sorted(s for s, codes in table.items() if code in codes)
    if elsewhere:
        ctx.fail(
            "code-status",
            f"code {code!r} answered under {exchange.status}; the contract lists it under "
            f"{', '.join(map(str, elsewhere))} (codes of {exchange.status}: {', '.join(known)})",
            exchange=exchange,
            quote=quote,
            key=(code, exchange.status),
        )
    else:
        ctx.warn(
            f"unknown code {code!r} under {exchange.status} (known: {', '.join(known)}); "
            "handled by its status, as the versioning rules allow",
            subject=exchange.operation_id or exchange.path,
            key=("code", exchange.status, code),
        )
        ctx.passed()


def _timestamps(value: Any, path: str = "") -> list[tuple[str, str]]:
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            found += _timestamps(v, f"{path}/{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _timestamps(v, f"{path}/{i}")
    elif isinstance(value, str) and _DATE_TIME.fullmatch(value):
        found.append((path, value))
    return found


@observer("envelope-timestamps", FAMILY, "every timestamp in a body is UTC and ends in `Z`")
def timestamps(ctx: Context, exchange: Exchange) -> None:
    if exchange.operation_id == "getOpenApi":
        return
    found = _timestamps(exchange.json())
    if not found:
        return
    bad = [(p, v) for p, v in found if not _UTC_Z.fullmatch(v)]
    ctx.expect(
        not bad,
        "utc-z",
        "timestamps not in UTC ending in Z: " + ", ".join(f"{p} = {v!r}" for p, v in bad[:5]),
        exchange=exchange,
        quote=ctx.held.quote("#/components/schemas/Timestamp"),
        key=_key(exchange),
    )


@observer(
    "envelope-rate-limit-headers",
    FAMILY,
    "authenticated responses carry x-ratelimit-limit, -remaining and -reset (integers)",
)
def rate_limit_headers(ctx: Context, exchange: Exchange) -> None:
    if exchange.auth not in ("primary", "second") or not exchange.operation_id:
        return
    op = ctx.held.operations.get(exchange.operation_id)
    if op is None:
        return
    declared = ctx.held.response_headers(op, exchange.status)
    expected = [name for name in _RATE_LIMIT_HEADERS if name in declared]
    if not expected:
        return
    problems = []
    for name in expected:
        value = exchange.header(name)
        if value is None:
            problems.append(f"{name} is missing")
        elif not value.isdigit():
            problems.append(f"{name} is not a non-negative integer: {value!r}")
    ctx.expect(
        not problems,
        "rate-limit-headers",
        f"the {exchange.status} response: {'; '.join(problems)}",
        exchange=exchange,
        quote="Authenticated responses carry `x-ratelimit-limit`, `x-ratelimit-remaining` and "
        "`x-ratelimit-reset`. " + ctx.held.quote("#/components/headers/RateLimitRemaining"),
        key=_key(exchange),
    )


def _show(body: Any, exchange: Exchange) -> str:
    if body is None:
        text = exchange.response_body[:120].decode("utf-8", "replace")
        return f"a non-JSON body {text!r}" if text else "an empty body"
    text = json.dumps(body, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


def _json_rule(ctx: Context, exchange: Exchange) -> None:
    media = (exchange.header("content-type") or "").split(";")[0].strip().lower()
    ctx.expect(
        media == "application/json" and exchange.json() is not None,
        "json",
        lambda: (
            f"the {exchange.status} response is not JSON ({media or 'no content type'}): "
            f"{_show(exchange.json(), exchange)}"
        ),
        exchange=exchange,
        quote="Bodies are JSON.",
        key=_key(exchange),
    )


def _json_sample(ctx: Context) -> None:
    """A small sample of requests, so that the envelope rules have responses to judge."""
    ctx.request("GET", "/v1/openapi.json", operation_id="getOpenApi", auth="none")
    ctx.request("GET", "/v1/capabilities", operation_id="getCapabilities")
    ctx.request("GET", "/v1/capabilities", operation_id="getCapabilities", auth="none")
    ctx.request("GET", "/v1/conformance-no-such-path")
    for op in ctx.held.iter_operations(include_inferred=False):
        if op.method == "GET" and not op.path_parameters and ctx.held.items_field(op):
            ctx.call(op, params={"limit": 2} if op.parameter("limit", "query") else None)


REGISTRY["envelope-json"] = Check(
    "envelope-json",
    FAMILY,
    "every response body is JSON (and a small sample of requests for the envelope rules)",
    run=_json_sample,
    observe=_json_rule,
)
