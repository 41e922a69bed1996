"""Small stated rules of the interface document that no other check judges.

Each check states one sentence of the document and judges it as directly as the public interface
allows: a balance read before and after, ``x-ratelimit-remaining`` read before and after, a
refusal and its (absent) charge, a key revoked through the bundled mock's control plane, a
subscription that must stay silent for some jobs and speak for others, a job forced to
``qa_failed``. Operations are named by ``operationId`` (stable in v1); limits, codes and quotes
are read from the contract.
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
import time
from collections.abc import Callable
from typing import Any

from conformance.checks import check, prepares
from conformance.checks.idempotency import first_success, resource_id
from conformance.checks.jobs import MOCK_HOURS, until_terminal
from conformance.checks.jobs import statuses as job_statuses
from conformance.checks.steps import NO_BALANCE, balance
from conformance.checks.webhooks import _callback_operations, _receiver_needed, _subscribe, drive
from conformance.context import Context
from conformance.contract import Operation
from conformance.mockprocess import FixtureKey, fixture_keys
from conformance.polling import WEBHOOK_WAIT, beyond
from conformance.receiver import Delivery
from conformance.refusals import refusal, refused_since
from conformance.skips import Skip
from conformance.target import Exchange

CAPABILITIES = "getCapabilities"
USAGE = "getUsage"
FILM = "createFilmOutline"
GET_JOB = "getJob"
JOB_EVENTS = "listJobEvents"
RENDER = "renderVideo"  # "not renders from POST /v1/video/render"
MODELS = ("createModelFromText", "createModelFromImage")  # "nor 3D jobs"
FOOTAGE_EDIT = "editVideo"  # "cover footage edits"
READS = 3  # free reads (or exempt calls) a probe makes between its two measurements

NEEDS_RESTRICTED = "needs a key that cannot spend (--restricted-key)"

Q_CAPABILITIES = "GET /v1/capabilities: Free; never billed."
Q_OPENAPI = (
    "GET /v1/openapi.json: Public, unauthenticated, not rate limited. Rate-limit exemption: "
    "none counted: GET /v1/openapi.json"
)
Q_UNOWNED = (
    "projectId: the service to file the work under, created with POST /v1/projects; a the "
    "service the workspace does not own answers `not_found`, the work is never filed elsewhere"
)
Q_USAGE = "Reading usage (`GET /v1/usage`) never needs a key that can spend."
Q_REVOKE = "Revoking a key takes effect within 30 seconds."
Q_COVERAGE = (
    "Subscriptions: created with `POST /v1/webhook-subscriptions`; cover footage edits, media "
    "analysis and publishing for the whole workspace (not renders from `POST /v1/video/render` "
    "nor 3D jobs, which use callbacks or polling)."
)
Q_QA_FAILED = (
    "Media must never be published from a `qa_failed` job. artifacts: only `done` carries "
    "artifacts (`videoUrl`, `downloadUrls` object); otherwise null"
)


def _quote(ctx: Context, ref: str, stated: str) -> str:
    """The interface document's words, with the contract's where it has them."""
    contract = ctx.held.quote(ref)
    return f"{stated} (contract: {contract})" if contract and contract not in stated else stated


def _op(ctx: Context, operation_id: str) -> Operation:
    op = ctx.held.operations.get(operation_id)
    if op is None or not ctx.contract.applicable(op):
        raise Skip(f"the contract has no {operation_id}")
    return op


def _remaining(exchange: Exchange) -> int | None:
    value = exchange.header("x-ratelimit-remaining")
    return int(value) if value is not None and value.isdigit() else None


def _reset(exchange: Exchange) -> int | None:
    value = exchange.header("x-ratelimit-reset")
    return int(value) if value is not None and value.isdigit() else None


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _mock_keys(ctx: Context) -> list[FixtureKey]:
    """The bundled mock's keys of the primary key's workspace (none against a deployment): the
    keys of the run's sandbox, or else the default fixtures' keys."""
    mock, control = ctx.session.mock, ctx.control
    if mock is None or control is None:
        return []
    sandbox = getattr(ctx.target, "sandbox", None)
    if sandbox:
        response = control.client.get(
            f"{control.base}/sandboxes/{sandbox}", headers=control.headers, timeout=60
        )
        if response.status_code != 200:
            return []
        keys = [
            FixtureKey(k["key"], k["workspace"], k["member"], k["role"])
            for k in response.json().get("sandbox", {}).get("keys", [])
        ]
    else:
        keys = fixture_keys()
    return [k for k in keys if k.workspace == mock.workspace]


# -- limits ------------------------------------------------------------------------------------


@check(
    "limits-capabilities-free",
    "limits",
    "GET /v1/capabilities is free and never billed: the balance it answers does not drop over "
    "several reads",
)
def capabilities_free(ctx: Context) -> None:
    _op(ctx, CAPABILITIES)
    ctx.target.require(READS + 1)
    quote = _quote(ctx, "#/paths/~1v1~1capabilities/get", Q_CAPABILITIES)
    seen = [balance(ctx)]  # back to back: nothing else of this run is sent in between
    if seen[0] is None:
        raise Skip(NO_BALANCE)
    for _ in range(READS):
        seen.append(balance(ctx))
    read = [b for b in seen if b is not None]
    if len(read) < len(seen):
        raise Skip("GET /v1/capabilities stopped answering a balance")
    ctx.expect(
        all(a <= b for a, b in itertools.pairwise(read)),
        "never-billed",
        f"the balance GET /v1/capabilities answers went {' → '.join(map(str, seen))} over "
        f"{len(seen)} reads and nothing else",
        quote=quote,
        subject="GET /v1/capabilities",
    )
    mock = ctx.session.mock
    if mock is not None and ctx.control is not None:
        held = ctx.control.credits(mock.workspace)
        ctx.expect(
            held == read[0],
            "never-billed",
            f"the workspace holds {held} credits after {len(seen)} reads; the first read "
            f"answered {read[0]}",
            quote=quote,
            subject="GET /v1/capabilities",
        )


# -- auth --------------------------------------------------------------------------------------


@check(
    "auth-openapi-not-rate-limited",
    "auth",
    "calls to GET /v1/openapi.json (with and without a key) are not counted: "
    "x-ratelimit-remaining drops only by the authenticated calls themselves",
)
def openapi_not_rate_limited(ctx: Context) -> None:
    exempt = [
        ctx.held.operations[o]
        for o in ctx.contract.full.rate_limit.get("exempt", [])
        if o in ctx.held.operations
    ]
    if not exempt:
        raise Skip("the contract exempts no operation from the rate limit")
    read = _op(ctx, CAPABILITIES)
    quote = _quote(ctx, "#/paths/~1v1~1openapi.json/get", Q_OPENAPI)
    for _attempt in range(2):
        ctx.target.require(2 + 2 * READS * len(exempt))
        first = ctx.call(read)
        before, reset = _remaining(first), _reset(first)
        if before is None or reset is None:
            raise Skip("authenticated responses carry no x-ratelimit-remaining/-reset")
        if before < 2:  # the window is nearly spent: start in a fresh one
            ctx.target.wait(reset, "a fresh rate-limit window for the exemption probe")
            continue
        started = time.monotonic()
        for op in exempt:
            for auth in ("none", "primary"):
                for _ in range(READS):
                    ctx.call(op, auth=auth)
        last = ctx.call(read)
        after = _remaining(last)
        elapsed = time.monotonic() - started
        reset_passed = ctx.control is None and elapsed >= reset
        if after is None or after >= before or reset_passed:
            continue  # the window reset during the probe: measure again
        ctx.expect(
            after == before - 1,
            "not-counted",
            f"x-ratelimit-remaining went {before} → {after} across one authenticated call and "
            f"{2 * READS * len(exempt)} calls to {', '.join(o.label for o in exempt)} (half "
            "with the key, half without): only the authenticated call may count",
            exchange=last,
            quote=quote,
        )
        return
    raise Skip("the rate-limit window reset during every measurement")


@check(
    "auth-unowned-project",
    "auth",
    "POST /v1/text/film with a projectId the workspace does not own answers 404 not_found and "
    "charges nothing",
    spends=True,
)
def unowned_project(ctx: Context) -> None:
    op = _op(ctx, FILM)
    if reason := ctx.why_not_send(op):
        raise Skip(reason)
    foreign, whose = _unowned_project_id(ctx)
    genre = _accepted_genre(ctx)
    before = balance(ctx)
    other_before = balance(ctx, auth="second") if whose == "another workspace's" else None

    def unowned(body: dict[str, Any]) -> dict[str, Any]:
        return body | {"projectId": foreign} | ({"genre": genre} if genre else {})

    prepared = ctx.sample(op, salt="unowned", idempotency_key=ctx.new_key(), body_update=unowned)
    if prepared is None:
        raise Skip("no request could be generated")
    exchange = ctx.send(prepared, op)
    if ctx.unavailable(exchange):
        return
    if exchange.status == 400 and not genre:
        raise Skip("the request was refused (400) before its project was looked at")
    codes = ctx.held.error_codes.get(404, ())
    quote = _quote(ctx, "#/components/schemas/FilmOutlineRequest/properties/projectId", Q_UNOWNED)
    ctx.expect(
        exchange.status == 404 and exchange.code in codes,
        "not-found",
        f"{op.label} with {whose} project id {foreign!r} answered {exchange.answered}"
        f" (expected 404 {' or '.join(codes)})",
        exchange=exchange,
        quote=quote,
    )
    after = balance(ctx)
    if before is None or after is None:
        ctx.skip(NO_BALANCE)
    else:
        ctx.expect(
            after == before,
            "not-charged",
            f"the balance went {before} → {after} on a call filed under {whose} project",
            exchange=exchange,
            quote=quote,
        )
    if other_before is not None:
        other_after = balance(ctx, auth="second")
        ctx.expect(
            other_after == other_before,
            "not-filed-elsewhere",
            f"the other workspace's balance went {other_before} → {other_after}: the work was "
            "filed (and billed) under its project",
            exchange=exchange,
            quote=quote,
        )


def _unowned_project_id(ctx: Context) -> tuple[str, str]:
    """A project of the workspace of ``--second-key``, or else an id that does not exist."""
    if ctx.target.second_key:
        own = set(ctx.session.ids.ids_for("projectId"))
        theirs = [i for i in ctx.session.ids.ids_for("projectId", "second") if i not in own]
        if theirs:
            return theirs[0], "another workspace's"
    return f"prj_conformance_absent_{secrets.token_hex(6)}", "a nonexistent"


def _accepted_genre(ctx: Context) -> str | None:
    """A genre from the accepted set the engine publishes (``options.genres``), if it does."""
    body = ctx.call(_op(ctx, CAPABILITIES)).json()
    for entry in body.get("capabilities", []) if isinstance(body, dict) else []:
        genres = entry.get("options", {}).get("genres") if isinstance(entry, dict) else None
        if isinstance(genres, list) and genres and isinstance(genres[0], str):
            return genres[0]
    return None


def _non_spending_key(ctx: Context) -> tuple[str, dict[str, str], str]:
    """How to send a request with a key that cannot spend: (auth, headers, what it is): a
    read-only key of the bundled mock, or else the ``--restricted-key``."""
    scheme = ctx.contract.full.document["components"]["securitySchemes"]["apiKey"]
    roles = scheme.get("x-roles", {})  # inferred names: used only to pick a key of the mock
    read_only = {
        role
        for role, text in roles.items()
        if not role.startswith("x-") and role != "description" and "read only" in str(text).lower()
    }
    for key in _mock_keys(ctx):
        if key.role in read_only:
            return "custom", _bearer(key.key), f"the mock's key of {key.member} ({key.role})"
    if ctx.session.mock is None and getattr(ctx.target, "restricted_key", None):
        return "restricted", {}, "the --restricted-key"
    raise Skip(NEEDS_RESTRICTED)


@check(
    "auth-usage-without-spend",
    "auth",
    "GET /v1/usage answers 200 to a key that cannot spend",
)
def usage_without_spend(ctx: Context) -> None:
    op = _op(ctx, USAGE)
    auth, headers, who = _non_spending_key(ctx)
    exchange = ctx.call(op, auth=auth, headers=headers)
    ctx.expect(
        exchange.status == 200,
        "usage-readable",
        f"{op.label} with {who} answered {exchange.status} {exchange.code or ''}".rstrip(),
        exchange=exchange,
        quote=_quote(ctx, "#/paths/~1v1~1usage/get", Q_USAGE),
    )


def _revocation_delay(ctx: Context) -> int | None:
    text = ctx.held.quote("#/components/securitySchemes/apiKey")
    match = re.search(r"[Rr]evoking a key takes effect within (\d+) seconds", text)
    return int(match.group(1)) if match else None


@check(
    "auth-key-revocation",
    "auth",
    "a key revoked (through the mock's control plane) answers 401 unauthorized once the stated "
    "delay (30 s) has passed",
)
def key_revocation(ctx: Context) -> None:
    control = ctx.require_control()
    delay = _revocation_delay(ctx)
    if delay is None:
        raise Skip("the contract states no revocation delay")
    used = (ctx.target.api_key, ctx.target.second_key, getattr(ctx.target, "restricted_key", None))
    spare = [k for k in _mock_keys(ctx) if k.key not in used]
    if not spare:
        raise Skip("the mock's fixtures have no spare key to revoke")
    key = spare[0]
    op = _op(ctx, CAPABILITIES)
    quote = _quote(ctx, "#/components/securitySchemes/apiKey", Q_REVOKE)
    try:
        works = ctx.call(op, auth="custom", headers=_bearer(key.key))
        if works.status != 200:
            raise Skip(f"the fixture key of {key.member} does not work before its revocation")
        revoked = control.call("POST", "/keys/revoke", {"key": key.key})
        if revoked.status_code >= 400:
            raise Skip(f"the control plane did not revoke the key ({revoked.status_code})")
        ctx.target.wait(delay, "the stated key-revocation delay")
        exchange = ctx.call(op, auth="custom", headers=_bearer(key.key), retry=False)
        codes = ctx.held.error_codes.get(401, ())
        ctx.expect(
            exchange.status == 401 and exchange.code in codes,
            "revoked",
            f"{delay} s after its revocation the key of {key.member} answered "
            f"{exchange.answered} (expected 401 {' or '.join(codes)})",
            exchange=exchange,
            quote=quote,
        )
    finally:
        control.reset()
        ctx.target.forget_windows()


# -- webhooks ------------------------------------------------------------------------------------


def _start_job(
    ctx: Context, operation_id: str, update: Callable[[dict[str, Any]], dict[str, Any]] | None
) -> tuple[Operation, str] | None:
    """Start a job with ``operation_id``: (the operation, the job id), or None."""
    op = ctx.held.operations.get(operation_id)
    if op is None or ctx.why_not_send(op):
        return None

    def started(exchange: Exchange) -> bool:
        return exchange.ok and bool(resource_id(exchange.json()))

    found = first_success(ctx, [op], salt="stated", body_update=update, accept=started)
    return None if found is None else (op, str(resource_id(found[2].json())))


def _read_job(ctx: Context, job_id: str) -> tuple[Exchange, dict[str, Any] | None]:
    exchange = ctx.call(_op(ctx, GET_JOB), path_parameters={"jobId": job_id})
    body = exchange.json()
    job = body.get("job") if isinstance(body, dict) else None
    return exchange, job if isinstance(job, dict) else None


def _body(delivery: Delivery) -> dict[str, Any]:
    try:
        body = json.loads(delivery.body)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _job_of(delivery: Delivery) -> str | None:
    data = _body(delivery).get("data")
    return data.get("jobId") if isinstance(data, dict) else None


@check(
    "webhooks-subscription-coverage",
    "webhooks",
    "a subscription to every event hears a footage edit, and nothing of a render from "
    "POST /v1/video/render or of a 3D job",
    spends=True,
    creates=True,
    receives=True,
)
def subscription_coverage(ctx: Context) -> None:
    path, silent, edit = ctx.prepared
    receiver = ctx.session.receiver()
    statuses = until_terminal(ctx, list(silent))
    terminal = job_statuses(ctx.held).terminal
    if not isinstance(edit, str):  # heard by now, or within --webhook-wait, as the jobs ended
        edit_id = edit[1]

        def edit_heard(deliveries: list[Delivery]) -> bool:
            return any(d.path == path and _job_of(d) == edit_id for d in deliveries)

        drive(ctx, edit_heard, full_schedule=False)
    received = receiver.received(path)
    for job_id, op in silent.items():
        heard = [d for d in received if _job_of(d) == job_id]
        if statuses.get(job_id) not in terminal and not heard:
            what = f"the job of {op.label} did not end"
            mock = f"{what} within {MOCK_HOURS} hours of the mock's clock"
            ctx.skip(beyond(ctx, what) if ctx.control is None else mock)
            continue
        ctx.expect(
            not heard,
            "not-covered",
            f"the subscription received {len(heard)} deliveries "
            f"({', '.join(sorted({str(_body(d).get('event')) for d in heard}))}) for job "
            f"{job_id} of {op.label}",
            quote=_quote(ctx, "#/paths/~1v1~1webhook-subscriptions/post", Q_COVERAGE),
            subject=op.label,
        )
    if isinstance(edit, str):
        ctx.skip(edit)
        return
    heard = any(_job_of(d) == edit[1] for d in received)
    if not heard and ctx.control is None:
        ctx.skip(beyond(ctx, f"no delivery of footage edit {edit[1]} arrived", WEBHOOK_WAIT))
        return
    ctx.expect(
        heard,
        "covered",
        f"no delivery reached the subscription for footage edit {edit[1]}",
        quote=_quote(ctx, "#/paths/~1v1~1webhook-subscriptions/post", Q_COVERAGE),
        subject=edit[0].label,
    )


@prepares("webhooks-subscription-coverage")
def _start_jobs(
    ctx: Context,
) -> tuple[str, dict[str, Operation], tuple[Operation, str] | str]:
    """A subscription to every event, then a render and a 3D job it must not hear of and a
    footage edit it must hear of (they run while the other checks do): the receiver's path,
    {job id: its operation} of the silent jobs, and the edit (or why it could not start)."""
    _receiver_needed(ctx)
    receiver = ctx.session.receiver()
    path = f"/conformance/{secrets.token_hex(6)}/coverage"
    _subscribe(ctx, receiver.route(path), secrets.token_urlsafe(36))
    silent: dict[str, Operation] = {}  # job id -> the operation that started it
    mark = ctx.target.count
    for operation_id in (RENDER, *MODELS):
        if operation_id in MODELS and any(o.operation_id in MODELS for o in silent.values()):
            continue  # one 3D job is enough
        started = _start_job(ctx, operation_id, None)
        if started is not None:
            silent[started[1]] = started[0]
    if not silent:
        tried = [op for op in ctx.held.operations.values() if op.operation_id in (RENDER, *MODELS)]
        raise Skip(refusal("no render or 3D job could be started", refused_since(ctx, mark, tried)))
    mark = ctx.target.count
    edit = _start_job(ctx, FOOTAGE_EDIT, None)
    if edit is None:
        edits = [op for op in ctx.held.operations.values() if op.operation_id == FOOTAGE_EDIT]
        return (
            path,
            silent,
            refusal("no footage edit could be started", refused_since(ctx, mark, edits)),
        )
    return path, silent, edit


@check(
    "webhooks-qa-failed-not-published",
    "webhooks",
    "a job forced to qa_failed (through the mock's control plane) exposes no media: artifacts "
    "null in its read and its callback, no artifact.ready in its events (the contract has no "
    "operation that publishes a given job, so no publish is tried)",
    spends=True,
    creates=True,
    receives=True,
)
def qa_failed_not_published(ctx: Context) -> None:
    control = ctx.require_control()
    receiver = ctx.session.receiver()
    path = f"/conformance/{secrets.token_hex(6)}/qa-failed"
    url = receiver.route(path)
    secret = secrets.token_urlsafe(36)

    def with_callback(body: dict[str, Any]) -> dict[str, Any]:
        return body | {"callbackUrl": url, "callbackSecret": secret}

    op, job_id = _start_qa_failed(ctx, control, with_callback)
    quote = _quote(ctx, "#/paths/~1v1~1jobs~1{jobId}/get", Q_QA_FAILED)
    if until_terminal(ctx, [job_id]).get(job_id) != "qa_failed":
        raise Skip("the job did not end qa_failed")
    exchange, job = _read_job(ctx, job_id)
    ctx.expect(
        job is not None and job.get("artifacts") is None,
        "no-media",
        f"{op.label}'s job {job_id} ended qa_failed with artifacts "
        f"{(job or {}).get('artifacts')!r} (expected null)",
        exchange=exchange,
        quote=quote,
    )
    _judge_no_artifact_event(ctx, job_id, quote)
    drive(ctx, lambda ds: any(d.path == path for d in ds), full_schedule=False)
    callbacks = [_body(d) for d in receiver.received(path)]
    if not callbacks:
        ctx.skip("no callback arrived for the qa_failed job")
        return
    ctx.expect(
        all(b.get("artifacts") is None for b in callbacks),
        "no-media",
        f"the callback of qa_failed job {job_id} carries artifacts "
        f"{[b.get('artifacts') for b in callbacks]!r} (expected null)",
        quote=quote,
        subject=op.label,
    )


def _start_qa_failed(
    ctx: Context, control: Any, with_callback: Callable[[dict[str, Any]], dict[str, Any]]
) -> tuple[Operation, str]:
    """A job with a callback, its outcome decided qa_failed through the control plane: its
    operation and id (:class:`Skip` when none could be started or decided)."""
    started, mark = None, ctx.target.count
    for op in _callback_operations(ctx):
        started = _start_job(ctx, op.operation_id, with_callback)
        if started is not None:
            break
    if started is None:
        tried = refused_since(ctx, mark, _callback_operations(ctx))
        raise Skip(refusal("no job with a callback could be started", tried))
    op, job_id = started
    decided = control.call(
        "POST", f"/jobs/{job_id}/outcome", {"status": "qa_failed", "immediately": True}
    )
    if decided.status_code >= 400:
        raise Skip(f"the control plane did not decide the job's outcome ({decided.status_code})")
    return op, job_id


def _judge_no_artifact_event(ctx: Context, job_id: str, quote: str) -> None:
    """The qa_failed job's event stream (where the contract has one) says no artifact.ready."""
    events_op = ctx.held.operations.get(JOB_EVENTS)
    if events_op is None:
        return
    events = ctx.call(events_op, path_parameters={"jobId": job_id})
    names = [e.get("event") for e in (events.json() or {}).get("events", []) if isinstance(e, dict)]
    ctx.expect(
        "artifact.ready" not in names,
        "no-media",
        f"job {job_id} ended qa_failed and its event stream says artifact.ready ({names})",
        exchange=events,
        quote=quote,
    )
