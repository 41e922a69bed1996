"""Webhooks: signed deliveries to the suite's own receiver, and the URL rules for receivers.

Operations are named by ``operationId`` (stable in v1); what a delivery carries (its headers, its
body schema, ``schemaVersion``) is read from the contract's ``webhooks`` and ``callbacks``.
Against the bundled mock, time is moved with the mock's clock so that jobs finish and retries
fall due; against a real deployment the subscription and the job with a callback are started
in the prepare phase, so that their deliveries and retries happen while the other checks run,
then the job is polled until it ends (``--job-wait`` seconds) and the receiver is waited for
(``--webhook-wait`` seconds); what did not happen within those waits is skipped, naming the
wait, never failed (conformance/polling.py).
"""

from __future__ import annotations

import ipaddress
import json
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import jsonschema_rs

from conformance.checks import check, prepares
from conformance.checks.idempotency import resource_id
from conformance.checks.jobs import statuses, until_terminal
from conformance.context import Context
from conformance.contract import Operation
from conformance.idpool import missing, own_ids
from conformance.polling import WEBHOOK_WAIT, beyond, wait_for_deliveries
from conformance.receiver import DELIVERIES, Delivery
from conformance.refusals import payment_refused, refusal, refused_since
from conformance.signatures import check_timestamp_format, verify
from conformance.skips import CAPABILITY_UNAVAILABLE, Skip
from conformance.target import Exchange

FAMILY = "webhooks"
SUBSCRIBE = "createWebhookSubscription"
READ_SUBSCRIPTION = "getWebhookSubscription"
TRIGGERS = ("importAsset", "editVideo")  # operations whose jobs emit subscription events
MOCK_PRIVATE = "the bundled mock runs with --allow-private-callbacks (for the loopback receiver)"
PRIVATE_RECEIVER = (
    "the deployment must accept the suite's private receiver (--receiver-url {url} is {why}): "
    "loopback, private and plain-http urls not judged"
)
NEEDS_RECEIVER = "needs --receiver-url (the receiver's public HTTPS address)"
BAD_URLS = {
    "loopback": "https://127.0.0.1/conformance-hook",
    "private": "https://10.0.0.1/conformance-hook",
    "plain-http": "http://example.com/conformance-hook",
}


def _callback_operations(ctx: Context) -> list[Operation]:
    return [op for op in ctx.held.operations.values() if "callbackUrl" in _body_fields(ctx, op)]


def _secret_bounds(ctx: Context, op: Operation, field: str) -> tuple[int | None, str]:
    schema = ctx.held.resolve(ctx.held.flatten(op.body_schema)["properties"].get(field, {}))
    parts = [schema, *[p for p in schema.get("allOf", []) if isinstance(p, dict)]]
    low = next((p["minLength"] for p in parts if "minLength" in p), None)
    return low, " ".join(str(schema.get("description", "")).split())


def _probe(
    ctx: Context,
    op: Operation,
    update: Callable[[dict[str, Any]], None],
    what: str,
    quote: str,
    no_project: str | None = None,
) -> None:
    """Send ``op`` changed by ``update``; judge that it is refused with 400. ``no_project``:
    why the request names a made-up project (its 404 is then no breach)."""

    def change(body: dict[str, Any]) -> dict[str, Any]:
        update(body)
        return body

    exchange = ctx.probe(op, salt="url-policy", idempotency_key=ctx.new_key(), body_update=change)
    if exchange is None:
        return
    if reason := payment_refused(exchange):
        # The document does not order the url refusal before the charge: a 402 is no breach.
        ctx.skip(f"{reason}: {op.label} refused before its url was judged")
        return
    if no_project and exchange.status == 404:
        ctx.skip(f"{no_project}: {op.label} not judged")
        return
    codes = ctx.held.error_codes.get(400, ())
    ctx.expect(
        exchange.status == 400 and exchange.code in codes,
        "refused",
        f"{op.label} with {what} answered {exchange.answered} (expected 400)",
        exchange=exchange,
        quote=quote,
    )


