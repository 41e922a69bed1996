"""Idempotency: a required ``Idempotency-Key`` is required; a retry with the same key is one call.

The operations are those whose ``Idempotency-Key`` header parameter the profile's document
declares (required, or not). The balance is read from ``GET /v1/capabilities``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from conformance.checks import check
from conformance.checks.steps import NO_BALANCE, balance
from conformance.context import Context
from conformance.contract import Operation
from conformance.generation import Prepared
from conformance.idpool import resource_id
from conformance.refusals import refusal, refused_since
from conformance.skips import NEEDS_CONTROL, Skip
from conformance.target import Exchange

FAMILY = "idempotency"
NO_PAID_CALL = "no paid operation could be called"


def _quote(ctx: Context, op: Operation) -> str:
    return ctx.held.quote(
        f"#/paths/{op.path.replace('/', '~1')}/{op.method.lower()}",
        "Required (else 400 invalid_request)",
    )


@check(
    "idempotency-key-required",
    FAMILY,
    "where Idempotency-Key is required, a request without it answers 400 before any charge",
)
def key_required(ctx: Context) -> None:
    codes = ctx.held.error_codes.get(400, ())
    ops = [
        op
        for op in ctx.held.operations.values()
        if op.idempotency_key is not None and op.idempotency_key.required
    ]
    for op in ops:
        if not ctx.contract.applicable(op):
            ctx.skip("method and path are inferred")
            continue
        prepared = ctx.sample(op, salt="no-key")
        if prepared is None:
            ctx.skip("no request could be generated")
            continue
        prepared.headers = {
            k: v for k, v in prepared.headers.items() if k.lower() != "idempotency-key"
        }
        before = balance(ctx) if op.paid else None
        exchange = ctx.send(prepared, op)
        ctx.expect(
            exchange.status == 400 and exchange.code in codes,
            "key-required",
            f"{op.label} without Idempotency-Key answered {exchange.answered}",
            exchange=exchange,
            quote=_quote(ctx, op),
        )
        if before is not None:
            after = balance(ctx)
            ctx.expect(
                after == before,
                "no-charge",
                f"the balance went from {before} to {'unknown' if after is None else after} "
                "on a refused call",
                exchange=exchange,
                quote=_quote(ctx, op),
            )


def replayable(ctx: Context, *, paid: bool) -> list[Operation]:
    return [
        op
        for op in ctx.held.operations.values()
        if op.method == "POST"
        and op.idempotency_key is not None
        and op.paid == paid
        and ctx.why_not_send(op) is None
    ]


def first_success(
    ctx: Context,
    ops: list[Operation],
    *,
    attempts: int = 2,
    salt: str = "success",
    body_update: Callable[[Any], Any] | None = None,
    accept: Callable[[Exchange], bool] | None = None,
) -> tuple[Operation, Any, Exchange] | None:
    """The first operation of ``ops`` that a generated request (with a fresh key, its body
    changed by ``body_update``) succeeds on, trying each up to ``attempts`` times. Success is
    a 2xx, or what ``accept`` says; an operation whose request cannot be generated, or whose
    capability is unavailable, is left for the next."""
    for op in ops:
        for attempt in range(attempts):
            prepared = ctx.sample(
                op,
                salt=f"{salt}-{attempt}",
                idempotency_key=ctx.new_key(),
                body_update=body_update,
            )
            if prepared is None:
                break
            exchange = ctx.send(prepared, op)
            if ctx.unavailable(exchange):
                break
            if accept(exchange) if accept is not None else exchange.ok:
                return op, prepared, exchange
    return None


@check(
    "idempotency-replay",
    FAMILY,
    "a create retried with the same Idempotency-Key answers the same resource",
    creates=True,
)
def replay(ctx: Context) -> None:
    found = first_success(ctx, replayable(ctx, paid=False))
    if found is None:
        raise Skip("no creating operation with a key could be called")
    op, prepared, first = found
    second = ctx.send(prepared, op)
    ctx.expect(
        second.ok and resource_id(second.json()) == resource_id(first.json()) is not None,
        "same-resource",
        f"the retry answered {second.status} with id {resource_id(second.json()) or '(none)'}; "
        f"the first call created {resource_id(first.json()) or '(none)'}",
        exchange=second,
        quote="An `Idempotency-Key` identifies the logical operation and is reused on retry.",
    )


@check(
    "idempotency-single-charge",
    FAMILY,
    "a paid call retried with the same key returns the same resource and is charged once",
    spends=True,
)
def single_charge(ctx: Context) -> None:
    start = balance(ctx)
    if start is None:
        raise Skip(NO_BALANCE)
    mark, paid = ctx.target.count, replayable(ctx, paid=True)
    found = first_success(ctx, paid)
    if found is None:
        raise Skip(refusal(NO_PAID_CALL, refused_since(ctx, mark, paid)))
    op, prepared, first = found
    after_first = balance(ctx)
    second = ctx.send(prepared, op)
    after_second = balance(ctx)
    quote = "An `Idempotency-Key` identifies the logical operation and is reused on retry."
    ctx.expect(
        resource_id(second.json()) == resource_id(first.json()) is not None,
        "same-resource",
        f"the retry answered id {resource_id(second.json()) or '(none)'}; the first call "
        f"{resource_id(first.json()) or '(none)'}",
        exchange=second,
        quote=quote,
    )
    ctx.expect(
        after_first is not None and after_second == after_first,
        "charged-once",
        f"balance {start} → {'unknown' if after_first is None else after_first} after the call → "
        f"{'unknown' if after_second is None else after_second} after the retry",
        exchange=second,
        quote=quote,
    )


FREES_QUOTE = (
    "A failed call does not hold its key. An `Idempotency-Key` identifies the logical operation "
    "and is reused on retry."
)


def _with_key(prepared: Prepared, key: str, body: bytes | None = None) -> Prepared:
    headers = {k: v for k, v in prepared.headers.items() if k.lower() != "idempotency-key"}
    headers["Idempotency-Key"] = key
    return Prepared(prepared.method, prepared.url, headers, prepared.body if body is None else body)


def _invalid_body(ctx: Context, op: Operation, body: bytes) -> bytes | None:
    """``body`` broken against the stated schema: a required field left out (or, when none is
    required, a string field sent as a number); None when the schema gives no way to."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return None
    if not isinstance(data, dict) or op.body_schema is None:
        return None
    flat = ctx.held.flatten(op.body_schema)
    required = [name for name in flat["required"] if name in data]
    if required:
        data.pop(required[0])
        return json.dumps(data).encode()
    for name, schema in flat["properties"].items():
        if ctx.held.resolve(schema).get("type") == "string":
            data[name] = 12345
            return json.dumps(data).encode()
    return None


