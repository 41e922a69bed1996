"""The preflight: before any judgement, whether the run is set up so that it can judge.

:func:`preflight` runs before every run (``conformance.api.run``, before any check) and alone
(``conformance preflight``). Its requests count in the run's request total. What it finds:

* **Reachability and TLS**: ``GET /v1/openapi.json`` (1 request; public, never rate limited).
* **Each key**: ``GET /v1/projects`` with ``--api-key``, ``--same-person-key``,
  ``--restricted-key`` and ``--second-key`` (1 request each). The API shows nothing of the
  caller (no operation states its workspace, member or role), so the evidence is what the
  interface document does state:
  a key is pinned to one workspace and lists that workspace's records, and the ids of another
  workspace answer ``404``; all keys of one person share one rate-limit bucket. So
  ``--second-key`` listing a record of the ``--api-key`` workspace is a key of that workspace;
  ``--restricted-key`` listing none of them is asked for the comments of one of them
  (1 request more): ``404`` is another workspace; ``--restricted-key`` counting in the bucket
  of ``--api-key`` acts as the same person, not a lower role. Each is a setup problem.
  ``--same-person-key`` is checked like ``--restricted-key`` for its workspace; whether it
  counts in the bucket of ``--api-key`` is said, never refused: a deployment that gives each
  key a bucket of its own breaks the rule ``rate-limit-shared-bucket`` judges. A role
  itself is never shown, and a write that would show it is never made here:
  ``auth-forbidden-role`` judges the governance lock with the key.
* **The rate limit**: ``x-ratelimit-limit``, ``-remaining`` and ``-reset`` of those answers,
  and how long the planned run needs at that rate (:func:`planned_requests`,
  :func:`seconds_at_rate`). When the plan needs more requests than the window has left (or
  has a rate-limit probe it can afford, or the key is already answered ``429``), whether the
  window moves with real time: ``x-ratelimit-reset`` read again :data:`GAP_SECONDS` after the
  first answer (1 request; a mock on ``--clock manual`` reached with ``--base-url`` keeps it
  still), and whether a ``429`` outlasts the ``Retry-After`` it gave (1 request more, after
  that wait).
* **``--receiver-url``**: a probe POSTed to it from here reaches the suite's receiver
  (conformance/receiver.py), listening on ``--receiver-listen`` (where a check of the run
  judges deliveries: ``Check.receives``).
* **``--mock-url``**: whether the mock accepts the receiver's URL: a webhook subscription to it
  (1 request) in a sandbox of the preflight's own; ``400`` on the url means the mock lacks
  ``--allow-private-callbacks``. With ``--no-sandbox``: the clock its control plane tells
  (it must be manual), the keys as above, and the subscription made in its base world and
  deleted again (2 requests).

Against a deployment that is 2 requests with ``--api-key`` alone and a plan that fits the
window, 5 with three keys, 6 with all four, 9 at most; against ``--mock-url`` 2, and 6 with
``--no-sandbox`` (all three keys); against ``--mock``, started by the run itself, none. A setup
problem is one line saying what to change (:class:`~conformance.target.SetupProblem`); the run
then judges nothing, exits 2 and still writes its reports. The preflight never hangs: its
longest wait is one ``Retry-After`` (capped as every wait of a run) in the rate test.
"""

from __future__ import annotations

import math
import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import httpx

from conformance.checks import Check, select
from conformance.contract import bundled_document
from conformance.plan import window_requests
from conformance.receiver import Receiver
from conformance.sandboxes import SandboxError, Where, control_headers, sandboxed
from conformance.target import (
    KEY_OPTIONS,
    BudgetExhausted,
    Exchange,
    SetupProblem,
    Target,
    TargetUnreachable,
)
from mockserver.platform.tls import tls_context

if TYPE_CHECKING:
    from conformance.api import RunConfig

__all__ = ["GAP_SECONDS", "Preflight", "planned_requests", "preflight", "seconds_at_rate"]

