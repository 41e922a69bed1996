"""What a call means beyond its shape: defaults applied, the account a campaign needs,
classification that is deterministic, and the deployment's own OpenAPI document.

Each check states one rule of the interface document; the values they hold a deployment to
(defaults, deprecations, stated operations) are read from the contract, not repeated here.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

from conformance.checks import check
from conformance.context import Context
from conformance.contract import ContractView, Operation
from conformance.profiles import inferred
from conformance.skips import Skip
from conformance.target import Exchange

_TEMPLATE = re.compile(r"\{[^}]+\}")


def _shape(path: str) -> str:
    """A path with its parameters' names left out: ``/v1/autopilots/{}``."""
    return _TEMPLATE.sub("{}", path)


def _find_op(ctx: Context, method: str, path: str) -> Operation | None:
    return next(
        (
            op
            for op in ctx.held.operations.values()
            if op.method == method and _shape(op.path) == _shape(path)
        ),
        None,
    )


def _body_schema(view: ContractView, op: Operation) -> dict[str, Any]:
    body = view.resolve(op.definition.get("requestBody") or {})
    schema = body.get("content", {}).get("application/json", {}).get("schema")
    return view.flatten(schema) if schema else {}


def _record_with(body: Any, names: set[str], depth: int = 3) -> dict[str, Any] | None:
    """The first object in ``body`` (breadth first, a few levels) holding one of ``names``."""
    level = [body]
    for _ in range(depth):
        nested: list[Any] = []
        for node in level:
            if isinstance(node, dict):
                if names & node.keys():
                    return node
                nested.extend(v for v in node.values() if isinstance(v, (dict, list)))
            elif isinstance(node, list):
                nested.extend(v for v in node if isinstance(v, dict))
        level = nested
    return None


# -- defaults -------------------------------------------------------------------------------------


def stated_defaults(ctx: Context, op: Operation) -> dict[str, Any]:
    """The body fields of ``op`` with a default the profile's contract holds to."""
    view = ctx.held
    found = {}
    for name, node in (_body_schema(view, op).get("properties") or {}).items():
        spec = view.resolve(node)
        if "default" in spec and not (ctx.profile == "contract" and inferred(spec)):
            found[name] = spec["default"]
    return found


@check(
    "records-defaults",
    "records",
    "a body field the contract gives a default, when omitted, reads back as that default "
    "(autopilot enabled/maxVideosPerDay/maxPostsPerDay, context snapshot passages/exclusions)",
    creates=True,
)
def defaults_applied(ctx: Context) -> None:
    for op in ctx.held.operations.values():
        if op.method not in ("POST", "PUT") or not (defaults := stated_defaults(ctx, op)):
            continue
        if reason := ctx.why_not_send(op):
            ctx.skip(reason)
            continue
        exchange = ctx.probe(
            op,
            salt="defaults",
            idempotency_key=ctx.new_key() if op.idempotency_key else None,
            body_update=lambda body, names=set(defaults): {
                k: v for k, v in body.items() if k not in names
            },
        )
        if exchange is None:
            continue
        if not exchange.ok:
            ctx.skip(f"a request without the defaulted fields was refused ({exchange.status})")
            continue
        _judge_defaults(ctx, op, defaults, exchange, "answer")
        read = _find_op(ctx, "GET", op.path) if op.method == "PUT" else None
        if read is not None and ctx.why_not_send(read) is None:
            params = _path_values(op, exchange)
            if params is None:
                ctx.skip(f"not read back: the path sent is not one of {op.path}")
                continue
            _judge_defaults(ctx, op, defaults, ctx.call(read, path_parameters=params), "read-back")


