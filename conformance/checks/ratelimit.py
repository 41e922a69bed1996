"""The rate-limit probe, and what every ``Retry-After`` the run meets must look like.

The probe drives the caller to 429 on purpose, so it runs only with --only. The limit is the
contract's ``x-rate-limit.requestsPerMinute`` (stated). The probe reads the window from the first
response's ``x-ratelimit-remaining``, spends it on a free read, and expects the next request to
answer ``429 rate_limited`` with ``Retry-After``; then it waits as told.

The observers judge every 429 (and every 503 ``upstream_unavailable`` that carries
``Retry-After``) the run receives, from any check; a run that met none has nothing to judge.
"""

from __future__ import annotations

import re

from conformance.checks import check, observer
from conformance.runner import Context, Skip
from conformance.target import Exchange

FAMILY = "rate-limit"
SECONDS = re.compile(r"[0-9]+")  # Retry-After as the contract states it: whole seconds, >= 0


@check(
    "rate-limit",
    FAMILY,
    "request N+1 in a minute (N = x-rate-limit, 100) answers 429 rate_limited with Retry-After; "
    "runs only with --only rate-limit",
    only_when_selected=True,
)
def rate_limit(ctx: Context) -> None:
    per_minute = int(ctx.contract.full.rate_limit.get("requestsPerMinute", 0))
    if not per_minute:
        raise Skip("the contract states no rate limit")
    op = ctx.held.operations["getCapabilities"]
    ctx.target.require(per_minute + 2)
    quote = ctx.held.quote("#/components/responses/RateLimited")
    first = ctx.call(op, retry=False, pace=False)
    limit, remaining = first.header("x-ratelimit-limit"), first.header("x-ratelimit-remaining")
    ctx.expect(
        limit == str(per_minute),
        "limit-header",
        f"x-ratelimit-limit is {'missing' if limit is None else repr(limit)}; the contract "
        f"states {per_minute} per minute",
        exchange=first,
        quote=ctx.held.quote("#/x-rate-limit"),
    )
    if remaining is None or not remaining.isdigit() or int(remaining) > per_minute:
        shown = "missing" if remaining is None else repr(remaining)
        raise Skip(f"x-ratelimit-remaining is {shown}: the window cannot be followed")
    left = int(remaining)
    previous = first
    for sent in range(left):
        exchange = ctx.call(op, retry=False, pace=False)
        if not ctx.expect(
            exchange.status != 429,
            "early-429",
            f"429 after {sent + 1} of the {left} requests x-ratelimit-remaining allowed",
            exchange=exchange,
            quote=quote,
        ):
            return
        now = exchange.header("x-ratelimit-remaining")
        was = previous.header("x-ratelimit-remaining")
        if now and was and now.isdigit() and was.isdigit() and int(now) >= int(was):
            ctx.fail(
                "remaining-decreases",
                f"x-ratelimit-remaining went from {was} to {now}",
                exchange=exchange,
                quote=ctx.held.quote("#/components/headers/RateLimitRemaining"),
                key=("remaining",),
            )
        previous = exchange
    over = ctx.call(op, retry=False, pace=False, provoked=True)
    retry_after = over.header("retry-after")
    codes = ctx.held.error_codes.get(429, ())
    ctx.expect(
        over.status == 429 and over.code in codes,
        "rate-limited",
        f"the request after x-ratelimit-remaining reached 0 answered {over.answered}"
        f" (expected 429 {' or '.join(codes)})",
        exchange=over,
        quote=quote,
    )
    ctx.expect(
        retry_after is not None and retry_after.isdigit(),
        "retry-after",
        f"the 429 carries Retry-After {'(none)' if retry_after is None else repr(retry_after)} "
        "(seconds expected)",
        exchange=over,
        quote=ctx.held.quote("#/components/headers/RetryAfter"),
    )
    if over.status == 429:
        wait = int(retry_after) if retry_after and retry_after.isdigit() else 60
        ctx.target.wait(wait, "Retry-After after the rate-limit probe")
        after = ctx.call(op, retry=False, pace=False)
        ctx.expect(
            after.status != 429,
            "window-resets",
            f"after waiting Retry-After ({wait} s) the next request answered {after.status}",
            exchange=after,
            quote=quote,
        )


def _seconds(value: str | None) -> bool:
    return value is not None and SECONDS.fullmatch(value.strip()) is not None


def _key(exchange: Exchange) -> tuple[str, ...]:
    return (exchange.operation_id or exchange.path,)


@observer(
    "rate-limit-retry-after",
    FAMILY,
    "every 429 the run meets, from any check, carries Retry-After (whole seconds) and code "
    "rate_limited",
)
def retry_after_on_429(ctx: Context, exchange: Exchange) -> None:
    if exchange.status != 429:
        return
    retry_after = exchange.header("retry-after")
    ctx.expect(
        _seconds(retry_after),
        "retry-after",
        f"the 429 carries Retry-After {retry_after!r}; expected a non-negative integer of seconds",
        exchange=exchange,
        quote="429 `rate_limited` (with `Retry-After`). `Retry-After`: seconds to wait. "
        + ctx.held.quote("#/components/headers/RetryAfter"),
        key=("retry-after", *_key(exchange)),
    )
    codes = ctx.held.error_codes.get(429, ("rate_limited",))
    ctx.expect(
        exchange.code in codes,
        "rate-limited-code",
        f"the 429 carries code {exchange.code!r}; expected {' or '.join(codes)}",
        exchange=exchange,
        quote="The 429 body is the standard error body with code `rate_limited`.",
        key=("code", *_key(exchange)),
    )


@observer(
    "envelope-retry-after-503",
    "envelope",
    "a 503 upstream_unavailable that carries Retry-After gives whole seconds (it may omit it)",
)
def retry_after_on_503(ctx: Context, exchange: Exchange) -> None:
    if exchange.status != 503 or exchange.code != "upstream_unavailable":
        return
    retry_after = exchange.header("retry-after")
    if retry_after is None:
        return  # optional: "may carry Retry-After"
    ctx.expect(
        _seconds(retry_after),
        "retry-after",
        f"the 503 upstream_unavailable carries Retry-After {retry_after!r}; expected a "
        "non-negative integer of seconds",
        exchange=exchange,
        quote="503 `upstream_unavailable` (retry; may carry `Retry-After`). `Retry-After`: "
        "seconds to wait. " + ctx.held.quote("#/components/headers/RetryAfterWhenRetryable"),
        key=_key(exchange),
    )