OPENAPI = "/v1/openapi.json"
PROJECTS = "/v1/projects"  # stated: cursor paging, items field `projects`
COMMENTS = "/v1/projects/{projectId}/comments"  # stated; another workspace's id answers 404
CAPABILITIES = "/v1/capabilities"  # free, never billed
SUBSCRIPTIONS = "/v1/webhook-subscriptions"

#: Real seconds between the two readings of ``x-ratelimit-reset``: a window that moves with
#: real time counts down at least 2 whole seconds over it; a manual clock's stays put.
GAP_SECONDS = 2.5
#: The rate limit is stated per minute ("100 requests per minute per authenticated caller").
WINDOW_SECONDS = 60.0
#: The stated limit (100 requests a minute), for a deployment that announces none.
WINDOW_REQUESTS_STATED = 100
#: Requests of a whole run (the checks a run selects by default, ``--profile contract``, seed
#: 1), read-only and with ``--allow-spend``, measured against the bundled mock reached with
#: ``--base-url`` with all three keys (2026-11-27). :func:`planned_requests` shares them out.
FULL_RUN_REQUESTS = {False: 926, True: 1768}


@dataclass
class Preflight:
    """What the preflight found: short lines, the setup problem if any, what it spent."""

    findings: list[str] = field(default_factory=list)
    problem: str | None = None  # one line saying what to change (exit status 2)
    requests: int = 0  # sent to the target; they count in the run's total
    planned_requests: int | None = None
    rate_limit: int | None = None  # x-ratelimit-limit, requests a window
    seconds_needed: float | None = None  # the planned requests at that rate (waits only)

    @property
    def ok(self) -> bool:
        return self.problem is None

    def say(self, line: str) -> None:
        self.findings.append(line)


# -- the plan -------------------------------------------------------------------------------------


def planned_requests(config: RunConfig, checks: list[Check]) -> int:
    """The requests the run of ``checks`` is expected to send, at most ``--max-requests``.

    An estimate, not a bound: :data:`FULL_RUN_REQUESTS` shared out over the checks a run
    selects by default, each weighing as an average check or, if more, its share of their
    ``cost`` (the schema checks send most of a run's requests)."""
    default = [c for c in select() if c.run is not None]
    total = sum(c.cost for c in default) or 1.0

    def weight(selected: list[Check]) -> float:
        return sum(max(1.0, c.cost * len(default) / total) for c in selected if c.run is not None)

    share = weight(checks) / (weight(default) or 1.0)
    estimate = max(1, math.ceil(FULL_RUN_REQUESTS[config.allow_spend] * share))
    return estimate if config.max_requests is None else min(estimate, config.max_requests)


def seconds_at_rate(
    requests: int,
    limit: int,
    *,
    remaining: int | None = None,
    reset: float | None = None,
    window: float = WINDOW_SECONDS,
) -> float:
    """The least time ``requests`` take at ``limit`` a ``window`` (its waits only; latency
    adds to it): the ``remaining`` of the current window go at once, the rest a window at a
    time, the first of them after ``reset`` seconds."""
    remaining = limit if remaining is None else max(0, remaining)
    if requests <= remaining or limit < 1:
        return 0.0
    windows = math.ceil((requests - remaining) / limit)
    first = window if reset is None else max(0.0, reset)
    return first + (windows - 1) * window


def duration(seconds: float) -> str:
    """``9 min 5 s``, ``45 s``."""
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


# -- rate-limit readings -------------------------------------------------------------------------


@dataclass(frozen=True)
class RateReading:
    """The rate-limit state one answer showed."""

    status: int
    limit: int | None
    remaining: int | None
    reset: int | None  # x-ratelimit-reset, else a 429's Retry-After
    retry_after: int | None

    @classmethod
    def of(cls, exchange: Exchange) -> RateReading:
        def number(name: str) -> int | None:
            value = (exchange.header(name) or "").strip()
            return int(value) if value.isdigit() else None

        retry_after = number("retry-after")
        reset = number("x-ratelimit-reset")
        return cls(
            status=exchange.status,
            limit=number("x-ratelimit-limit"),
            remaining=0 if exchange.status == 429 else number("x-ratelimit-remaining"),
            reset=reset if reset is not None else retry_after,
            retry_after=retry_after,
        )