def _path_values(op: Operation, exchange: Exchange) -> dict[str, str] | None:
    """The path parameters ``exchange`` was sent with, named as ``op`` names them (None: its
    path is not one of ``op``'s)."""
    names = [p.name for p in op.path_parameters]
    template = _TEMPLATE.sub("([^/]+)", re.escape(op.path).replace(r"\{", "{").replace(r"\}", "}"))
    match = re.fullmatch(template, exchange.path)
    if match is None:
        return None
    from urllib.parse import unquote

    return {name: unquote(value) for name, value in zip(names, match.groups(), strict=False)}


def _judge_defaults(
    ctx: Context, op: Operation, defaults: dict[str, Any], exchange: Exchange, where: str
) -> None:
    record = _record_with(exchange.json(), set(defaults))
    if record is None:
        ctx.skip(f"the {where} does not show the defaulted fields")
        return
    for name, default in defaults.items():
        if name not in record:
            continue
        ctx.expect(
            record[name] == default,
            "default",
            f"{op.label} without `{name}`: the {where} has {name} = "
            f"{json.dumps(record[name])}, the stated default is {json.dumps(default)}",
            exchange=exchange,
            quote=f"`{name}` omitted means {json.dumps(default)}",
            key=(op.operation_id, name, where),
        )


# -- the campaign's account ----------------------------------------------------------------------


@check(
    "records-community-account",
    "records",
    "a community campaign for an account that is not a connected account of the workspace is "
    "refused with a 4xx the contract lists, and nothing is created",
    creates=True,
)
def community_account(ctx: Context) -> None:
    create = _find_op(ctx, "POST", "/v1/community-campaigns")
    listing = _find_op(ctx, "GET", "/v1/community-campaigns")
    if create is None or listing is None:
        raise Skip("the contract has no community-campaign create and list")
    if reason := ctx.why_not_send(create):
        raise Skip(reason)
    before = _ids(ctx, listing)
    missing = f"conformance-no-such-account-{uuid.uuid4().hex[:12]}"
    exchange = ctx.probe(
        create,
        salt="unconnected-account",
        idempotency_key=ctx.new_key(),
        body_update=lambda body: {**body, "connectedAccountId": missing},
    )
    if exchange is None:
        return
    quote = "The selected account must be a connected community-forum account in this workspace."
    codes = ctx.held.error_codes.get(exchange.status, ())
    ctx.expect(
        400 <= exchange.status < 500 and exchange.code in codes,
        "refused",
        f"a campaign on an account the workspace does not have answered {exchange.answered}",
        exchange=exchange,
        quote=quote,
    )
    after = _ids(ctx, listing)
    if before is not None and after is not None:
        ctx.expect(
            after == before,
            "nothing-created",
            f"the refused create left {len(after - before)} new campaign(s)",
            exchange=exchange,
            quote=quote,
        )


def _ids(ctx: Context, listing: Operation) -> set[str] | None:
    exchange = ctx.call(listing)
    body = exchange.json()
    items = ctx.held.items_field(listing)
    if exchange.status != 200 or not isinstance(body, dict) or items not in body:
        return None
    return {i["id"] for i in body[items] if isinstance(i, dict) and "id" in i}


# -- classification --------------------------------------------------------------------------------


@check(
    "workflows-classify-deterministic",
    "workflows",
    "POST /v1/themes/classify answers the same classification for the same content",
)
def classify_deterministic(ctx: Context) -> None:
    op = _find_op(ctx, "POST", "/v1/themes/classify")
    if op is None:
        raise Skip("the contract has no POST /v1/themes/classify")
    if reason := ctx.why_not_send(op):
        raise Skip(reason)
    for salt in ("classify-1", "classify-2", "classify-3"):
        prepared = ctx.sample(op, salt=salt)
        if prepared is None:
            ctx.skip("no request could be generated")
            continue
        first, second = ctx.send(prepared, op), ctx.send(prepared, op)
        if ctx.unavailable(first):
            return
        if first.status != 200:
            ctx.skip(f"a generated request was refused ({first.status})")
            continue
        ctx.expect(
            second.status == 200 and first.json() == second.json(),
            "deterministic",
            "the same content was classified differently the second time",
            exchange=second,
            quote="Deterministic classification of content into canonical themes",
        )