def private_receiver(ctx: Context) -> str | None:
    """Why this run's deployment must accept private or plain-http urls: the suite's own
    receiver is one (the bundled mock, or a ``--receiver-url`` on plain http or resolving to a
    loopback, private or otherwise non-public address). None: it need not."""
    if ctx.session.mock is not None:
        return MOCK_PRIVATE
    url = ctx.session.receiver_url
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme != "https":
        return PRIVATE_RECEIVER.format(url=url, why=f"plain {parts.scheme}")
    host = parts.hostname or ""
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return None  # unresolved here: the deployment may resolve it to a public address
    private = sorted(a for a in found if not ipaddress.ip_address(a.split("%")[0]).is_global)
    if private:
        return PRIVATE_RECEIVER.format(url=url, why=f"{host} at {private[0]}, not public")
    return None


@check(
    "webhooks-url-policy",
    FAMILY,
    "callback and subscription urls on loopback, private or plain-HTTP addresses, and a "
    "callbackSecret under 32 characters, are refused with 400",
)
def url_policy(ctx: Context) -> None:
    callback_ops = [op for op in _callback_operations(ctx) if ctx.contract.applicable(op)]
    subscribe = ctx.held.operations.get(SUBSCRIBE)
    url_quote = ctx.held.quote("#/components/schemas/CallbackUrl")
    targets: list[tuple[Operation, str, str]] = []
    if callback_ops:
        targets.append((callback_ops[0], "callbackUrl", "callbackSecret"))
    if subscribe is not None:
        targets.append((subscribe, "url", "secret"))
    if not targets:
        raise Skip("no operation takes a url")
    private = private_receiver(ctx)
    for op, url_field, secret_field in targets:
        made_up = "projectId" in _body_fields(ctx, op) and not own_ids(ctx, "projectId")
        no_project = missing(ctx, "projectId") if made_up else None
        good_secret = secrets.token_hex(24)
        for kind, url in BAD_URLS.items():
            if private:
                ctx.skip(private)
                continue
            change = _setting({url_field: url, secret_field: good_secret})
            _probe(ctx, op, change, f"a {kind} {url_field} {url}", url_quote, no_project)
        low, description = _secret_bounds(ctx, op, secret_field)
        if low is None:
            continue  # the bound is inferred: not held under this profile
        # A public address given literally: no name to resolve, so only the secret is wrong.
        change = _setting({url_field: "https://93.184.215.14/conformance-hook",
                           secret_field: "s" * (low - 1)})  # fmt: skip
        what = f"a {secret_field} of {low - 1} characters"
        _probe(ctx, op, change, what, description, no_project)


def _body_fields(ctx: Context, op: Operation) -> dict[str, Any]:
    return ctx.held.flatten(op.body_schema)["properties"] if op.body_schema is not None else {}