def window_moves(first: RateReading, second: RateReading, slept: float) -> bool | None:
    """Whether the window moved with real time between two readings ``slept`` seconds apart:
    True (its reset counted down, or a new window began), False (its reset stayed where it
    was, though a real window's would have moved, and nothing came back: the second request
    was counted, or both were refused), None: no telling (a bucket that refills, say)."""
    if first.reset is None or second.reset is None:
        return None
    refilled = (first.remaining or 0) < (second.remaining or 0)  # a new window, or a refill
    if refilled or second.reset < first.reset:
        return True
    if second.reset != first.reset or first.reset <= slept + 1:
        return None
    both_refused = first.status == second.status == 429
    counted_down = (second.remaining or 0) < (first.remaining or 0)  # our request took one
    return False if both_refused or counted_down else None


def shares_bucket(before: int, mine: int, after: int) -> bool:
    """Whether a key's request counted in the bucket of ``--api-key``: its ``remaining``
    (``mine``) is one below the bucket's reading ``before`` it, and the next reading of
    ``--api-key`` (``after``) is lower than that reading's own request explains."""
    return mine == before - 1 and after <= before - 2


# -- the preflight --------------------------------------------------------------------------------


def preflight(config: RunConfig, where: Where, checks: list[Check]) -> Preflight:
    """Check the setup of a run of ``checks`` with ``config`` against ``where``, before any
    judgement. Never raises for what it finds: a setup problem is ``Preflight.problem``."""
    found = Preflight(planned_requests=planned_requests(config, checks))
    target = _target(config, where, config.max_requests)
    try:
        if config.mock:  # it answered before its start returned
            found.say(
                f"the bundled mock, started for this run at {where.base_url}: the suite moves "
                "its clock, and it accepts private callbacks"
            )
            return found
        _reachable(target, found)
        if config.mock_url:
            _mock(config, where, target, found)
        else:
            _deployment(config, checks, target, found)
        if config.receiver_url and any(c.receives and c.run is not None for c in checks):
            _receiver_reached(config, found)
        elif config.receiver_url:
            found.say("--receiver-url: not probed (no check of this run receives deliveries)")
    except SetupProblem as exc:
        found.problem = one_line(str(exc))
    except BudgetExhausted:
        found.say(f"not all checked: --max-requests {config.max_requests} leaves it no room")
    finally:
        found.requests += target.count
        target.close()
    return found


def one_line(text: str) -> str:
    return " ".join(text.split())


def _target(config: RunConfig, where: Where, max_requests: int | None) -> Target:
    """A target for the preflight's own requests: no control plane, no retries but those it
    makes itself; ``max_requests`` leaves the run at least one request."""
    target = Target(
        where.base_url,
        where.api_key,
        second_key=where.second_key,
        restricted_key=where.restricted_key,
        same_person_key=where.same_person_key,
        max_requests=None if max_requests is None else max(0, max_requests - 1),
        timeout=config.timeout,
        wait_cap=config.wait_cap,
        sleep=config.sleep,
    )
    if config.on_event is not None:
        emit = config.on_event
        target.on_wait = lambda wait: emit("wait", wait)
    return target


def _get(target: Target, path: str, operation_id: str, auth: str = "primary") -> Exchange:
    return target.request(
        "GET", path, operation_id=operation_id, auth=auth, retry=False, pace=False
    )


def _reachable(target: Target, found: Preflight) -> None:
    url = target.base_url + OPENAPI
    try:
        exchange = _get(target, OPENAPI, "getOpenApi", auth="none")
    except TargetUnreachable as exc:
        text = str(exc)
        tls = "CERTIFICATE" in text.upper() or "SSL" in text.upper()
        change = (
            "its TLS certificate is not trusted here: serve one of a public CA, or name its CA "
            "with SSL_CERT_FILE"
            if tls
            else "check the URL, and that the deployment is up and reachable from here"
        )
        raise SetupProblem(f"the target is unreachable: {text}: {change}") from exc
    scheme = urlsplit(url).scheme
    secure = ", its TLS certificate trusted" if scheme == "https" else " (plain http)"
    answered = exchange.status if 200 <= exchange.status < 300 else exchange.answered
    found.say(f"reachable: GET {OPENAPI} answered {answered}{secure}")
    if exchange.status == 404 and exchange.code is None:
        probe = _get(target, PROJECTS, "listProjects")
        if probe.status == 404 and probe.code is None:
            raise SetupProblem(
                f"nothing at {target.base_url} answers the interface's paths (GET {OPENAPI} "
                f"and GET {PROJECTS} answered 404 without an error body): give the address "
                "every /v1 path starts from"
            )


