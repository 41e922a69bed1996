"""Calls at once: idempotency and money hold when requests overlap.

The other checks send one request after another, so a deployment that looks a key up when a
call arrives and keeps it only when the call is answered, or that reads a balance and writes it
back, passes them. These checks send several requests *together* (``Target.send_together``: each
on a connection of its own, released by one barrier):

* ``idempotency-overlapping-retries``: the same keyed create, and the same keyed paid call, sent
  :data:`AT_ONCE` times at once, are one operation: the same id in every success, one charge, a
  retry afterwards replays it, and any refusal is one the document tells a client to retry on.
* ``limits-concurrent-billing``: :data:`AT_ONCE` paid calls at once in one workspace (each its
  own operation) are all billed: the balance falls by the sum of the ``cost.credits`` they report.

Against a deployment the overlap depends on timing, so each check makes :data:`ROUNDS` rounds
(within the budget); against the bundled mock one round is enough (requests it has in hand
together are in hand together). In a bounded run both are ``deep``: the breadth pass makes one
round of paid calls (which judges every rule of the check once), the depth pass the rest. Both
spend credits: ``--allow-spend`` only.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from conformance.checks import check
from conformance.checks.idempotency import NO_PAID_CALL, first_success, replayable
from conformance.checks.steps import NO_BALANCE, balance
from conformance.context import Context
from conformance.contract import Operation
from conformance.generation import Prepared
from conformance.idpool import resource_id
from conformance.passes import BREADTH, DEPTH, WHOLE
from conformance.refusals import refusal, refused_since
from conformance.skips import Skip
from conformance.target import Exchange, Together

AT_ONCE = 3  # requests sent together
ROUNDS = 3  # against a deployment: tries at an overlap, each with its own requests
#: What a call overlapping another with its key may answer instead of the operation's result:
#: the key held by the first call (``conflict``), or what the document says to retry on.
RETRY_REFUSALS = {(409, "conflict"), (429, "rate_limited"), (503, "upstream_unavailable")}
Q_KEY = (
    "An `Idempotency-Key` identifies the logical operation and is reused on retry. Retry "
    "unchanged only on `rate_limited`, `upstream_unavailable` and network failures where the "
    "key is held."
)
Q_BILLED = (
    "A key is pinned to the workspace where it was created; that workspace is billed. Prices are "
    "read from the table the charge uses, so quote and charge agree."
)


def _keyed(prepared: Prepared, key: str) -> Prepared:
    headers = {k: v for k, v in prepared.headers.items() if k.lower() != "idempotency-key"}
    headers["Idempotency-Key"] = key
    return Prepared(prepared.method, prepared.url, headers, prepared.body)


def _at_once(ctx: Context, op: Operation, requests: list[Prepared]) -> list[Exchange]:
    return ctx.target.send_together(
        [Together(p.method, p.url, p.headers, p.body, op.operation_id) for p in requests]
    )


def _cost(exchange: Exchange) -> int | None:
    """The ``cost.credits`` a paid success reports."""
    body = exchange.json()
    cost = body.get("cost") if isinstance(body, dict) else None
    credits = cost.get("credits") if isinstance(cost, dict) else None
    return credits if isinstance(credits, int) and not isinstance(credits, bool) else None


def _rounds(ctx: Context) -> int:
    """The rounds this pass makes: one in a breadth pass, the rest in the depth pass."""
    rounds = 1 if ctx.control is not None else ROUNDS
    return {BREADTH: 1, DEPTH: rounds - 1}.get(ctx.phase, rounds)


def _in_rounds(
    ctx: Context,
    ops: list[Operation],
    rounds: int,
    what: str,
    one: Callable[[Operation, Prepared], bool],
) -> None:
    """``rounds`` rounds of ``one``, each on a fresh key, on the first operation of ``ops``
    whose generated request succeeded once (sent alone, one after another: a request the
    deployment does not accept is not one to judge overlap on); the next operation after a
    round without a success; the reason recorded (``what``) when no round judged."""
    if not rounds:
        return
    mark, done = ctx.target.count, 0
    for op in ops:
        found = first_success(ctx, [op], salt="overlap")
        while found is not None and done < rounds:
            if not one(op, _keyed(found[1], ctx.new_key())):
                break
            done += 1
        if done >= rounds:
            return
    if not done:
        ctx.skip(refusal(what, refused_since(ctx, mark, ops)))


@check(
    "idempotency-overlapping-retries",
    "idempotency",
    f"the same keyed create, and the same keyed paid call, sent {AT_ONCE} times at once are one "
    "operation: the same id in every success, one charge, replayed afterwards; a refusal is "
    "409 conflict, 429 or 503 upstream_unavailable, never a second execution",
    spends=True,
    creates=True,
    deep=True,
)
def overlapping_retries(ctx: Context) -> None:
    for paid in (True, False):
        rounds = _rounds(ctx)
        if not paid and ctx.phase != WHOLE:  # the creates: depth (for all their rounds) only
            rounds = 0 if ctx.phase == BREADTH else rounds + 1
        what = NO_PAID_CALL if paid else "no creating operation with a key could be called"
        one = _paid_at_once if paid else _create_at_once
        _in_rounds(ctx, replayable(ctx, paid=paid), rounds, what, partial(one, ctx))


def _paid_at_once(ctx: Context, op: Operation, request: Prepared) -> bool:
    return _one_key_at_once(ctx, op, request, paid=True)


def _create_at_once(ctx: Context, op: Operation, request: Prepared) -> bool:
    return _one_key_at_once(ctx, op, request, paid=False)


def _one_key_at_once(ctx: Context, op: Operation, request: Prepared, *, paid: bool) -> bool:
    """One round; False when no call of it succeeded (nothing judged: the generated request
    may not be one the deployment accepts)."""
    ctx.target.require(AT_ONCE + (2 if paid else 0) + (ctx.phase != BREADTH))
    before = balance(ctx) if paid else None
    answers = _at_once(ctx, op, [request] * AT_ONCE)
    successes = [a for a in answers if a.ok]
    if not successes:
        return False
    for answer in answers:
        ctx.expect(
            answer.ok or (answer.status, answer.code) in RETRY_REFUSALS,
            "stated-refusal",
            f"{op.label}: of {AT_ONCE} calls at once with one Idempotency-Key, one answered "
            f"{answer.answered} (expected the operation's result, or 409 conflict, 429 "
            "rate_limited, 503 upstream_unavailable)",
            exchange=answer,
            quote=Q_KEY,
            key=(op.operation_id, "refusal"),
        )
    ids = [resource_id(a.json()) for a in successes]
    ctx.expect(
        len(set(ids)) == 1 and ids[0] is not None,
        "one-operation",
        f"{op.label}: {AT_ONCE} calls at once with one Idempotency-Key answered ids "
        f"{', '.join(str(i) for i in ids)}: executed {len(set(ids))} times",
        exchange=successes[-1],
        quote=Q_KEY,
        key=(op.operation_id, "ids"),
    )
    if ctx.phase != BREADTH:
        retry = ctx.send(request, op)
        ctx.expect(
            retry.ok and resource_id(retry.json()) == ids[0],
            "replayed-after",
            f"{op.label}: the call retried after the overlap answered {retry.answered} with id "
            f"{resource_id(retry.json())}; the overlapping calls answered {ids[0]}",
            exchange=retry,
            quote=Q_KEY,
            key=(op.operation_id, "retry"),
        )
    if before is None:
        return True
    after, cost = balance(ctx), _cost(successes[0])
    if after is None or cost is None:
        ctx.skip(f"{op.label}: no balance, or no cost.credits in the answer, to compare")
        return True
    ctx.expect(
        before - after == cost,
        "one-charge",
        f"{op.label}: {AT_ONCE} calls at once with one Idempotency-Key took {before - after} "
        f"credits (balance {before} → {after}); the operation costs {cost}",
        exchange=successes[0],
        quote=Q_KEY,
        key=(op.operation_id, "charge"),
    )
    return True


@check(
    "limits-concurrent-billing",
    "limits",
    f"{AT_ONCE} paid calls at once in one workspace are all billed: the balance falls by the "
    "sum of the cost.credits they report",
    spends=True,
    deep=True,
)
def concurrent_billing(ctx: Context) -> None:
    _in_rounds(
        ctx, replayable(ctx, paid=True), _rounds(ctx), NO_PAID_CALL, partial(_all_billed, ctx)
    )


def _all_billed(ctx: Context, op: Operation, prepared: Prepared) -> bool:
    """One round of paid calls at once (each its own key); False when none succeeded."""
    ctx.target.require(AT_ONCE + 2)
    before = balance(ctx)
    if before is None:
        raise Skip(NO_BALANCE)
    keyed = [prepared] + [_keyed(prepared, ctx.new_key()) for _ in range(AT_ONCE - 1)]
    answers = _at_once(ctx, op, keyed)
    successes = [a for a in answers if a.ok]
    if not successes:
        return False
    after = balance(ctx)
    costs = [_cost(a) for a in successes]
    if after is None or None in costs:
        ctx.skip(f"{op.label}: a paid success without cost.credits, or no balance, to add up")
        return True
    billed = sum(c for c in costs if c is not None)
    ctx.expect(
        before - after == billed,
        "all-billed",
        f"{op.label}: {len(successes)} paid calls at once reported {billed} credits "
        f"({' + '.join(map(str, costs))}); the balance went from {before} to {after}, "
        f"{before - after} taken",
        exchange=successes[-1],
        quote=Q_BILLED,
        key=(op.operation_id,),
    )
    return True
