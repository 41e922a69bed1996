"""The rate-limit probe: drives the caller to 429 on purpose, so it runs only with --only.

The limit is the contract's ``x-rate-limit.requestsPerMinute`` (stated). The probe reads the
window from the first response's ``x-ratelimit-remaining``, spends it on a free read, and expects
the next request to answer ``429 rate_limited`` with ``Retry-After``; then it waits as told.
"""

from __future__ import annotations

from conformance.checks import check
from conformance.runner import Context, Skip

FAMILY = "rate-limit"


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
        f"x-ratelimit-limit is {limit!r}; the contract states {per_minute} per minute",
        exchange=first,
        quote=ctx.held.quote("#/x-rate-limit"),
    )
    if remaining is None or not remaining.isdigit() or int(remaining) > per_minute:
        raise Skip(f"x-ratelimit-remaining is {remaining!r}: the window cannot be followed")
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
        f"the request after x-ratelimit-remaining reached 0 answered {over.status} "
        f"{over.code} (expected 429 {' or '.join(codes)})",
        exchange=over,
        quote=quote,
    )
    ctx.expect(
        retry_after is not None and retry_after.isdigit(),
        "retry-after",
        f"the 429 carries Retry-After {retry_after!r} (seconds expected)",
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