# -- keys and the rate limit -------------------------------------------------------------------


@dataclass
class _Key:
    """One key's answer to the list of projects."""

    auth: str
    exchange: Exchange
    reading: RateReading

    @property
    def records(self) -> list[dict[str, Any]]:
        body = self.exchange.json()
        items = body.get("projects") if isinstance(body, dict) else None
        if not isinstance(items, list):
            return []
        return [r for r in items if isinstance(r, dict) and isinstance(r.get("id"), str)]


def _key(target: Target, auth: str, refused: str) -> _Key:
    """List the projects with the ``auth`` key; a setup problem (``refused``) on 401."""
    exchange = _get(target, PROJECTS, "listProjects", auth=auth)
    if exchange.status == 401:
        raise SetupProblem(f"{refused} (GET {PROJECTS} answered {exchange.answered})")
    key = _Key(auth, exchange, RateReading.of(exchange))
    return key


def _says(key: _Key) -> str:
    exchange = key.exchange
    if 200 <= exchange.status < 300:
        return f"authenticates (GET {PROJECTS}: {len(key.records)} projects listed)"
    if exchange.status == 429:
        return f"authenticates (GET {PROJECTS} answered 429: its rate limit is reached)"
    return f"authenticates: not verified (GET {PROJECTS} answered {exchange.answered})"


def _deployment(config: RunConfig, checks: list[Check], target: Target, found: Preflight) -> None:
    """The keys, the rate limit and the plan against a deployment (no control plane)."""
    from conformance.api import RATE_LIMIT_PROBES, SAME_PERSON_PROBES  # they wait a window

    started = time.monotonic()
    primary = _key(target, "primary", "--api-key is refused: give a valid key of the workspace")
    found.say(f"--api-key {_says(primary)}")
    others = _other_keys(target, primary, found)
    first = primary.reading
    _rate_limit(first, found)
    planned = found.planned_requests or 0
    # The probes the run can afford: each spends a window (the rest are skipped, budget used up).
    window = window_requests(first.limit or WINDOW_REQUESTS_STATED)
    affords = config.max_requests is None or config.max_requests >= window
    probes = affords and any(
        c.name in RATE_LIMIT_PROBES and (target.same_person_key or c.name not in SAME_PERSON_PROBES)
        for c in checks
        if c.run is not None
    )
    needs_window = (
        probes or first.status == 429 or (first.remaining is not None and planned > first.remaining)
    )
    last = first
    if needs_window:
        elapsed = time.monotonic() - started
        config.sleep(max(0.0, GAP_SECONDS - elapsed))
        why = (
            "the rate-limit probe waits for the next window"
            if probes
            else f"the planned {planned} requests need more than the {first.remaining} left"
        )
        last = _window_test(config, target, first, max(GAP_SECONDS, elapsed), why, found)
    elif others:
        last = RateReading.of(_get(target, CAPABILITIES, "getCapabilities"))
    if others:
        _same_person(first, others, last, found)
    _plan(config, last, found, untested=not needs_window)


#: What to give instead, for a key that is not of the workspace of --api-key.
INSTEAD = {
    "restricted": "a key of a lower role in the workspace of --api-key",
    "same-person": "another key of the person who holds --api-key",
}


