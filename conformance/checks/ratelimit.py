"""The rate limit: request N+1 of a window is refused, one person's keys share one bucket, and
what every ``Retry-After`` the run meets must look like.

The two probes spend a whole rate-limit window on purpose (:class:`Window`):

* against the bundled mock, in a sandbox of their own (mockserver/sandboxes.py) whose limit
  they set low through the control plane (``PUT /_mock/rate-limits``): a ``429`` costs
  :data:`LOW_LIMIT` + 3 requests, and its ``Retry-After`` is waited by moving that sandbox's
  clock. The run's own world and keys are never touched;
* against a deployment, with the run's own key at the deployment's limit: about one window
  (the limit + 3 requests and up to a minute's wait). They come last in a run (their family
  is the last), after every other check has judged once, and are skipped with "request budget
  used up" where the run's budget has less than a window left (conformance/plan.py states
  their cost in the plan).

The observers judge every 429 (and every 503 ``upstream_unavailable`` that carries
``Retry-After``) the run receives, from any check.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from conformance.checks import check, observer
from conformance.context import Context
from conformance.skips import Skip
from conformance.target import Exchange

FAMILY = "rate-limit"
SECONDS = re.compile(r"[0-9]+")  # Retry-After as the contract states it: whole seconds, >= 0
CAPABILITIES = "getCapabilities"  # free, never billed: what the probes spend their window on
LOW_LIMIT = 4  # the limit a probe sets in its own sandbox of the bundled mock
NEEDS_SAME_PERSON = (
    "needs --same-person-key (another key of the person who holds --api-key): the rule is about "
    "two keys of one person"
)

Q_SHARED = (
    "Request rate: 100 requests per minute per authenticated caller identity; all keys of one "
    "person share the bucket"
)
Q_PAUSE = (
    "`Retry-After`: seconds to wait; 429 responses; all work for that identity pauses during "
    "the wait"
)
Q_BODY = "The 429 body is the standard error body with code `rate_limited`."


@dataclass
class Window:
    """Where a probe spends a rate-limit window: the keys it sends with (one person's), the
    limit the window holds, and how time passes there."""

    ctx: Context
    limit: int
    keys: list[str]  # bearer keys (a sandbox's), or the run's auth kinds (a deployment's)
    sandbox: str | None = None
    sent: list[Exchange] = field(default_factory=list)

    @property
    def turn(self) -> int:
        """The key whose turn it is: the keys take turns, one request each."""
        return len(self.sent) % len(self.keys)

    @property
    def where(self) -> str:
        return "in a sandbox of the check's own" if self.sandbox else "with the run's key"

    def send(self, which: int = 0, *, provoked: bool = False) -> Exchange:
        """One free read with key ``which``, never retried nor paced (the probe watches the
        window itself)."""
        ctx = self.ctx
        op = ctx.held.operations[CAPABILITIES]
        key = self.keys[which]
        if self.sandbox:
            headers = {"Authorization": f"Bearer {key}"}
            exchange = ctx.call(
                op, auth="custom", headers=headers, retry=False, pace=False, provoked=provoked
            )
        else:
            exchange = ctx.call(op, auth=key, retry=False, pace=False, provoked=provoked)
        self.sent.append(exchange)
        return exchange

    def wait(self, seconds: int, why: str) -> None:
        """Let ``seconds`` pass where the window counts: the sandbox's clock moves; a
        deployment is waited for (as every wait of a run)."""
        if self.sandbox is None:
            self.ctx.target.wait(seconds, why)
            return
        control = self.ctx.control
        response = control.client.post(
            f"{control.base}/clock/advance",
            json={"seconds": seconds},
            params={"sandbox": self.sandbox},
            headers=control.headers,
            timeout=60,
        )
        response.raise_for_status()

    def resumed(self, which: int) -> Exchange:
        """After the wait: a request with key ``which``, paced as any of the run's (against a
        deployment the run's own window bookkeeping is brought up to date by it)."""
        if self.sandbox:
            return self.send(which)
        op = self.ctx.held.operations[CAPABILITIES]
        exchange = self.ctx.call(op, auth=self.keys[which], retry=False)
        self.sent.append(exchange)
        return exchange


@contextmanager
def spent_window(ctx: Context, *, keys: int) -> Iterator[Window]:
    """A window to spend with ``keys`` keys of one person (1 or 2): a sandbox of the bundled
    mock's at :data:`LOW_LIMIT`, ended afterwards; else the deployment, with ``--api-key`` (and
    ``--same-person-key``)."""
    if CAPABILITIES not in ctx.held.operations:
        raise Skip(f"the contract has no {CAPABILITIES}")
    stated = int(ctx.contract.full.rate_limit.get("requestsPerMinute", 0))
    if not stated:
        raise Skip("the contract states no rate limit")
    if ctx.control is None or ctx.session.mock is None:
        if keys == 2 and not ctx.target.same_person_key:
            raise Skip(NEEDS_SAME_PERSON)
        ctx.target.require(stated + 3)
        yield Window(ctx, stated, ["primary", "same-person"][:keys])
        return
    ctx.target.require(LOW_LIMIT + 3)
    with _low_limit_sandbox(ctx, keys) as window:
        yield window


@contextmanager
def _low_limit_sandbox(ctx: Context, keys: int) -> Iterator[Window]:
    control, mock = ctx.control, ctx.session.mock
    sandboxes = f"{control.base}/sandboxes"
    made = control.client.post(
        sandboxes,
        json={"seed": ctx.seed, "workspace": mock.workspace},
        headers=control.headers,
        timeout=60,
    )
    if made.status_code != 200:
        raise Skip(f"the mock would not make a sandbox: {made.status_code} {made.text[:200]}")
    sandbox = made.json()["sandbox"]
    try:
        by_member: dict[str, list[str]] = {}
        for key in sandbox["keys"]:
            by_member.setdefault(key["member"], []).append(key["key"])
        mine = by_member.get(mock.member, [])
        pair = (
            mine
            if len(mine) >= keys
            else next((k for k in by_member.values() if len(k) >= keys), [])
        )
        if len(pair) < keys:
            raise Skip("the mock's fixtures have no member with two keys")
        limited = control.client.put(
            f"{control.base}/rate-limits",
            json={"limit": LOW_LIMIT},
            params={"sandbox": sandbox["id"]},
            headers=control.headers,
            timeout=60,
        )
        if limited.status_code != 200:
            raise Skip(
                f"the mock's control plane would not set a rate limit (PUT /_mock/rate-limits "
                f"answered {limited.status_code})"
            )
        yield Window(ctx, LOW_LIMIT, pair[:keys], sandbox=sandbox["id"])
    finally:
        control.client.delete(f"{sandboxes}/{sandbox['id']}", headers=control.headers, timeout=60)


def _remaining(exchange: Exchange) -> int | None:
    value = exchange.header("x-ratelimit-remaining")
    return int(value) if value is not None and value.isdigit() else None


def _seconds(value: str | None) -> bool:
    return value is not None and SECONDS.fullmatch(value.strip()) is not None


def _key(exchange: Exchange) -> tuple[str, ...]:
    return (exchange.operation_id or exchange.path,)


# -- request N+1 -----------------------------------------------------------------------------


@check(
    "rate-limit",
    FAMILY,
    "request N+1 of a window (N = x-ratelimit-limit) answers 429 rate_limited, the standard "
    "error body, with Retry-After and the rate-limit headers; served again after the wait",
    window=True,
)
def rate_limit(ctx: Context) -> None:
    with spent_window(ctx, keys=1) as window:
        first = window.send()
        _limit_announced(ctx, window, first)
        left = _remaining(first)
        if left is None or left >= window.limit:
            shown = first.header("x-ratelimit-remaining")
            raise Skip(f"x-ratelimit-remaining is {shown!r}: the window cannot be followed")
        if not _spend(ctx, window, left):
            return
        over = window.send(provoked=True)
        if not _refused(
            ctx, over, f"the request after x-ratelimit-remaining reached 0 {window.where}"
        ):
            return
        _refusal_headers(ctx, window, over)
        retry_after = over.header("retry-after") or ""
        wait = int(retry_after) if retry_after.isdigit() else 60
        window.wait(wait, "Retry-After after the rate-limit probe")
        after = window.resumed(0)
        ctx.expect(
            after.status != 429,
            "window-resets",
            f"after waiting Retry-After ({wait} s) the next request answered {after.answered}",
            exchange=after,
            quote=ctx.held.quote("#/components/responses/RateLimited"),
        )


def _limit_announced(ctx: Context, window: Window, first: Exchange) -> None:
    limit = first.header("x-ratelimit-limit")
    ctx.expect(
        limit == str(window.limit),
        "limit-header",
        f"x-ratelimit-limit is {'missing' if limit is None else repr(limit)} {window.where}; "
        f"the limit there is {window.limit} per minute",
        exchange=first,
        quote=ctx.held.quote("#/x-rate-limit"),
    )


def _spend(ctx: Context, window: Window, left: int) -> bool:
    """Spend the ``left`` requests of the window, the window's keys taking turns; False
    (failed) on a 429 before they are spent. Each answer's ``x-ratelimit-remaining`` must
    fall."""
    previous = window.sent[-1]
    for sent in range(left):
        exchange = window.send(window.turn)
        if not ctx.expect(
            exchange.status != 429,
            "early-429",
            f"429 after {sent + 1} of the {left} requests x-ratelimit-remaining allowed",
            exchange=exchange,
            quote=ctx.held.quote("#/components/responses/RateLimited"),
        ):
            return False
        now, was = _remaining(exchange), _remaining(previous)
        if now is not None and was is not None and now >= was:
            ctx.fail(
                "remaining-decreases",
                f"x-ratelimit-remaining went from {was} to {now}",
                exchange=exchange,
                quote=ctx.held.quote("#/components/headers/RateLimitRemaining"),
                key=("remaining",),
            )
        previous = exchange
    return True


def _refused(ctx: Context, over: Exchange, what: str) -> bool:
    """Whether ``over`` is the 429 ``rate_limited`` with the standard error body."""
    codes = ctx.held.error_codes.get(429, ("rate_limited",))
    body = over.json()
    standard = (
        isinstance(body, dict)
        and body.get("success") is False
        and isinstance(body.get("error"), str)
        and body.get("code") in codes
    )
    return ctx.expect(
        over.status == 429 and standard,
        "rate-limited",
        f"{what} answered {over.answered} with {over.response_body[:200]!r} (expected 429 and the "
        f"standard error body with code {' or '.join(codes)})",
        exchange=over,
        quote=Q_BODY + " " + ctx.held.quote("#/components/responses/RateLimited"),
    )


def _refusal_headers(ctx: Context, window: Window, over: Exchange) -> None:
    retry_after = over.header("retry-after")
    ctx.expect(
        _seconds(retry_after),
        "retry-after",
        f"the 429 carries Retry-After {'(none)' if retry_after is None else repr(retry_after)} "
        "(seconds expected)",
        exchange=over,
        quote=ctx.held.quote("#/components/headers/RetryAfter"),
    )
    limit, remaining = over.header("x-ratelimit-limit"), over.header("x-ratelimit-remaining")
    reset = over.header("x-ratelimit-reset")
    ctx.expect(
        limit == str(window.limit) and remaining == "0" and _seconds(reset),
        "rate-limit-headers",
        f"the 429 carries x-ratelimit-limit {limit!r}, -remaining {remaining!r}, -reset "
        f"{reset!r} (expected {window.limit}, 0 and whole seconds)",
        exchange=over,
        quote="`x-ratelimit-limit`, `x-ratelimit-remaining`, `x-ratelimit-reset`: requests "
        "allowed, requests left, seconds until reset; authenticated responses",
    )


# -- one person, one bucket ------------------------------------------------------------------


@check(
    "rate-limit-shared-bucket",
    FAMILY,
    "two keys of one person share one bucket: sent in turn, x-ratelimit-remaining falls by one "
    "a request across the pair, and a 429 earned with one key pauses the other until its "
    "Retry-After has passed",
    window=True,
)
def shared_bucket(ctx: Context) -> None:
    with spent_window(ctx, keys=2) as window:
        first = window.send(0)
        left = _remaining(first)
        if left is None or first.status == 429:
            raise Skip(f"the first request answered {first.answered} without x-ratelimit-remaining")
        if left < 2:
            raise Skip(f"x-ratelimit-remaining is {left}: too little left to measure")
        second = window.send(1)
        shared = ctx.expect(
            _remaining(second) == left - 1,
            "shared-bucket",
            f"the person's second key saw x-ratelimit-remaining {_remaining(second)} right after "
            f"their first key saw {left} (expected {left - 1}: one bucket for both keys)",
            exchange=second,
            quote=_quote(ctx),
        )
        left = _remaining(second)
        if not shared or left is None:
            return  # buckets of their own: there is no shared window to follow
        if not _spend(ctx, window, left):
            return
        earned_with = window.turn
        over = window.send(earned_with, provoked=True)
        if not _refused(ctx, over, "the request after x-ratelimit-remaining reached 0"):
            return
        retry_after = over.header("retry-after") or ""
        wait = int(retry_after) if retry_after.isdigit() else 60
        other = window.send(1 - earned_with, provoked=True)
        ctx.expect(
            other.status == 429,
            "paused",
            f"a 429 earned with one key of a person (Retry-After {wait} s), and the person's other "
            f"key was then answered {other.answered} (expected 429: all work for that identity "
            "pauses during the wait)",
            exchange=other,
            quote=Q_PAUSE,
        )
        window.wait(wait, "Retry-After after the shared-bucket probe")
        after = window.resumed(1 - earned_with)
        ctx.expect(
            after.status != 429,
            "resumes",
            f"after waiting Retry-After ({wait} s) the person's other key was answered "
            f"{after.answered}",
            exchange=after,
            quote=Q_PAUSE,
        )


def _quote(ctx: Context) -> str:
    contract = ctx.held.quote("#/x-rate-limit/scope")
    return (
        f"{Q_SHARED} (contract: {contract})" if contract and contract not in Q_SHARED else Q_SHARED
    )


# -- every 429 and 503 the run meets ---------------------------------------------------------


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
        quote=Q_BODY,
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