def _setting(values: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def update(body: dict[str, Any]) -> None:
        body.update(values)

    return update


# -- deliveries ------------------------------------------------------------------------------


def _validator(ctx: Context, schema: dict[str, Any]) -> Any:
    root = {**schema, "components": ctx.held.document.get("components", {})}
    return jsonschema_rs.Draft202012Validator(root)


def _header_names(ctx: Context, definition: dict[str, Any]) -> list[str]:
    names = []
    for raw in definition.get("parameters", []):
        param = ctx.held.resolve(raw)
        if param.get("in") == "header" and param.get("required"):
            names.append(param["name"])
    return names


def _delivery_definition(ctx: Context, event: str | None) -> dict[str, Any] | None:
    hooks = ctx.held.document.get("webhooks", {})
    return hooks.get(event, {}).get("post") if event else None


def _callback_definition(ctx: Context) -> dict[str, Any] | None:
    for callback in ctx.held.document.get("components", {}).get("callbacks", {}).values():
        for item in callback.values():
            if "post" in item:
                return item["post"]
    return None


def _body_schema(ctx: Context, definition: dict[str, Any]) -> dict[str, Any] | None:
    content = ctx.held.resolve(definition.get("requestBody", {})).get("content", {})
    return content.get("application/json", {}).get("schema")


def _schema_version(ctx: Context, schema: dict[str, Any] | None) -> Any:
    if schema is None:
        return None
    version = ctx.held.flatten(schema)["properties"].get("schemaVersion", {})
    return ctx.held.resolve(version).get("const")


def judge_delivery(
    ctx: Context,
    delivery: Delivery,
    secret: str,
    definition: dict[str, Any] | None,
    agree: dict[str, str | None],
) -> None:
    """Every rule one delivery must keep, each a named rule of the running check."""
    where = f"delivery {delivery.header('x-service-event-id') or '?'} to {delivery.path}"
    _judge_signed(ctx, delivery, secret, where)
    try:
        body = json.loads(delivery.body)
    except ValueError:
        ctx.fail("body", f"{where}: the body is not JSON", key=("json",), delivery=_show(delivery))
        return
    if definition is None:
        definition = _delivery_definition(ctx, body.get("event") if isinstance(body, dict) else "")
    if definition is None:
        ctx.fail(
            "event-name",
            f"{where}: event {json.dumps(body.get('event'))} is not one the contract names",
            key=("event-name",),
            delivery=_show(delivery),
        )
        return
    _judge_headers(ctx, delivery, definition, body, agree, where)
    _judge_body(ctx, delivery, definition, body, where)


def _judge_signed(ctx: Context, delivery: Delivery, secret: str, where: str) -> None:
    """The signature over the timestamp and the raw body, and the timestamp's format."""
    quote = ctx.held.quote("#/components/parameters/DeliverySignature") or (
        "Signature = HMAC-SHA256, keyed by the secret, over `<timestamp>.<raw request body>`."
    )
    timestamp = delivery.header("x-service-timestamp") or ""
    signature = delivery.header("x-service-signature") or ""
    ctx.expect(
        verify(secret, timestamp, delivery.body, signature),
        "signature",
        f"{where}: X-Service-Signature {signature!r} is not sha256= and the lowercase hex "
        f"HMAC-SHA256 of `{timestamp}.<the raw body bytes>`",
        quote=quote,
        key=("signature",),
        delivery=_show(delivery),
    )
    ctx.expect(
        check_timestamp_format(timestamp),
        "timestamp-format",
        f"{where}: X-Service-Timestamp {timestamp!r} is not UTC whole seconds ending in Z",
        quote=ctx.held.quote("#/components/schemas/DeliveryTimestamp"),
        key=("timestamp",),
        delivery=_show(delivery),
    )


def _judge_headers(
    ctx: Context,
    delivery: Delivery,
    definition: dict[str, Any],
    body: Any,
    agree: dict[str, str | None],
    where: str,
) -> None:
    """The delivery headers are there and agree with the body (and ``agree``)."""
    missing = [h for h in _header_names(ctx, definition) if delivery.header(h) is None]
    ctx.expect(
        not missing,
        "headers",
        f"{where}: missing delivery headers {', '.join(missing)}",
        quote="Delivery headers: X-Service-Signature, X-Service-Timestamp, X-Service-Event, "
        "X-Service-Event-Id, and X-Service-Job-Id (callbacks) or X-Service-Subscription-Id "
        "(subscriptions).",
        key=("headers",),
        delivery=_show(delivery),
    )
    pairs = {
        "X-Service-Event": body.get("event"),
        "X-Service-Event-Id": body.get("eventId"),
        **agree,
    }
    disagree = [
        f"{h} is {delivery.header(h)!r}, expected {v!r}"
        for h, v in pairs.items()
        if v is not None and delivery.header(h) is not None and delivery.header(h) != v
    ]
    ctx.expect(
        not disagree,
        "headers-agree",
        f"{where}: " + "; ".join(disagree),
        quote=ctx.held.quote("#/components/parameters/DeliveryEventId"),
        key=("agree",),
        delivery=_show(delivery),
    )


def _judge_body(
    ctx: Context, delivery: Delivery, definition: dict[str, Any], body: Any, where: str
) -> None:
    """The body's schemaVersion and schema, where the contract states them."""
    schema = _body_schema(ctx, definition)
    version = _schema_version(ctx, schema)
    if version is not None:
        ctx.expect(
            body.get("schemaVersion") == version,
            "schema-version",
            f"{where}: schemaVersion is {json.dumps(body.get('schemaVersion'))}, "
            f"expected {json.dumps(version)}",
            key=("version",),
            delivery=_show(delivery),
        )
    if schema is not None:
        errors = [
            f"{'/'.join(map(str, e.instance_path)) or 'body'}: {e.message}"
            for e in _validator(ctx, schema).iter_errors(body)
        ]
        ctx.expect(
            not errors,
            "body-schema",
            f"{where}: " + "; ".join(errors[:5]),
            key=("schema",),
            delivery=_show(delivery),
        )


def _show(delivery: Delivery) -> dict[str, Any]:
    return {
        "path": delivery.path,
        "answered": delivery.status,
        "headers": {k: v for k, v in delivery.headers.items() if k.startswith("x-service")},
        "body": delivery.body[:2048].decode("utf-8", "replace"),
    }


def _event_id(delivery: Delivery) -> str | None:
    try:
        body = json.loads(delivery.body)
    except ValueError:
        return delivery.header("x-service-event-id")
    return body.get("eventId") if isinstance(body, dict) else None


def drive(
    ctx: Context,
    done: Callable[[list[Delivery]], bool],
    *,
    full_schedule: bool,
    why: str = DELIVERIES,
) -> bool:
    """Let deliveries happen until ``done``; through the whole retry schedule when asked.
    Against a deployment the receiver is looked at every second, for ``--webhook-wait``."""
    receiver = ctx.session.receiver()
    control = ctx.control
    if control is None:
        return wait_for_deliveries(ctx, lambda: receiver.wait_for(done, 0), why)
    schedule = ctx.contract.full.limits.get("webhookDelivery", {})
    jitter = float(schedule.get("jitterRatio", 0.2))
    steps = [3600.0] + [b * (1 + jitter) + 1 for b in schedule.get("backoffSeconds", [60])]
    reached = False
    for step in steps:
        control.advance(step)
        flushed = control.flush_deliveries()
        reached = receiver.wait_for(done, 0.2 if flushed else 3.0) or reached
        if reached and not full_schedule:
            return True
    return reached


def _subscribe(ctx: Context, url: str, secret: str) -> tuple[Exchange, str | None]:
    """A subscription of the receiver's ``url`` to every event; its id is kept out of the ids
    other checks are handed (it must outlast them)."""
    op = ctx.held.operations[SUBSCRIBE]
    events = ctx.held.resolve(ctx.held.document["components"]["schemas"]["SubscriptionEventName"])
    body = {"url": url, "events": list(events.get("enum", [])), "secret": secret}
    exchange = ctx.call(op, json_body=body, headers={"Idempotency-Key": ctx.new_key()})
    if ctx.unavailable(exchange):
        raise Skip(CAPABILITY_UNAVAILABLE)
    if not exchange.ok:
        ctx.fail(
            "subscribe",
            f"{op.label} answered {exchange.answered}",
            exchange=exchange,
        )
        raise Skip("the subscription could not be created")
    subscription_id = resource_id(exchange.json())
    ctx.session.ids.keep_out(subscription_id)  # other checks must not change or delete it
    return exchange, subscription_id


def _not_echoed(ctx: Context, exchange: Exchange, secret: str, field: str) -> None:
    ctx.expect(
        secret.encode() not in exchange.response_body,
        "secret-not-echoed",
        f"the {field} sent is echoed back in the response",
        exchange=exchange,
        quote=ctx.held.quote("#/components/schemas/CallbackSecret")
        + " (The secret is never returned.)",
    )


def _receiver_needed(ctx: Context) -> None:
    if ctx.session.mock is None and not ctx.session.receiver_url:
        raise Skip(NEEDS_RECEIVER)


def _first_started(
    ctx: Context,
    ops: list[Operation],
    salt: str,
    body_update: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Exchange | None:
    """The first success of one generated request to each of ``ops`` in turn (None: none)."""
    for op in ops:
        prepared = ctx.sample(op, salt=salt, idempotency_key=ctx.new_key(), body_update=body_update)
        if prepared is None:
            continue
        exchange = ctx.send(prepared, op)
        if ctx.unavailable(exchange):
            continue
        if exchange.ok:
            return exchange
    return None


def _trigger(ctx: Context) -> Exchange:
    ops = [ctx.held.operations.get(operation_id) for operation_id in TRIGGERS]
    tried = [op for op in ops if op is not None and not ctx.why_not_send(op)]
    mark = ctx.target.count
    started = _first_started(ctx, tried, "trigger")
    if started is None:
        answers = refused_since(ctx, mark, tried)
        raise Skip(refusal("no subscription event could be triggered", answers))
    return started


@check(
    "webhooks-subscription-deliveries",
    FAMILY,
    "subscription deliveries: signature over the raw bytes, timestamp, headers, schemaVersion, "
    "the same eventId on a retry after 503, no retry after 400, the secret never returned",
    spends=True,
    creates=True,
    receives=True,
)
def subscription_deliveries(ctx: Context) -> None:
    probe: SubscriptionProbe = ctx.prepared
    receiver = ctx.session.receiver()
    path, plan, secret, subscription_id = probe.path, probe.plan, probe.secret, probe.id

    def retried(deliveries: list[Delivery]) -> bool:
        mine = [d for d in deliveries if d.path == path]
        return bool(mine) and bool(_retries_of(mine[0], mine)) and "reject" in plan

    if not drive(ctx, retried, full_schedule=True) and "reject" not in plan:
        _trigger(ctx)  # a second event, for the 400 probe
        drive(ctx, retried, full_schedule=True)
    received = receiver.received(path)
    if not received:
        if ctx.control is None:
            raise Skip(beyond(ctx, "no subscription delivery arrived", WEBHOOK_WAIT))
        ctx.fail("delivered", "no delivery reached the receiver", quote="Subscriptions …")
        return
    if "reject" in plan and ctx.control is None:
        # A real deployment retries on its own clock: give a wrong retry of the 400 as long as
        # the 503's retry took to come.
        retries = _retries_of(received[0], received)
        gap = retries[0].received_at - received[0].received_at if retries else 1.0
        rejected = next(d for d in received if _event_id(d) == plan["reject"])
        since = time.monotonic() - rejected.received_at  # it ran while other checks did
        wait_for_deliveries(
            ctx,
            lambda: [_event_id(d) for d in receiver.received(path)].count(plan["reject"]) > 1,
            f"a wrong retry of event {plan['reject']}, answered 400",
            min(max(2 * gap, 1.0), ctx.session.webhook_wait) - since,
        )
        received = receiver.received(path)
    for delivery in received:
        judge_delivery(ctx, delivery, secret, None, {"X-Service-Subscription-Id": subscription_id})
    _judge_retry(ctx, received[0], received)
    ids = [_event_id(d) for d in received]
    if "reject" in plan:
        ctx.expect(
            ids.count(plan["reject"]) == 1,
            "no-retry-after-400",
            f"event {plan['reject']} was delivered {ids.count(plan['reject'])} times although "
            "the receiver answered 400",
            quote="Network errors, 408, 429 and 5xx are retried with increasing backoff; other "
            "4xx are a permanent rejection.",
        )
    else:
        ctx.skip("only one event was delivered (no 400 probe)")


@dataclass(frozen=True)
class SubscriptionProbe:
    """A subscription to every event, its receiver scripted to answer 503 to the first event
    and 400 to another (the subscription check's prepare): what it has planned is filled in
    as deliveries come (``retry``, ``reject``: event ids)."""

    path: str
    plan: dict[str, str]
    secret: str
    id: str | None


@prepares("webhooks-subscription-deliveries")
def _subscribe_early(ctx: Context) -> SubscriptionProbe:
    """Subscribe and trigger an event: against a deployment, the first delivery, its retry
    and the 400 probe happen while the other checks run (their jobs' events count too)."""
    _receiver_needed(ctx)
    receiver = ctx.session.receiver()
    path = f"/conformance/{secrets.token_hex(6)}/subscription"
    plan: dict[str, str] = {}

    def policy(path: str, headers: dict[str, str], body: bytes, seen: list[Delivery]) -> int:
        event_id = _event_id(Delivery(path, headers, body, 0, 0.0)) or ""
        if "retry" not in plan:
            plan["retry"] = event_id
            return 503
        if "reject" not in plan and event_id != plan["retry"]:
            plan["reject"] = event_id
            return 400
        return 200

    url = receiver.route(path, policy)
    secret = secrets.token_urlsafe(36)
    exchange, subscription_id = _subscribe(ctx, url, secret)
    _not_echoed(ctx, exchange, secret, "secret")
    read = ctx.held.operations.get(READ_SUBSCRIPTION)
    if subscription_id and read is not None:
        _not_echoed(
            ctx,
            ctx.call(read, path_parameters={"subscriptionId": subscription_id}),
            secret,
            "secret",
        )
    _trigger(ctx)
    return SubscriptionProbe(path, plan, secret, subscription_id)


def _same_event(delivery: Delivery) -> tuple[Any, ...]:
    """What identifies one logical event whatever its eventId: its name and its content."""
    try:
        body = json.loads(delivery.body)
    except ValueError:
        return (delivery.body,)
    if not isinstance(body, dict):
        return (delivery.body,)
    content = {k: v for k, v in body.items() if k not in ("eventId", "occurredAt")}
    return (delivery.header("x-service-event"), json.dumps(content, sort_keys=True))


def _retries_of(first: Delivery, deliveries: list[Delivery]) -> list[Delivery]:
    later = deliveries[deliveries.index(first) + 1 :] if first in deliveries else []
    key, event_id = _same_event(first), _event_id(first)
    return [d for d in later if _event_id(d) == event_id or _same_event(d) == key]


def _judge_retry(ctx: Context, first: Delivery, received: list[Delivery]) -> None:
    """The delivery answered 503 came again, with the same eventId."""
    quote = ctx.held.quote("#/components/schemas/AutomationEvent/properties/eventId")
    retries = _retries_of(first, received)
    original = _event_id(first)
    if retries:
        changed = [_event_id(d) for d in retries if _event_id(d) != original]
        ctx.expect(
            not changed,
            "retry-same-event-id",
            f"event {original} was answered 503 and retried as {', '.join(map(str, changed))}",
            quote=quote,
            delivery=_show(retries[0]),
        )
    elif ctx.control is None:
        what = f"event {original}, answered 503, was not delivered again"
        ctx.skip(beyond(ctx, what, WEBHOOK_WAIT))
    elif ctx.profile == "full":
        ctx.fail(
            "retry-same-event-id",
            f"event {original} was answered 503 and never delivered again",
            quote=quote,
        )
    else:
        ctx.skip("no retry within the wait (the retry schedule is not stated)")


@dataclass(frozen=True)
class CallbackJob:
    """A job started with a callback to the receiver (the callback check's prepare)."""

    path: str  # the receiver's path the callback goes to
    secret: str
    started: Exchange
    job_id: str | None


@check(
    "webhooks-callback-deliveries",
    FAMILY,
    "per-job callbacks: signature, timestamp, headers (X-Service-Job-Id), job-event.v1, the "
    "same eventId on a retry after 503, the callbackSecret never echoed",
    spends=True,
    creates=True,
    receives=True,
)
def callback_deliveries(ctx: Context) -> None:
    job: CallbackJob = ctx.prepared
    receiver = ctx.session.receiver()
    _not_echoed(ctx, job.started, job.secret, "callbackSecret")
    job_id, path = job.job_id, job.path
    if ctx.control is None and job_id is not None:  # its callback comes once the job ended
        status = until_terminal(ctx, [job_id])[job_id]
        if status not in statuses(ctx.held).terminal:
            raise Skip(beyond(ctx, f"the job with a callback ({job_id}) did not end"))

    def retried(deliveries: list[Delivery]) -> bool:
        mine = [d for d in deliveries if d.path == path]
        return bool(mine) and bool(_retries_of(mine[0], mine))

    drive(ctx, retried, full_schedule=False, why=f"job {job_id}'s callback and its retry")
    received = receiver.received(path)
    if not received:
        if ctx.control is None:
            raise Skip(beyond(ctx, f"no callback of job {job_id} arrived", WEBHOOK_WAIT))
        ctx.fail("delivered", f"no callback reached the receiver for job {job_id}")
        return
    definition = _callback_definition(ctx)
    for delivery in received:
        judge_delivery(ctx, delivery, job.secret, definition, {"X-Service-Job-Id": job_id})
        body = json.loads(delivery.body) if delivery.body else {}
        if isinstance(body, dict) and delivery.header("x-service-job-id"):
            ctx.expect(
                body.get("jobId") == delivery.header("x-service-job-id"),
                "headers-agree",
                f"X-Service-Job-Id {delivery.header('x-service-job-id')!r} but jobId "
                f"{json.dumps(body.get('jobId'))}",
                key=("job-id",),
            )
    _judge_retry(ctx, received[0], received)


@prepares("webhooks-callback-deliveries")
def _start_callback_job(ctx: Context) -> CallbackJob:
    """A job whose callback goes to the receiver (answered 503 first, to see its retry)."""
    _receiver_needed(ctx)
    receiver = ctx.session.receiver()
    ops = [op for op in _callback_operations(ctx) if ctx.why_not_send(op) is None]
    if not ops:
        raise Skip("no operation with a callback may be called")
    path = f"/conformance/{secrets.token_hex(6)}/callback"
    url = receiver.route(path, lambda p, h, b, seen: 503 if not seen else 200)
    secret = secrets.token_urlsafe(36)

    def with_callback(body: dict[str, Any]) -> dict[str, Any]:
        return body | {"callbackUrl": url, "callbackSecret": secret}

    mark = ctx.target.count
    started = _first_started(ctx, ops, "callback", with_callback)
    if started is None:
        answers = refused_since(ctx, mark, ops)
        raise Skip(refusal("no job with a callback could be started", answers))
    return CallbackJob(path, secret, started, resource_id(started.json()))