def _other_keys(target: Target, primary: _Key, found: Preflight) -> list[_Key]:
    """``--same-person-key``, ``--restricted-key``, then ``--second-key``: each authenticates,
    and is of the workspace it should be."""
    keys = []
    for auth, given in (
        ("same-person", target.same_person_key),
        ("restricted", target.restricted_key),
    ):
        if not given:
            continue
        option = KEY_OPTIONS[auth]
        key = _key(target, auth, f"{option} is refused: give a valid key: {INSTEAD[auth]}")
        found.say(f"{option} {_says(key)}; {_same_workspace(target, primary, key)}")
        keys.append(key)
    if target.second_key:
        refused = "--second-key is refused: give a valid key of another workspace"
        second = _key(target, "second", refused)
        found.say(f"--second-key {_says(second)}; {_other_workspace(primary, second)}")
        keys.append(second)
    return keys


def _shared(one: _Key, other: _Key) -> dict[str, Any] | None:
    """A record both keys list alike (the same id and the same fields), if any."""
    return next((r for r in other.records if r in one.records), None)


def _other_workspace(primary: _Key, second: _Key) -> str:
    if (record := _shared(primary, second)) is not None:
        raise SetupProblem(
            f"--second-key is a key of the --api-key workspace (both list project "
            f"{record['id']} alike): give a key of another workspace"
        )
    if not primary.records and not second.records:
        return "another workspace: not verified (neither lists a project)"
    return f"another workspace: it lists none of the {len(primary.records)} projects of --api-key"


def _same_workspace(target: Target, primary: _Key, other: _Key) -> str:
    """Whether ``other`` (``--restricted-key``, ``--same-person-key``) is a key of the
    workspace of ``--api-key``; a setup problem when it is not."""
    option = KEY_OPTIONS[other.auth]
    if (record := _shared(primary, other)) is not None:
        return f"the workspace of --api-key (both list project {record['id']})"
    # None listed alike: ask one key for a project only the other listed (the ids of another
    # workspace answer 404).
    if primary.records:
        record, asking, holder = primary.records[0], other.auth, "--api-key"
    elif other.records:
        record, asking, holder = other.records[0], "primary", option
    else:
        return "the workspace of --api-key: not verified (neither lists a project)"
    path = COMMENTS.replace("{projectId}", quote(record["id"], safe=""))
    exchange = _get(target, path, "listProjectComments", auth=asking)
    if exchange.status == 404:
        raise SetupProblem(
            f"{option} is a key of another workspace than --api-key (project "
            f"{record['id']}, listed by {holder}, answers 404 to the other key): give "
            f"{INSTEAD[other.auth]}"
        )
    if 200 <= exchange.status < 300:
        return f"the workspace of --api-key (both read project {record['id']})"
    return f"the workspace of --api-key: not verified ({path} answered {exchange.answered})"


def _same_person(
    first: RateReading, others: list[_Key], last: RateReading, found: Preflight
) -> None:
    """Which keys count in the rate-limit bucket of --api-key: the same person's."""
    if first.remaining is None or last.remaining is None or 429 in (first.status, last.status):
        found.say("whether the keys act as other persons (their rate-limit buckets): not verified")
        return
    before = first.remaining
    for key in others:  # in the order they were sent, between the two readings of --api-key
        mine = key.reading.remaining
        if key.reading.status == 429 or mine is None:
            continue
        if not shares_bucket(before, mine, last.remaining):
            if key.auth == "same-person":  # judged by rate-limit-shared-bucket, not refused here
                found.say(
                    "--same-person-key does not seem to count in the rate-limit bucket of "
                    f"--api-key (x-ratelimit-remaining {mine} after {before}): if it is another "
                    "person's key, rate-limit-shared-bucket will report a broken rule"
                )
            continue
        before = mine
        if key.auth == "restricted":
            raise SetupProblem(
                "--restricted-key acts as the same person as --api-key (its requests count in "
                "the rate-limit bucket of --api-key, which is a person's): give a key made by "
                "another member of the workspace, of a lower role than owner or admin"
            )
        found.say(
            f"{KEY_OPTIONS[key.auth]} acts as the same person as --api-key (its requests count "
            "in the same rate-limit bucket)"
        )