# -- the published document ------------------------------------------------------------------------


def deprecations(document: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    """Every deprecated parameter and body or response field of ``document``, as
    ``(METHOD, path shape, where, name)`` (``where``: query, header, path, body, response)."""
    view = ContractView(document)
    found: set[tuple[str, str, str, str]] = set()
    for op in view.operations.values():
        shape = _shape(op.path)
        for parameter in op.parameters:
            if parameter.deprecated:
                found.add((op.method, shape, parameter.location, parameter.name))
        for name in _deprecated_properties(view, _body_schema(view, op)):
            found.add((op.method, shape, "body", name))
        schema = view.success_schema(op)
        for name in _deprecated_properties(view, schema or {}):
            found.add((op.method, shape, "response", name))
    return found


def _deprecated_properties(view: ContractView, schema: Any, seen: int = 0) -> Iterator[str]:
    """Dotted names of the deprecated properties within ``schema`` (a few levels deep)."""
    if seen > 4 or not isinstance(schema, dict):
        return
    schema = view.resolve(schema)
    for key in ("items", "anyOf", "oneOf"):
        value = schema.get(key)
        for part in value if isinstance(value, list) else [value] if value else []:
            yield from _deprecated_properties(view, part, seen + 1)
    for name, raw in (view.flatten(schema).get("properties") or {}).items():
        node = view.resolve(raw)  # a `deprecated` beside a `$ref` is the raw node's
        if any(isinstance(n, dict) and n.get("deprecated") for n in (raw, node)):
            yield name
        for inner in _deprecated_properties(view, node, seen + 1):
            yield f"{name}.{inner}"


@check(
    "schema-published-document",
    "schema",
    "GET /v1/openapi.json: every path under /v1, every stated operation (method and path) "
    "present, every stated deprecation marked `deprecated: true`",
)
def published_document(ctx: Context) -> None:
    op = next((o for o in ctx.held.operations.values() if o.public), None)
    if op is None:
        raise Skip("the contract has no public OpenAPI document")
    exchange = ctx.call(op, auth="none")
    document = exchange.json()
    if exchange.status != 200 or not isinstance(document, dict) or "paths" not in document:
        raise Skip(f"{op.label} answered no OpenAPI document ({exchange.status})")
    paths = document.get("paths") or {}
    outside = sorted(p for p in paths if not p.startswith("/v1/"))
    ctx.expect(
        not outside,
        "versioned-paths",
        f"paths outside /v1: {', '.join(outside[:5])}",
        exchange=exchange,
        quote="The version is part of every path (`/v1/...`).",
    )
    published = {
        (method.upper(), _shape(path))
        for path, item in paths.items()
        if isinstance(item, dict)
        for method in item
        if method in ("get", "put", "post", "patch", "delete")
    }
    stated = {(o.method, _shape(o.path)) for o in ctx.held.operations.values() if not o.inferred}
    missing = sorted(f"{m} {p}" for m, p in stated - published)
    ctx.expect(
        not missing,
        "stated-operations",
        f"{len(missing)} stated operation(s) missing from the published document: "
        + ", ".join(missing[:5]),
        exchange=exchange,
        quote="Stable in v1: paths, methods and `operationId`s",
    )
    try:
        theirs = deprecations(document)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        ctx.fail("readable", f"the published document could not be read: {exc}", exchange=exchange)
        return
    # The profile's document: under `contract`, deprecations only the contract inferred are gone.
    ours = {d for d in deprecations(ctx.held.document) if (d[0], d[1]) in stated}
    unmarked = sorted(" ".join(d) for d in ours - theirs)
    ctx.expect(
        not unmarked,
        "deprecations-marked",
        "deprecated but not marked `deprecated: true`: " + "; ".join(unmarked[:5]),
        exchange=exchange,
        quote="a deprecated field … is marked `deprecated: true` in the OpenAPI document",
    )
