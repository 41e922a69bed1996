"""Auth: who may call what.

Requests without a usable key are refused before anything else happens, so they are safe probes on
every operation, paid ones included.
"""

from __future__ import annotations

import uuid

from conformance.checks import check
from conformance.contract import Operation
from conformance.runner import INFERRED_OPERATION, Context, Skip

FAMILY = "auth"


def _authenticated_operations(ctx: Context) -> list[Operation]:
    ops = []
    for op in ctx.held.operations.values():
        if op.public:
            continue
        if not ctx.contract.applicable(op):
            ctx.skip(INFERRED_OPERATION)
            continue
        ops.append(op)
    return ops


def _unauthorized(ctx: Context, auth: str, what: str) -> None:
    codes = ctx.held.error_codes.get(401, ())
    quote = ctx.held.quote("#/components/securitySchemes/apiKey")
    for op in _authenticated_operations(ctx):
        prepared = ctx.sample(op, salt="auth", real_ids=False)
        if prepared is None:
            ctx.skip("no request could be generated")
            continue
        exchange = ctx.send(prepared, op, auth=auth)
        ctx.expect(
            exchange.status == 401 and exchange.code in codes,
            "unauthorized",
            f"{what}: expected 401 {' or '.join(codes)}, got {exchange.status} {exchange.code}",
            exchange=exchange,
            quote=quote,
        )


@check("auth-missing-key", FAMILY, "no Authorization header answers 401 unauthorized, everywhere")
def missing_key(ctx: Context) -> None:
    _unauthorized(ctx, "none", "a request without a key")


@check("auth-malformed-key", FAMILY, "a malformed Authorization header answers 401 unauthorized")
def malformed_key(ctx: Context) -> None:
    _unauthorized(ctx, "malformed", "a request with `Authorization: Bearer` and no token")


@check("auth-unknown-key", FAMILY, "a well-formed but unknown key answers 401 unauthorized")
def unknown_key(ctx: Context) -> None:
    _unauthorized(ctx, "unknown", "a request with a key the deployment never issued")


@check(
    "auth-public-contract",
    FAMILY,
    "GET /v1/openapi.json answers 200 without a key, with an OpenAPI 3.1 document",
)
def public_contract(ctx: Context) -> None:
    op = next(op for op in ctx.held.operations.values() if op.public)
    exchange = ctx.call(op, auth="none")
    body = exchange.json()
    quote = ctx.held.quote(f"#/paths/{op.path.replace('/', '~1')}/get")
    if not ctx.expect(
        exchange.status == 200,
        "public",
        f"{op.label} without a key answered {exchange.status}",
        exchange=exchange,
        quote=quote,
    ):
        return
    ctx.expect(
        isinstance(body, dict) and str(body.get("openapi", "")).startswith("3.1"),
        "openapi-document",
        "the body is not an OpenAPI 3.1 document",
        exchange=exchange,
        quote=quote,
    )


@check(
    "auth-cross-workspace",
    FAMILY,
    "ids read with --second-key (another workspace) answer 404 not_found to the first key",
    needs_second_key=True,
)
def cross_workspace(ctx: Context) -> None:
    codes = ctx.held.error_codes.get(404, ())
    quote = ctx.held.quote("#/components/responses/NotFound")
    for op in ctx.held.operations.values():
        if not op.path_parameters or op.public:
            continue
        if reason := ctx.why_not_send(op):
            ctx.skip(reason)
            continue
        foreign = _foreign_ids(ctx, op)
        if foreign is None:
            ctx.skip("no id of the other workspace to try")
            continue
        exchange = ctx.probe(op, salt="cross", path_parameters=foreign)
        if exchange is None:
            continue
        ctx.expect(
            exchange.status == 404 and exchange.code in codes,
            "other-workspace",
            f"{op.label} with an id of another workspace answered {exchange.status} "
            f"{exchange.code} (expected 404 not_found)",
            exchange=exchange,
            quote=quote,
        )


def _foreign_ids(ctx: Context, op: Operation) -> dict[str, str] | None:
    """Ids the second key lists and the first does not (shared catalogues are not foreign)."""
    found = {}
    for param in op.path_parameters:
        list_op = ctx.session.ids.list_for(op, param.name)
        if list_op is None:
            return None
        own = set(ctx.session.ids.ids(list_op, "primary"))
        other = [i for i in ctx.session.ids.ids(list_op, "second") if i not in own]
        if not other:
            return None
        found[param.name] = other[0]
    return found


@check(
    "auth-workspace-slug",
    FAMILY,
    "an X-Workspace-Slug header that disagrees with the key's workspace is refused",
)
def workspace_slug(ctx: Context) -> None:
    scheme = ctx.held.document["components"]["securitySchemes"]["apiKey"]
    mismatch = scheme.get("x-workspace-slug-mismatch", {})
    op = next(
        (
            op
            for op in ctx.held.iter_operations(include_inferred=False)
            if op.method == "GET" and not op.public and not op.path_parameters
        ),
        None,
    )
    if op is None:
        raise Skip("no authenticated read to try")
    slug = f"conformance-not-this-workspace-{uuid.uuid4().hex[:8]}"
    exchange = ctx.call(op, headers={"X-Workspace-Slug": slug})
    quote = "An `X-Workspace-Slug` header that disagrees with the key's workspace is refused."
    if not ctx.expect(
        400 <= exchange.status < 500,
        "refused",
        f"{op.label} with X-Workspace-Slug: {slug} answered {exchange.status}",
        exchange=exchange,
        quote=quote,
    ):
        return
    # The status and code are the contract's choice (x-inferred): held to them only under full.
    if "status" in mismatch and (ctx.profile == "full" or not mismatch.get("x-inferred")):
        ctx.expect(
            exchange.status == mismatch.get("status", exchange.status)
            and exchange.code == mismatch.get("code", exchange.code),
            "mismatch-status",
            f"expected {mismatch.get('status')} {mismatch.get('code')}, got "
            f"{exchange.status} {exchange.code}",
            exchange=exchange,
            quote=ctx.held.quote(
                "#/components/securitySchemes/apiKey/x-workspace-slug-mismatch", quote
            ),
        )
