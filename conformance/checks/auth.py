"""Auth: who may call what.

Requests without a usable key are refused before anything else happens, so they are safe probes on
every operation, paid ones included.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from conformance.checks import check
from conformance.checks.steps import balance
from conformance.context import Context
from conformance.contract import Operation
from conformance.generation import Prepared
from conformance.idpool import missing_path_parameter, own_path_parameters
from conformance.skips import INFERRED_OPERATION, Skip
from conformance.target import MockControl

FAMILY = "auth"
_SECONDS = re.compile(r"[0-9]+")  # Retry-After: whole seconds


def _unauthorized(ctx: Context, auth: str, what: str) -> None:
    """Every authenticated operation, sent with ``auth``, answers 401 (in the breadth pass of
    a bounded run, up to the first judgement; the rest in its depth pass)."""
    codes = ctx.held.error_codes.get(401, ())
    quote = ctx.held.quote("#/components/securitySchemes/apiKey")
    for op in ctx.share(op for op in ctx.held.operations.values() if not op.public):
        if not ctx.contract.applicable(op):
            ctx.skip(INFERRED_OPERATION)
            continue
        prepared = ctx.sample(op, salt="auth", real_ids=False)
        if prepared is None:
            ctx.skip("no request could be generated")
            continue
        exchange = ctx.send(prepared, op, auth=auth)
        ctx.expect(
            exchange.status == 401 and exchange.code in codes,
            "unauthorized",
            f"{what}: expected 401 {' or '.join(codes)}, got {exchange.answered}",
            exchange=exchange,
            quote=quote,
        )


@check(
    "auth-missing-key",
    FAMILY,
    "no Authorization header answers 401 unauthorized, everywhere",
    cost=6,
    deep=True,
)
def missing_key(ctx: Context) -> None:
    _unauthorized(ctx, "none", "a request without a key")


@check(
    "auth-malformed-key",
    FAMILY,
    "a malformed Authorization header answers 401 unauthorized",
    deep=True,
)
def malformed_key(ctx: Context) -> None:
    _unauthorized(ctx, "malformed", "a request with `Authorization: Bearer` and no token")


@check(
    "auth-unknown-key", FAMILY, "a well-formed but unknown key answers 401 unauthorized", deep=True
)
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
    deep=True,
)
def cross_workspace(ctx: Context) -> None:
    codes = ctx.held.error_codes.get(404, ())
    quote = ctx.held.quote("#/components/responses/NotFound")
    by_id = (op for op in ctx.held.operations.values() if op.path_parameters and not op.public)
    for op in ctx.share(by_id):
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
            f"{op.label} with an id of another workspace answered {exchange.answered}"
            f" (expected 404 not_found)",
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
            f"expected {mismatch.get('status')} {mismatch.get('code') or ''}, got "
            f"{exchange.answered}",
            exchange=exchange,
            quote=ctx.held.quote(
                "#/components/securitySchemes/apiKey/x-workspace-slug-mismatch", quote
            ),
        )


# -- roles and the governance lock -----------------------------------------------------------

NEEDS_RESTRICTED_KEY = "needs --restricted-key"
NEEDS_FAULTS = "needs the bundled mock's control plane (--mock) or --allow-faults"
FORBIDDEN_QUOTE = (
    "Governance lock: when the workspace locks agent configuration, community-campaign create "
    "and PATCH and autopilot PUT answer 403 `forbidden` for a key whose creator is not an owner "
    "(or an admin of the owning organisation). `403 forbidden` concerns the key (role, "
    "governance lock)."
)
#: The operations the interface document puts under the governance lock, as (method, path).
GOVERNED = (
    ("POST", "/v1/community-campaigns"),
    ("PATCH", "/v1/community-campaigns/{campaignId}"),
    ("PUT", "/v1/autopilots/{channelId}"),
)


def _governed_operations(ctx: Context) -> list[Operation]:
    found = []
    for method, path in GOVERNED:
        op = next(
            (o for o in ctx.held.operations.values() if o.method == method and o.path == path),
            None,
        )
        if op is None:
            ctx.skip(f"the contract has no {method} {path}")
        else:
            found.append(op)
    return found


def _record(body: Any) -> dict[str, Any] | None:
    """The resource a read answers (``campaign``, ``autopilot`` …)."""
    if not isinstance(body, dict):
        return None
    return next((v for v in body.values() if isinstance(v, dict)), None)


@contextmanager
def _agent_configuration_locked(ctx: Context) -> Iterator[bool]:
    """Against the bundled mock, the workspace's agent configuration locked for the block (True),
    then as it was; False when the lock cannot be switched here (a real deployment: its lock is
    whatever it is)."""
    mock = ctx.session.mock
    if ctx.control is None or mock is None:
        yield False
        return
    try:
        was = ctx.control.governance(mock.workspace).get("agentConfigLocked", False)
        ctx.control.set_governance(mock.workspace, agentConfigLocked=True)
    except httpx.HTTPError:
        yield False
        return
    try:
        yield True
    finally:
        ctx.control.set_governance(mock.workspace, agentConfigLocked=was)


def _restricted_key_is_valid(ctx: Context) -> None:
    op = ctx.held.operations.get("getCapabilities")
    if op is None:
        return
    exchange = ctx.call(op, auth="restricted")
    if exchange.status == 401:
        raise Skip("--restricted-key answered 401 on a read: it is not a valid key")


@check(
    "auth-forbidden-role",
    FAMILY,
    "with --restricted-key (a lower role; the mock's editor), governance-locked configuration "
    "(community-campaign create and PATCH, autopilot PUT) answers 403 forbidden, never 401 or "
    "404, and changes nothing",
)
def forbidden_role(ctx: Context) -> None:
    if not ctx.target.restricted_key:
        raise Skip(NEEDS_RESTRICTED_KEY)
    ops = _governed_operations(ctx)
    sendable = []
    for op in ops:
        if reason := ctx.why_not_send(op):
            ctx.skip(reason)
        else:
            sendable.append(op)
    if not sendable:
        return
    _restricted_key_is_valid(ctx)
    start = balance(ctx)
    refused = 0
    with _agent_configuration_locked(ctx) as locked:
        for op in sendable:
            refused += _judge_governed(ctx, op, locked=locked)
    if refused and start is not None:
        end = balance(ctx)
        ctx.expect(
            end == start,
            "nothing-charged",
            f"the balance went from {start} to {end} over calls refused with 403",
            quote=FORBIDDEN_QUOTE,
        )


def _judge_governed(ctx: Context, op: Operation, *, locked: bool) -> int:
    """Send ``op`` with the restricted key; judge the refusal and that nothing changed.

    Answers 1 when it was refused with 403 (0 otherwise)."""
    attempt = _create_attempt(ctx, op) if op.method == "POST" else _change_attempt(ctx, op)
    if attempt is None:
        return 0
    prepared, read = attempt
    before = read()
    exchange = ctx.send(prepared, op, auth="restricted")
    if ctx.unavailable(exchange):
        return 0
    status, code = exchange.status, exchange.code
    if status in (401, 404):
        ctx.fail(
            f"forbidden-not-{status}",
            f"{op.label} with a valid key of this workspace and a lower role answered {status} "
            f"{code}; a role or governance refusal is 403 forbidden",
            exchange=exchange,
            quote=FORBIDDEN_QUOTE,
        )
        return 0
    if 200 <= status < 300:
        if locked:
            ctx.fail(
                "allowed-while-locked",
                f"with agent configuration locked, {op.label} with a lower role's key answered "
                f"{status}",
                exchange=exchange,
                quote=FORBIDDEN_QUOTE,
            )
        else:
            ctx.skip("the restricted key was allowed (the workspace does not lock agent config)")
        return 0
    if status != 403:
        ctx.skip(f"refused for another reason first ({status} {code})")
        return 0
    ctx.expect(
        code == "forbidden",
        "forbidden-code",
        f"{op.label} refused the lower role with 403 {code} (expected forbidden)",
        exchange=exchange,
        quote=FORBIDDEN_QUOTE,
    )
    after = read()
    if before is None or after is None:
        ctx.skip("what the refused call would have changed could not be read back")
    else:
        ctx.expect(
            after == before,
            "nothing-changed",
            f"{op.label} answered 403 yet changed the workspace: before {before!r}, "
            f"after {after!r}",
            exchange=exchange,
            quote=FORBIDDEN_QUOTE,
        )
    return 1


Attempt = tuple[Prepared, Callable[[], Any]]


def _read_op(ctx: Context, path: str) -> Operation | None:
    return next(
        (o for o in ctx.held.operations.values() if o.method == "GET" and o.path == path), None
    )


def _create_attempt(ctx: Context, op: Operation) -> Attempt | None:
    """A create whose only flaw is the caller's role (a real connected account when one is
    known, a fresh name); and how to find what it created anyway (None: cannot tell)."""
    list_op = _read_op(ctx, op.path)
    full = ctx.contract.full.operations.get(list_op.operation_id) if list_op else None
    field = ctx.contract.full.items_field(full) if full is not None else None
    name = f"conformance-forbidden-{uuid.uuid4().hex[:8]}"

    def page() -> list[dict[str, Any]] | None:
        if list_op is None or not field:
            return None
        limit = list_op.parameter("limit", "query")
        maximum = limit.schema.get("maximum") if limit is not None else None
        params = {"limit": maximum} if isinstance(maximum, int) else None
        exchange = ctx.call(list_op, params=params)
        items = exchange.json().get(field) if isinstance(exchange.json(), dict) else None
        if exchange.status != 200 or not isinstance(items, list):
            return None
        return [i for i in items if isinstance(i, dict)]

    def created() -> list[str] | None:
        items = page()
        if items is None:
            return None
        return sorted(str(i.get("id")) for i in items if i.get("name") == name)

    accounts = [i["connectedAccountId"] for i in page() or [] if i.get("connectedAccountId")]
    body_fields = ctx.held.flatten(op.body_schema)["properties"] if op.body_schema else {}
    if "connectedAccountId" in body_fields and not accounts:
        # The interface lists no connected accounts: a made-up one is rightly answered 404.
        ctx.skip(
            f"no connected account of this workspace is known (no record of {op.path} names "
            f"one): {op.label} not judged"
        )
        return None

    def update(body: Any) -> Any:
        if isinstance(body, dict):
            body["name"] = name
            if accounts:
                body["connectedAccountId"] = accounts[0]
        return body

    prepared = ctx.sample(op, salt="forbidden", idempotency_key=ctx.new_key(), body_update=update)
    if prepared is None:
        ctx.skip("no request could be generated")
        return None
    return prepared, created


def _change_attempt(ctx: Context, op: Operation) -> Attempt | None:
    """A change of an existing resource of the workspace (an autopilot PUT enables, so it is
    never a mere pause); and how to read back the fields it sends (None: cannot tell)."""
    path = own_path_parameters(ctx, op)
    if path is None:
        ctx.skip(f"{missing_path_parameter(ctx, op)}: {op.label} not judged")
        return None
    read_op = _read_op(ctx, op.path)
    current = _record(ctx.call(read_op, path_parameters=path).json()) if read_op else None

    def enable(body: Any) -> Any:
        if isinstance(body, dict) and op.method == "PUT":
            body["enabled"] = True  # never a mere pause, which lower roles may do
            videos = (current or {}).get("maxVideosPerDay")
            if isinstance(videos, int):  # a setting that differs, so a change would show
                body["maxVideosPerDay"] = 1 if videos != 1 else 2
        return body

    prepared = ctx.sample(op, salt="forbidden", path_parameters=path, body_update=enable)
    if prepared is None:
        ctx.skip("no request could be generated")
        return None
    sent = json.loads(prepared.body or b"{}")
    fields = sorted(sent) if isinstance(sent, dict) else []

    def read() -> dict[str, Any] | None:
        if read_op is None:
            return None
        exchange = ctx.call(read_op, path_parameters=path)
        record = _record(exchange.json())
        if exchange.status != 200 or record is None:
            return None
        return {f: record.get(f) for f in fields}

    return prepared, read


# -- the credential store -------------------------------------------------------------------


def _fault_hook(ctx: Context) -> MockControl:
    """The control plane that can make the credential store unreachable, or Skip."""
    if ctx.control is not None and ctx.session.mock is not None:
        control: MockControl = ctx.control
    elif ctx.session.allow_faults:
        control = MockControl(ctx.target.client, ctx.target.base_url)
    else:
        raise Skip(NEEDS_FAULTS)
    try:
        offered = control.offers("setCredentialStore")
    except httpx.HTTPError:
        offered = False
    if not offered:
        raise Skip(
            "the deployment offers no known fault hook for its credential store "
            "(PUT /_mock/credential-store)"
        )
    return control


@check(
    "auth-credential-store-outage",
    FAMILY,
    "while the credential store cannot be reached, keyed requests answer 503 "
    "upstream_unavailable with Retry-After, never 401 (mock control plane or --allow-faults)",
)
def credential_store_outage(ctx: Context) -> None:
    control = _fault_hook(ctx)
    op = ctx.held.operations.get("getCapabilities")
    if op is None:
        raise Skip("the contract has no GET /v1/capabilities to call")
    quote = (
        "When the credential store cannot be reached, the answer is 503 `upstream_unavailable` "
        "with `Retry-After`, never 401."
    )
    keys = [("primary", "a valid key"), ("unknown", "a key the deployment never issued")]
    if ctx.target.second_key:
        keys.append(("second", "a valid key of another workspace"))
    try:
        control.set_credential_store(reachable=False)
    except httpx.HTTPError as exc:
        reason = f"the fault hook refused to make the credential store unreachable: {exc}"
        raise Skip(reason) from None
    try:
        for auth, who in keys:
            exchange = ctx.call(op, auth=auth, retry=False, pace=False, provoked=True)
            never = "an outage is never 401: " if exchange.status == 401 else ""
            if not ctx.expect(
                exchange.answers(503, "upstream_unavailable"),
                "upstream-unavailable",
                f"with the credential store unreachable, {who} answered {exchange.answered}"
                f"; {never}expected 503 upstream_unavailable",
                exchange=exchange,
                quote=quote,
            ):
                continue
            retry_after = exchange.header("retry-after")
            ctx.expect(
                retry_after is not None and _SECONDS.fullmatch(retry_after) is not None,
                "retry-after",
                f"the outage's 503 carries Retry-After {retry_after!r} (whole seconds expected)",
                exchange=exchange,
                quote=quote,
            )
    finally:
        control.set_credential_store(reachable=True)