def _rate_limit(reading: RateReading, found: Preflight) -> None:
    found.rate_limit = reading.limit
    if reading.limit is None:
        found.say("rate limit: not announced (no x-ratelimit-limit): the plan's time is unknown")
        return
    found.say(
        f"rate limit: {reading.limit} requests a minute (x-ratelimit-limit); "
        f"{reading.remaining} left, the window resets in {reading.reset} s"
    )


def _window_test(
    config: RunConfig,
    target: Target,
    first: RateReading,
    slept: float,
    why: str,
    found: Preflight,
) -> RateReading:
    """Read the window again ``slept`` s after ``first``: a setup problem when it stood still
    and the plan needs it to move, or when a 429 outlasts its own Retry-After."""
    second = RateReading.of(_get(target, CAPABILITIES, "getCapabilities"))
    moves = window_moves(first, second, slept)
    if moves is False:
        raise SetupProblem(
            f"the rate window does not move with real time (x-ratelimit-reset stayed at "
            f"{first.reset} s over {slept:g} s), and {why}: reach a mock on --clock manual "
            "with --mock-url (its control plane moves the clock), or start it on the real clock"
        )
    found.say(
        "the rate window moves with real time"
        if moves
        else "whether the rate window moves with real time: not told by its headers"
    )
    if second.status != 429:
        return second
    wait = second.retry_after if second.retry_after is not None else 1
    target.wait(wait, "Retry-After on 429 rate_limited (preflight)")
    third = RateReading.of(_get(target, CAPABILITIES, "getCapabilities"))
    if third.status == 429:
        raise SetupProblem(
            f"429s outlast Retry-After: after the {min(wait, config.wait_cap):g} s its "
            "Retry-After asked, --api-key is still answered 429: another client may be using "
            "this caller's rate limit: give the suite a caller of its own"
        )
    return third


def _plan(config: RunConfig, reading: RateReading, found: Preflight, *, untested: bool) -> None:
    planned = found.planned_requests or 0
    bound = "" if config.max_requests is None else f", at most {config.max_requests}"
    plan = f"plan: about {planned} requests{bound}"
    if reading.limit is None:
        found.say(plan)
        return
    found.seconds_needed = seconds_at_rate(
        planned, reading.limit, remaining=reading.remaining, reset=reading.reset
    )
    if found.seconds_needed:
        found.say(f"{plan}: at {reading.limit} a minute, {duration(found.seconds_needed)} at least")
        return
    found.say(f"{plan}: they fit in this rate window")
    if untested:
        found.say("whether the rate window moves with real time: not tested (not needed)")


# -- the bundled mock at --mock-url ---------------------------------------------------------------


def _mock(config: RunConfig, where: Where, target: Target, found: Preflight) -> None:
    if config.sandbox:
        try:
            with sandboxed(where.base_url, config.seed or 0, where.control_token) as box:
                inside = _target(config, box, target.remaining)
                try:
                    _callbacks_accepted(config, inside, found, delete=False)
                finally:
                    found.requests += inside.count
                    inside.close()
        except SandboxError as exc:
            raise SetupProblem(str(exc)) from exc
        return
    _manual_clock(target, where, found)
    own = bool(config.api_key)
    refused = (
        "--api-key is refused by the mock: give a key of its fixtures"
        if own
        else f"the mock at {target.base_url} does not know the bundled fixtures' keys: start "
        "it with the default fixtures, or leave out --no-sandbox (a sandbox has keys of its own)"
    )
    if not own:
        found.say("keys: the bundled fixtures', named below by the options they stand for")
    primary = _key(target, "primary", refused)
    found.say(f"--api-key {_says(primary)}")
    _other_keys(target, primary, found)
    _callbacks_accepted(config, target, found, delete=True)