def _replayed_failure(ctx: Context, first: Exchange, retry: Exchange, what: str) -> None:
    ctx.expect(
        retry.ok and resource_id(retry.json()) is not None,
        "key-freed",
        f"after {what} ({first.answered}), a valid call with the same key answered "
        f"{retry.answered}: the failed call held its key",
        exchange=retry,
        quote=FREES_QUOTE,
    )


@check(
    "idempotency-failed-call-frees-key",
    FAMILY,
    "a call refused with 400 (and, against the mock, with 402) does not hold its key: the valid "
    "call retried with that key creates, nothing charged for the failure",
    creates=True,
)
def failed_call_frees_key(ctx: Context) -> None:
    _after_validation_failure(ctx)
    _after_payment_required(ctx)


def _after_validation_failure(ctx: Context) -> None:
    for op in replayable(ctx, paid=False):
        found = first_success(ctx, [op])
        if found is None:
            continue
        _, prepared, earlier = found
        invalid = _invalid_body(ctx, op, prepared.body)
        if invalid is None:
            continue
        key = ctx.new_key()
        start = balance(ctx)
        failed = ctx.send(_with_key(prepared, key, invalid), op, provoked=True)
        if failed.status != 400:
            ctx.skip(f"a body breaking the schema answered {failed.answered}")
            continue
        retry = ctx.send(_with_key(prepared, key), op)
        if not retry.ok and _cannot_repeat(ctx, op, prepared, retry):
            ctx.skip(f"{op.label} cannot be made twice ({retry.answered})")
            return
        _replayed_failure(ctx, failed, retry, "a call refused by validation")
        if retry.ok:
            ctx.expect(
                resource_id(retry.json()) != resource_id(earlier.json()),
                "new-resource",
                f"the call with a fresh key answered the resource {resource_id(retry.json())!r} "
                "of an earlier call with another key",
                exchange=retry,
                quote=FREES_QUOTE,
            )
        end = balance(ctx)
        if start is not None and end is not None and not op.paid:
            ctx.expect(
                end == start,
                "nothing-charged",
                f"the balance went from {start} to {end} over a free create and a refused one",
                exchange=failed,
                quote=FREES_QUOTE,
            )
        return
    ctx.skip("no create with an Idempotency-Key could be made to fail validation")


def _cannot_repeat(ctx: Context, op: Operation, prepared: Prepared, retry: Exchange) -> bool:
    """True when the same valid call under yet another fresh key fails alike (the operation
    cannot be made twice, so the retry's failure says nothing of the key)."""
    control = ctx.send(_with_key(prepared, ctx.new_key()), op)
    return control.status == retry.status and control.code == retry.code


def _after_payment_required(ctx: Context) -> None:
    if ctx.control is None or ctx.session.mock is None:
        ctx.skip(NEEDS_CONTROL + " (402, then a top-up)")
        return
    control, workspace = ctx.control, ctx.session.mock.workspace
    mark, paid = ctx.target.count, replayable(ctx, paid=True)
    found = first_success(ctx, paid)
    if found is None:
        ctx.skip(refusal(NO_PAID_CALL, refused_since(ctx, mark, paid)))
        return
    op, prepared, earlier = found
    original = control.credits(workspace)
    key = ctx.new_key()
    try:
        control.set_credits(workspace, 0)
        refused = ctx.send(_with_key(prepared, key), op, provoked=True)
        if refused.status != 402:
            ctx.skip(f"with no credits {op.label} answered {refused.answered}")
            return
        ctx.expect(
            control.credits(workspace) == 0,
            "nothing-charged",
            f"a call refused with 402 changed the balance to {control.credits(workspace)}",
            exchange=refused,
            quote=FREES_QUOTE,
        )
        control.set_credits(workspace, original)
        retry = ctx.send(_with_key(prepared, key), op)
        _replayed_failure(ctx, refused, retry, "a call refused with 402 and a top-up")
        if retry.ok:
            ctx.expect(
                resource_id(retry.json()) != resource_id(earlier.json()),
                "new-resource",
                f"the retry answered the resource {resource_id(retry.json())!r} of an earlier "
                "call with another key",
                exchange=retry,
                quote=FREES_QUOTE,
            )
    finally:
        control.set_credits(workspace, original)
