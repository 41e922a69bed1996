"""Limits and money: 402 and its codes, 503 for an unavailable capability, 413 for a big body.

402 and ``capability_unavailable`` are states a suite cannot safely bring about on a real
deployment; against the bundled mock they are reached through its control plane. The 413 probe
is always safe: its body also breaks a stated bound, so it must be refused either way. Quote and
charge are compared by the balance ``GET /v1/capabilities`` answers before and after one paid
call of each operation whose price the contract states.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.checks import check, steps
from conformance.checks.idempotency import NO_PAID_CALL, first_success, replayable
from conformance.context import Context
from conformance.contract import Operation
from conformance.generation import Prepared
from conformance.refusals import refusal, refused_since
from conformance.skips import Skip
from conformance.target import Exchange

FAMILY = "limits"


def _working_paid_call(ctx: Context) -> tuple[Operation, Prepared]:
    mark, paid = ctx.target.count, replayable(ctx, paid=True)
    found = first_success(ctx, paid)
    if found is None:
        raise Skip(refusal(NO_PAID_CALL, refused_since(ctx, mark, paid)))
    op, prepared, _ = found
    return op, prepared


def _again(ctx: Context, op: Operation, prepared: Prepared, **kwargs: Any) -> Exchange:
    """The same call under a fresh Idempotency-Key (a new logical operation)."""
    headers = {k: v for k, v in prepared.headers.items() if k.lower() != "idempotency-key"}
    headers["Idempotency-Key"] = ctx.new_key()
    fresh = Prepared(prepared.method, prepared.url, headers, prepared.body)
    return ctx.send(fresh, op, **kwargs)


@check(
    "limits-payment-required",
    FAMILY,
    "402 insufficient_credits (with the shortfall in details) and 402 budget_capped, nothing "
    "charged (through the mock's control plane)",
    spends=True,
)
def payment_required(ctx: Context) -> None:
    control = ctx.require_control()
    mock = ctx.session.mock
    assert mock is not None
    op, prepared = _working_paid_call(ctx)
    codes = ctx.held.error_codes.get(402, ())
    quote = ctx.held.quote("#/components/responses/PaymentRequired")
    details_schema = ctx.held.document["components"]["schemas"]["CreditShortfall"]
    original = control.credits(mock.workspace)
    try:
        control.set_credits(mock.workspace, 0)
        exchange = _again(ctx, op, prepared, provoked=True)
        if ctx.expect(
            exchange.status == 402 and exchange.code == "insufficient_credits" in codes,
            "insufficient-credits",
            f"with no credits {op.label} answered {exchange.answered}",
            exchange=exchange,
            quote=quote,
        ):
            _judge_shortfall(ctx, exchange, details_schema, quote)
        ctx.expect(
            control.credits(mock.workspace) == 0,
            "nothing-charged",
            "a refused call changed the balance",
            exchange=exchange,
            quote=quote,
        )
        control.set_credits(mock.workspace, original)
        control.set_budget(mock.workspace, mock.member, True)
        exchange = _again(ctx, op, prepared, provoked=True)
        ctx.expect(
            exchange.status == 402 and exchange.code == "budget_capped" in codes,
            "budget-capped",
            f"with the member capped {op.label} answered {exchange.answered}",
            exchange=exchange,
            quote=quote,
        )
        control.set_credits(mock.workspace, original + 100000)
        exchange = _again(ctx, op, prepared, provoked=True)
        ctx.expect(
            exchange.answers(402, "budget_capped"),
            "budget-capped-after-top-up",
            f"budget_capped must not clear with a top-up; got {exchange.answered}",
            exchange=exchange,
            quote=quote,
        )
    finally:
        control.set_budget(mock.workspace, mock.member, False)
        control.set_credits(mock.workspace, original)


def _judge_shortfall(ctx: Context, exchange: Exchange, schema: Any, quote: str) -> None:
    body = exchange.json()
    details = body.get("details") if isinstance(body, dict) else None
    if not isinstance(schema, dict) or not schema.get("properties"):
        return  # the shape of details is inferred: not held under this profile
    fields = ("price", "balance", "shortfall")
    ok = isinstance(details, dict) and all(isinstance(details.get(f), int) for f in fields)
    ok = ok and details["shortfall"] == details["price"] - details["balance"]  # type: ignore[index]
    ctx.expect(
        ok,
        "shortfall-details",
        "details must give price, balance and shortfall = price - balance; got "
        f"{json.dumps(details, ensure_ascii=False)}",
        exchange=exchange,
        quote=ctx.held.quote("#/components/schemas/CreditShortfall"),
    )


@check(
    "limits-capability-unavailable",
    FAMILY,
    "a capability GET /v1/capabilities reports unavailable answers 503 capability_unavailable "
    "without Retry-After (through the mock's control plane)",
    spends=True,
)
def capability_unavailable(ctx: Context) -> None:
    control = ctx.require_control()
    op, prepared = _working_paid_call(ctx)
    capabilities = ctx.request("GET", "/v1/capabilities", operation_id="getCapabilities").json()
    names = list(steps.listed(capabilities))
    if not names:
        raise Skip("GET /v1/capabilities lists no capabilities")
    quote = ctx.held.quote("#/components/responses/ServiceUnavailable")
    try:
        for name in names:
            control.set_capability(name, available=False)
        listed = ctx.request("GET", "/v1/capabilities", operation_id="getCapabilities").json()
        ctx.expect(
            all(not c.get("available", True) for c in (listed or {}).get("capabilities", [])),
            "reported-unavailable",
            "GET /v1/capabilities still reports a capability available",
            quote=quote,
        )
        exchange = _again(ctx, op, prepared, provoked=True)
        ctx.expect(
            exchange.answers(503, "capability_unavailable"),
            "capability-unavailable",
            f"{op.label} with every capability unavailable answered {exchange.answered}",
            exchange=exchange,
            quote=quote,
        )
        ctx.expect(
            exchange.header("retry-after") is None,
            "no-retry-after",
            "capability_unavailable carries Retry-After (it is never retried)",
            exchange=exchange,
            quote=ctx.held.quote("#/components/headers/RetryAfterWhenRetryable"),
        )
    finally:
        for name in names:
            control.set_capability(name, available=True)


@check(
    "limits-payload-too-large",
    FAMILY,
    "a body over the size limit answers 413 payload_too_large (full) or is refused (contract)",
)
def payload_too_large(ctx: Context) -> None:
    limit = int(ctx.contract.full.limits.get("maxRequestBodyBytes", 1 << 20))
    op, field, bound = _bounded_string_field(ctx)
    body = {field: "x" * (limit + 1024)}
    path = {p.name: "conformance-probe" for p in op.path_parameters}
    exchange = ctx.call(
        op, path_parameters=path, json_body=body, headers={"Idempotency-Key": ctx.new_key()}
    )
    if ctx.unavailable(exchange):
        return
    codes = ctx.held.error_codes.get(413, ())
    quote = ctx.held.quote("#/components/responses/PayloadTooLarge")
    if ctx.profile == "full":
        ctx.expect(
            exchange.status == 413 and exchange.code in codes,
            "payload-too-large",
            f"a {limit + 1024}-byte body answered {exchange.answered}",
            exchange=exchange,
            quote=quote,
        )
    else:
        ctx.expect(
            exchange.status in (400, 404, 413),
            "refused",
            f"a {limit + 1024}-byte body (its {field} over the stated {bound}) answered "
            f"{exchange.answered}",
            exchange=exchange,
            quote=quote,
        )


def _bounded_string_field(ctx: Context) -> tuple[Operation, str, int]:
    """A write whose body has a string field with a stated maxLength (so the probe is invalid)."""
    for op in ctx.held.operations.values():
        if op.body_schema is None or not ctx.contract.applicable(op) or op.paid:
            continue
        for name, schema in ctx.held.flatten(op.body_schema)["properties"].items():
            schema = ctx.held.resolve(schema)
            bounded = isinstance(schema, dict) and isinstance(schema.get("maxLength"), int)
            if bounded and schema.get("type") == "string":
                return op, name, schema["maxLength"]
    raise Skip("no body field with a stated length bound")


# -- quote and charge ---------------------------------------------------------------------------

CAPABILITIES = steps.CAPABILITIES
_PAID_AS = re.compile(r"Paid \(`([^`]+)`([^)]*)\)")  # "Paid (`video-render`, inferred name)"
_PRICED_BY_WORK = re.compile(r"\(`([^`]+)`, \d+ credits\)")  # remix: "(`script`, 100 credits)"
Items = list[tuple[str, int]]


@dataclass(frozen=True)
class Catalogue:
    """What GET /v1/capabilities quotes now: prices and options by capability, the balance."""

    prices: dict[str, int]
    options: dict[str, dict[str, Any]]
    balance: int


def _catalogue(ctx: Context) -> Catalogue | None:
    body = ctx.call(ctx.contract.full.operations[CAPABILITIES]).json()
    credits = steps.credits(body)
    priced = {n: e for n, e in steps.listed(body).items() if isinstance(e.get("price"), int)}
    if credits is None or not priced:
        return None
    return Catalogue(
        {name: entry["price"] for name, entry in priced.items()},
        {name: e["options"] for name, e in priced.items() if isinstance(e.get("options"), dict)},
        credits,
    )


def _accepted_values(options: dict[str, Any]) -> Callable[[Any], Any]:
    """A body update choosing, for each field the capability publishes values of (its
    ``options``, by the plural of the field's name: ``genres`` for ``genre``), the first."""

    def update(body: Any) -> Any:
        for key, values in options.items():
            name = key[:-1] if key.endswith("s") else key
            if isinstance(body, dict) and name in body and isinstance(values, list) and values:
                body[name] = values[0]
        return body

    return update


def _succeed(
    ctx: Context, op: Operation, update: Callable[[Any], Any]
) -> tuple[Prepared, Exchange] | None:
    found = first_success(ctx, [op], salt="quote", body_update=update)
    return None if found is None else (found[1], found[2])


@dataclass(frozen=True)
class Pricing:
    """How the contract prices a call: the work's items from its body (capability, quantity);
    ``fixed`` names the capability of a fixed-price operation."""

    items: Callable[[Any], Items]
    fixed: str | None = None


def _pricing(op: Operation) -> Pricing | str:
    """A fixed-price operation (``Paid (`name`)``) or remix's stated rule; else why not."""
    text = " ".join(str(op.definition.get("description", "")).split())
    if found := _PAID_AS.search(text):
        name, rest = found.group(1), found.group(2)
        if "per " in rest:
            return "priced per unit of its body, not at a fixed price"
        return Pricing(lambda body: [(name, 1)], fixed=name)
    names = _PRICED_BY_WORK.findall(text)
    if len(names) == 3 and "per url source" in text:
        return Pricing(_remix_items(*names))
    return "the contract states no price for its work"


def _remix_items(per_url: str, script: str, scenes: str) -> Callable[[Any], Items]:
    """The stated rule: with any url source, one video analysis per url source; from
    transcripts alone one script, or one scene plan when ``outputFormat`` is ``scenes``."""

    def items(body: Any) -> Items:
        body = body if isinstance(body, dict) else {}
        sources = body.get("sources") if isinstance(body.get("sources"), list) else []
        urls = sum(1 for source in sources if isinstance(source, dict) and "url" in source)
        if urls:
            return [(per_url, urls)]
        return [(scenes if body.get("outputFormat") == "scenes" else script, 1)]

    return items


@check(
    "limits-quote-equals-charge",
    FAMILY,
    "a successful paid call lowers the balance by exactly the price GET /v1/capabilities quotes "
    "for its work (fixed-price operations, and remix priced per url source or per "
    "script/scene plan; operations priced otherwise are skipped)",
    spends=True,
)
def quote_equals_charge(ctx: Context) -> None:
    quote = ctx.held.quote(
        f"#/paths/{'/v1/capabilities'.replace('/', '~1')}/get",
        "Prices are read from the table the charge uses, so quote and charge agree.",
    )
    judged = 0
    current: Catalogue | None = None  # the last reading, while nothing was called since
    for op in replayable(ctx, paid=True):
        pricing = _pricing(ctx.contract.full.operations[op.operation_id])
        if isinstance(pricing, str):
            ctx.skip(pricing)
            continue
        before, current = current or _catalogue(ctx), None
        if before is None:
            raise Skip("GET /v1/capabilities does not answer prices and a balance")
        options = before.options.get(pricing.fixed, {}) if pricing.fixed else {}
        mark = ctx.target.count
        found = _succeed(ctx, op, _accepted_values(options))
        if found is None:
            ctx.skip(refusal("no generated request succeeded", refused_since(ctx, mark, [op])))
            continue
        prepared, exchange = found
        items = pricing.items(json.loads(prepared.body or b"null"))
        if any(name not in before.prices for name, _ in items):
            ctx.skip("the catalogue does not list the capability the contract names")
            continue
        after = current = _catalogue(ctx)
        if after is None:
            raise Skip("GET /v1/capabilities does not answer prices and a balance")
        quoted = sum(before.prices[name] * quantity for name, quantity in items)
        shown = " + ".join(f"{q} × {name} at {before.prices[name]}" for name, q in items)
        charged = before.balance - after.balance
        judged += 1
        ctx.expect(
            charged == quoted,
            "charge-equals-quote",
            f"{op.label}: GET /v1/capabilities quoted {quoted} credits ({shown}); the balance "
            f"went from {before.balance} to {after.balance}, a charge of {charged}",
            exchange=exchange,
            quote=quote,
            key=(op.operation_id,),
        )
    if not judged:
        raise Skip("no paid call with a stated price succeeded")