def _manual_clock(target: Target, where: Where, found: Preflight) -> None:
    """With --no-sandbox the run moves the mock's own clock: it must be manual."""
    assert target.control is None
    url = target.base_url + "/_mock/clock"
    try:
        response = target.client.get(url, headers=control_headers(where.control_token))
    except httpx.TransportError as exc:
        raise SetupProblem(f"the mock's control plane did not answer (GET {url}: {exc})") from exc
    mode = response.json().get("mode") if response.status_code == 200 else None
    if mode is None:
        raise SetupProblem(
            f"the mock at {target.base_url} has no control plane the suite can use (GET "
            f"/_mock/clock answered {response.status_code}): start it with its control plane "
            "(its token in --mock-control-token or $MOCKSERVER_CONTROL_TOKEN when it has one), "
            "or reach it with --base-url"
        )
    if mode != "manual":
        raise SetupProblem(
            f"the mock at {target.base_url} runs on the {mode} clock: --no-sandbox needs it "
            "started with --clock manual; or leave out --no-sandbox (a sandbox has a manual "
            "clock of its own)"
        )
    found.say("the mock's clock is manual (its control plane says so): the suite moves it")


def _callbacks_accepted(
    config: RunConfig, target: Target, found: Preflight, *, delete: bool
) -> None:
    """Whether the mock accepts the receiver's URL for a webhook subscription."""
    url = Receiver(config.receiver_listen, config.receiver_url).url + "/conformance/preflight"
    document = config.document if config.document is not None else bundled_document()
    events = document["components"]["schemas"]["SubscriptionEventName"]["enum"]
    exchange = target.request(
        "POST",
        SUBSCRIPTIONS,
        operation_id="createWebhookSubscription",
        json_body={"url": url, "events": events[:1], "secret": secrets.token_urlsafe(36)},
        headers={"Idempotency-Key": f"conformance-preflight-{uuid.uuid4().hex}"},
        retry=False,
        pace=False,
    )
    body = exchange.json() if isinstance(exchange.json(), dict) else {}
    details = body.get("details") if isinstance(body.get("details"), dict) else {}
    if exchange.status == 400 and details.get("field") == "url":
        raise SetupProblem(
            f"the mock at {target.base_url} refuses the receiver's URL {url} ({exchange.answered}:"
            f" {body.get('error', '')}): restart it with --allow-private-callbacks"
        )
    if not 200 <= exchange.status < 300:
        found.say(
            f"whether the mock accepts the receiver's URL: not verified ({exchange.answered})"
        )
        return
    found.say(f"the mock accepts the receiver's URL ({url}) for webhook subscriptions")
    subscription = body.get("subscription")
    if delete and isinstance(subscription, dict) and isinstance(subscription.get("id"), str):
        path = f"{SUBSCRIPTIONS}/{quote(subscription['id'], safe='')}"
        target.request(
            "DELETE", path, operation_id="deleteWebhookSubscription", retry=False, pace=False
        )


# -- the receiver ---------------------------------------------------------------------------------


PROBE_ARRIVAL_SECONDS = 2.0  # the probe is answered once the receiver has it; this is slack


def _receiver_reached(config: RunConfig, found: Preflight) -> None:
    """A probe POSTed to --receiver-url arrives at the suite's receiver."""
    listen = config.receiver_listen
    try:
        receiver = Receiver(listen, config.receiver_url).start()
    except (OSError, RuntimeError) as exc:
        raise SetupProblem(
            f"the suite's webhook receiver cannot listen on {listen} ({exc}): give a free "
            "--receiver-listen HOST:PORT"
        ) from exc
    path = f"/conformance/preflight-{secrets.token_hex(6)}"
    url = receiver.route(path)
    what = ""
    try:
        try:
            response = httpx.post(
                url,
                json={"probe": "conformance preflight"},
                timeout=config.timeout,
                verify=tls_context(),
            )
            what = f"it answered {response.status_code}"
        except httpx.HTTPError as exc:
            what = f"{type(exc).__name__}: {exc}"
        arrived = receiver.wait_for(
            lambda ds: any(d.path == path for d in ds), PROBE_ARRIVAL_SECONDS
        )
    finally:
        receiver.stop()
    if not arrived:
        fixed = "" if receiver.port and not listen.endswith(":0") else ", with a fixed port"
        raise SetupProblem(
            f"--receiver-url does not reach the suite's receiver: a probe POSTed to {url} never "
            f"arrived on {listen} ({what}): forward that URL to --receiver-listen{fixed}"
        )
    found.say(f"--receiver-url reaches the suite's receiver (a probe POSTed to {url} arrived)")
