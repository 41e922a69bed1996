"""Idempotency: a required ``Idempotency-Key`` is required; a retry with the same key is one call.

The operations are those whose ``Idempotency-Key`` header parameter the profile's document
declares (required, or not). The balance is read from ``GET /v1/capabilities``.
"""

from __future__ import annotations

from typing import Any

from conformance.checks import check
from conformance.contract import Operation
from conformance.runner import CAPABILITY_UNAVAILABLE, Context, Skip
from conformance.target import Exchange

FAMILY = "idempotency"


def _quote(ctx: Context, op: Operation) -> str:
    return ctx.held.quote(
        f"#/paths/{op.path.replace('/', '~1')}/{op.method.lower()}",
        "Required (else 400 invalid_request)",
    )


def balance(ctx: Context) -> int | None:
    """The caller's credit balance, when the deployment's capabilities answer it."""
    op = next(
        (o for o in ctx.contract.full.operations.values() if o.path == "/v1/capabilities"), None
    )
    if op is None:
        return None
    exchange = ctx.call(op)
    body = exchange.json()
    credits = body.get("balance", {}).get("credits") if isinstance(body, dict) else None
    if isinstance(body, dict) and isinstance(body.get("balance"), dict) and credits is not None:
        return int(credits) if isinstance(credits, int) else None
    return None


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
            f"{op.label} without Idempotency-Key answered {exchange.status} {exchange.code}",
            exchange=exchange,
            quote=_quote(ctx, op),
        )
        if before is not None:
            after = balance(ctx)
            ctx.expect(
                after == before,
                "no-charge",
                f"the balance went from {before} to {after} on a refused call",
                exchange=exchange,
                quote=_quote(ctx, op),
            )


def resource_id(body: Any) -> str | None:
    """The id of the resource a create answered (``project.id``, ``job.id`` …)."""
    if not isinstance(body, dict):
        return None
    for value in body.values():
        if isinstance(value, dict) and isinstance(value.get("id"), str):
            return value["id"]
    return body.get("id") if isinstance(body.get("id"), str) else None


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
    ctx: Context, ops: list[Operation], *, attempts: int = 2
) -> tuple[Operation, Any, Exchange] | None:
    """The first operation of ``ops`` that a generated request (with a key) succeeds on."""
    for op in ops:
        for attempt in range(attempts):
            prepared = ctx.sample(op, salt=f"success-{attempt}", idempotency_key=ctx.new_key())
            if prepared is None:
                break
            exchange = ctx.send(prepared, op)
            if ctx.unavailable(exchange):
                break
            if 200 <= exchange.status < 300:
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
        200 <= second.status < 300
        and resource_id(second.json()) == resource_id(first.json()) is not None,
        "same-resource",
        f"the retry answered {second.status} with id {resource_id(second.json())!r}; the "
        f"first call created {resource_id(first.json())!r}",
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
        raise Skip("GET /v1/capabilities does not answer a balance")
    found = first_success(ctx, replayable(ctx, paid=True))
    if found is None:
        raise Skip(CAPABILITY_UNAVAILABLE + " (no paid operation could be called)")
    op, prepared, first = found
    after_first = balance(ctx)
    second = ctx.send(prepared, op)
    after_second = balance(ctx)
    quote = "An `Idempotency-Key` identifies the logical operation and is reused on retry."
    ctx.expect(
        resource_id(second.json()) == resource_id(first.json()) is not None,
        "same-resource",
        f"the retry answered id {resource_id(second.json())!r}; the first call "
        f"{resource_id(first.json())!r}",
        exchange=second,
        quote=quote,
    )
    ctx.expect(
        after_first is not None and after_second == after_first,
        "charged-once",
        f"balance {start} → {after_first} after the call → {after_second} after the retry",
        exchange=second,
        quote=quote,
    )
