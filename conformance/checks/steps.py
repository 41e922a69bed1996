"""The steps checks of every family share: send a call, poll until ready, read the live catalogue
and balance of ``GET /v1/capabilities``, price a capability, and judge a call the rule refuses
as refused without charge.

A check states its rule; these steps are how it gets there. They hold no rule of their own
(messages name the rule the caller passes), register no check, and read the contract through
the run's :class:`~conformance.context.Context`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from conformance.context import Context
from conformance.contract import Operation
from conformance.polling import job_polls
from conformance.skips import CAPABILITY_UNAVAILABLE, Skip
from conformance.target import Exchange

CAPABILITIES = "getCapabilities"
NO_BALANCE = "GET /v1/capabilities does not answer a balance"
MOCK_STEP_SECONDS = 60.0  # mock time moved between two polls
MOCK_POLLS = 30

Catalogue = dict[str, dict[str, Any]]  # the capabilities listed, by name
T = TypeVar("T")

# -- send ------------------------------------------------------------------------------------


def operation(ctx: Context, operation_id: str) -> Operation:
    """The operation, or :class:`Skip` when the contract lacks it or it may not be sent."""
    op = ctx.held.operations.get(operation_id)
    if op is None:
        raise Skip(f"the contract has no {operation_id}")
    reason = ctx.why_not_send(op)
    if reason:
        raise Skip(reason)
    return op


def answered(ctx: Context, exchange: Exchange) -> Exchange:
    """The exchange, or :class:`Skip` when its capability is unavailable."""
    if exchange.capability_unavailable:
        if exchange.operation_id:
            ctx.session.unavailable.add(exchange.operation_id)
        raise Skip(CAPABILITY_UNAVAILABLE)
    return exchange


def send(
    ctx: Context,
    op: Operation,
    body: Any = None,
    *,
    path: dict[str, str] | None = None,
    **kwargs: Any,
) -> Exchange:
    """``op`` with ``body`` (a new Idempotency-Key where the operation takes one); :class:`Skip`
    when its capability is unavailable."""
    headers = {"Idempotency-Key": ctx.new_key()} if op.idempotency_key is not None else {}
    if body is not None:
        kwargs["json_body"] = body
    return answered(ctx, ctx.call(op, path_parameters=path, headers=headers, **kwargs))


# -- poll ------------------------------------------------------------------------------------


def polled(
    ctx: Context,
    read: Callable[[], T],
    ready: Callable[[T], bool],
    why: str,
    *,
    step: float = MOCK_STEP_SECONDS,
    polls: int = MOCK_POLLS,
    deliver: bool = False,
) -> tuple[T, bool]:
    """Read until ``ready``: the mock's clock is moved ``step`` seconds before each of at most
    ``polls`` reads again (and, with ``deliver``, its due deliveries made); a deployment is
    polled at the recommended interval for at most ``--job-wait`` seconds (``why`` says what
    for). Answers the last read and whether it was ready."""
    found = read()
    if ready(found):
        return found, True
    if ctx.control is not None:
        waits: Iterable[Any] = range(polls)
    else:
        waits = job_polls(ctx, why)
    for _ in waits:
        if ctx.control is not None:
            ctx.control.advance(step)
            if deliver:
                ctx.control.flush_deliveries()
        found = read()
        if ready(found):
            return found, True
    return found, False


def poll(
    ctx: Context, read: Callable[[], Exchange], ready: Callable[[Exchange], bool], why: str
) -> Exchange | None:
    """Read until ``ready`` (:func:`polled`); None when it never became ready."""
    found, done = polled(ctx, read, ready, why)
    return found if done else None


# -- catalogue, balance, price ---------------------------------------------------------------


def listed(body: Any) -> Catalogue:
    """The capabilities a ``GET /v1/capabilities`` body lists, by name."""
    entries = body.get("capabilities") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        return {}
    return {c["name"]: c for c in entries if isinstance(c, dict) and isinstance(c.get("name"), str)}


def credits(body: Any) -> int | None:
    """The balance a ``GET /v1/capabilities`` body answers (None: it answers none)."""
    account = body.get("balance") if isinstance(body, dict) else None
    credits = account.get("credits") if isinstance(account, dict) else None
    return credits if isinstance(credits, int) else None


def catalogue(ctx: Context) -> Catalogue:
    """The live catalogue of ``GET /v1/capabilities``, by capability name."""
    op = ctx.held.operations.get(CAPABILITIES)
    return {} if op is None else listed(ctx.call(op).json())


def balance(ctx: Context, auth: str | None = None) -> int | None:
    """The credit balance ``GET /v1/capabilities`` answers to the run's key (or the key
    ``auth``), when it answers one."""
    op = next(
        (o for o in ctx.contract.full.operations.values() if o.path == "/v1/capabilities"), None
    )
    if op is None:
        return None
    return credits((ctx.call(op) if auth is None else ctx.call(op, auth=auth)).json())


def price(catalogue: Catalogue, name: str) -> int | None:
    """The price the catalogue quotes for the capability ``name``."""
    price = catalogue.get(name, {}).get("price")
    return price if isinstance(price, int) else None


# -- refused without charge ------------------------------------------------------------------


def not_charged(
    ctx: Context, before: int | None, exchange: Exchange, rule: str, quote: str
) -> None:
    """The balance is where it was before the refused ``exchange`` (skipped when the deployment
    answers no balance)."""
    if before is None:
        ctx.skip(NO_BALANCE)
        return
    after = balance(ctx)
    ctx.expect(
        after == before,
        rule,
        f"the balance went from {before} to {after} credits on a call the rule refuses "
        f"(it answered {exchange.answered})",
        exchange=exchange,
        quote=quote,
    )


@dataclass(frozen=True)
class Refusal:
    """How a rule refuses a call: the answer (``status`` and error ``code``), the rule judging
    that answer, the rule judging that nothing was charged for it, and the contract's words."""

    status: int
    code: str
    rule: str
    not_charged: str
    quote: str


def refused_without_charge(
    ctx: Context,
    call: Callable[[], Exchange],
    refusal: Refusal,
    message: Callable[[Exchange], str],
    *,
    also: Callable[[Exchange], bool] | None = None,
    waive: Callable[[Exchange], str | None] | None = None,
    waive_both: Callable[[Exchange], str | None] | None = None,
) -> Exchange:
    """The balance, ``call``, then: it answered ``refusal`` (and ``also`` holds), and the
    balance did not move. ``message(exchange)`` says what was answered when it did not.

    Where the answer is not the case the rule speaks of, a reason given by ``waive(exchange)``
    skips the refusal rule (the charge is judged all the same), one given by
    ``waive_both(exchange)`` skips both rules."""
    before = balance(ctx)
    exchange = call()
    if waive_both is not None and (reason := waive_both(exchange)):
        ctx.skip(reason)
        return exchange
    if waive is not None and (reason := waive(exchange)):
        ctx.skip(reason)
    else:
        ctx.expect(
            exchange.answers(refusal.status, refusal.code) and (also is None or also(exchange)),
            refusal.rule,
            message(exchange),
            exchange=exchange,
            quote=refusal.quote,
        )
    not_charged(ctx, before, exchange, refusal.not_charged, refusal.quote)
    return exchange
