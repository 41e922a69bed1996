"""Delivery records: what is to be delivered, to whom, and what became of each attempt.

Each delivery is a record in the world (``deliveries``): event, ``eventId``, url, the exact body
bytes (as text), the sealed secret, every attempt (when, status or error, latency, what it was
signed with), the next attempt time and the final state (``pending``, ``delivered``, ``failed``,
or ``cancelled`` when its subscription was disabled or deleted before the attempt). A record is
made here (a job's callback, a subscription's event, a replay: same ``eventId`` and body) and
attempted by the worker (worker.py); the control plane shows it through :func:`view` and
:func:`checked_view` (never its secret).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from mockserver.platform.delivery import signing
from mockserver.platform.envelope import iso_z

if TYPE_CHECKING:
    from mockserver.platform.clock import Clock
    from mockserver.platform.secretbox import SecretBox
    from mockserver.world import World

SUBSCRIPTIONS = "webhookSubscriptions"  # the collection the webhooks area keeps subscriptions in


class Wakes(Protocol):
    """The delivery worker, as a new delivery sees it: told to look for due work."""

    def wake(self) -> None: ...


class Deliverer(Protocol):
    """What the delivery records read of a mock (the runtime is one): its world, clock, the
    worker to wake for a new delivery, and the box that opens sealed secrets."""

    @property
    def world(self) -> World: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def delivery(self) -> Wakes | None: ...

    @property
    def secrets(self) -> SecretBox: ...


def deliveries(rt: Deliverer) -> dict[str, dict[str, Any]]:
    return rt.world.deliveries()


def _enqueue(
    rt: Deliverer,
    workspace_id: str,
    *,
    target: str,
    target_id: str,
    url: str,
    secret: str,
    event: str,
    event_id: str,
    body: str,
    replay_of: str | None = None,
    listener: bool = False,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": rt.world.ids.new("dlv"),
        "workspaceId": workspace_id,
        "target": target,
        "targetId": target_id,
        "url": url,
        "event": event,
        "eventId": event_id,
        "body": body,
        "secret": secret,  # sealed
        "attempts": [],
        "state": "pending",
        "nextAttemptAt": rt.clock.now().timestamp(),
        "createdAt": iso_z(rt.clock.now()),
        "replayOf": replay_of,
    }
    if listener:
        record["_listener"] = True  # may reach loopback (check_listener_address)
    deliveries(rt)[record["id"]] = record
    if rt.delivery is not None:
        rt.delivery.wake()
    return record


def enqueue_callback(
    rt: Deliverer, workspace_id: str, job: dict[str, Any], payload: dict[str, Any]
) -> None:
    _enqueue(
        rt,
        workspace_id,
        target="callback",
        target_id=job["id"],
        url=job["_callback"]["url"],
        secret=job["_callback"]["secret"],
        event=payload["event"],
        event_id=payload["eventId"],
        body=signing.encode_body(payload).decode(),
    )


def for_subscriptions(job: dict[str, Any], event: str) -> bool:
    """Whether a job's event goes to webhook subscriptions: only for the kinds that notify
    (footage edits, media analysis, publishing; ``_notify``, true or a list of event names),
    never for renders from ``POST /v1/video/render`` nor 3D jobs."""
    notify = job.get("_notify")
    return notify is True or (isinstance(notify, list) and event in notify)


def enqueue_subscriptions(
    rt: Deliverer, workspace_id: str, event: str, payload: dict[str, Any]
) -> None:
    """One delivery per enabled subscription of the workspace that wants this event."""
    body = signing.encode_body(payload).decode()
    for subscription in rt.world.records(workspace_id, SUBSCRIPTIONS):
        if subscription["enabled"] and event in subscription["events"]:
            _enqueue(
                rt,
                workspace_id,
                target="subscription",
                target_id=subscription["id"],
                url=subscription["url"],
                secret=subscription["_secret"],
                event=event,
                event_id=payload["eventId"],
                body=body,
                listener=bool(subscription.get("_listener")),
            )


def replay(rt: Deliverer, delivery_id: str) -> dict[str, Any] | None:
    """Deliver an event again: a new delivery with the same ``eventId`` and body."""
    original = deliveries(rt).get(delivery_id)
    if original is None:
        return None
    return _enqueue(
        rt,
        original["workspaceId"],
        target=original["target"],
        target_id=original["targetId"],
        url=original["url"],
        secret=original["secret"],
        event=original["event"],
        event_id=original["eventId"],
        body=original["body"],
        replay_of=original["id"],
        listener=bool(original.get("_listener")),
    )


def view(record: dict[str, Any]) -> dict[str, Any]:
    """A delivery for the control plane (never its secret)."""
    next_at = record["nextAttemptAt"]
    return {
        "id": record["id"],
        "workspaceId": record["workspaceId"],
        "target": record["target"],
        ("jobId" if record["target"] == "callback" else "subscriptionId"): record["targetId"],
        "url": record["url"],
        "event": record["event"],
        "eventId": record["eventId"],
        "state": record["state"],
        "attempts": record["attempts"],
        "nextAttemptAt": iso_z(datetime.fromtimestamp(next_at, UTC))
        if next_at is not None
        else None,
        "createdAt": record["createdAt"],
        "replayOf": record["replayOf"],
    }


def checked_view(rt: Deliverer, record: dict[str, Any]) -> dict[str, Any]:
    """A delivery for the control plane, with its body and each attempt's signature checked
    again (signing.py: :func:`signature_check`): what the inspector shows."""
    shown = view(record)
    shown["body"] = record["body"]
    secret = rt.secrets.open(record["secret"]) if record["attempts"] else None
    shown["attempts"] = [
        {**attempt, "signatureCheck": signing.signature_check(record, secret, attempt)}
        for attempt in record["attempts"]
    ]
    return shown
