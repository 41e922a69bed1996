"""Webhooks you can see and cause: the control operations behind ``mockserver trigger`` and
``mockserver listen`` (``events.yaml`` beside this module).

- ``POST /_mock/events/trigger`` makes a subscription event happen now through a real job: a
  new job of a kind whose fixtures say it notifies subscriptions of that event (``jobs.kinds``:
  ``notify``, ``terminalEvents``, ``hold``, ``files``), created and moved by the jobs engine
  (``create_job``, ``hurry``, ``decide``) at the current mock time, with no charge.
- ``POST /_mock/listeners`` makes a *listener* subscription (webhooks/state.py) whose deliveries
  may reach loopback; ``DELETE /_mock/listeners/{id}`` removes it.

Event names always come from the contract's ``SubscriptionEventName``.
"""

from __future__ import annotations

import secrets
from typing import Any

from mockserver.areas.jobs import engine
from mockserver.areas.webhooks import state as subscriptions
from mockserver.control.plane import control
from mockserver.platform import delivery, urlpolicy
from mockserver.platform.auth import hash_key
from mockserver.platform.envelope import public
from mockserver.platform.errors import ApiError, invalid_request, not_found
from mockserver.platform.transactions import plain
from mockserver.platform.validation import Validated
from mockserver.runtime import Runtime

HOLD_EVENT = "job.awaiting_approval"
STEP_EVENT = "job.progressed"
FILES_EVENT = "artifact.ready"  # sent with the terminal event of a done job that makes video


def event_names(rt: Runtime) -> list[str]:
    """The subscription events, as the contract names them."""
    return list(rt.contract.document["components"]["schemas"]["SubscriptionEventName"]["enum"])


def first_owner_key(rt: Runtime) -> str | None:
    """The fixtures' first owner key (a sandbox's fixtures carry the sandbox's own keys)."""
    for spec in rt.fixtures.get("workspaces", []):
        for key in spec.get("keys", []):
            if spec["members"][key["member"]]["role"] == "owner":
                return str(key["key"])
    return None


def workspace_of(rt: Runtime, key: str | None) -> str:
    """The workspace of an API key of this world (default the fixtures' first owner key)."""
    key = key or first_owner_key(rt)
    record = rt.world.key(hash_key(key)) if key else None
    if record is None or record.get("revoked"):
        raise not_found("that key (an API key of this world or sandbox)")
    return str(record["workspace"])


# -- trigger ---------------------------------------------------------------------------------


def _notifies(settings: dict[str, Any], event: str) -> bool:
    notify = settings.get("notify", False)
    return notify is True or (isinstance(notify, list) and event in notify)


def _ends(settings: dict[str, Any], event: str) -> list[str | None]:
    """The outcomes of a job of this kind that send ``event`` (None: no terminal state needed)."""
    terminal = settings.get("terminalEvents", engine.TERMINAL_EVENTS)
    if event in terminal.values():
        return [status for status, sent in terminal.items() if sent == event]
    if event == FILES_EVENT:
        return ["done"] if settings.get("files") == "video" else []
    if event == HOLD_EVENT:
        return [None] if settings.get("hold") else []
    if event == STEP_EVENT:
        return [None]
    return []


def choose(rt: Runtime, event: str, status: str | None) -> tuple[str, str | None]:
    """``(job kind, terminal status or None)`` that makes ``event`` happen.

    Kinds of the fixtures that notify subscriptions of it, in their order; a kind that holds
    for approval only when the event is the hold itself.
    """
    kinds = rt.world.fixture("jobs", {}).get("kinds", {})
    found: list[tuple[bool, int, str, list[str | None]]] = []
    for index, (kind, settings) in enumerate(kinds.items()):
        ends = _ends(settings, event) if _notifies(settings, event) else []
        if ends:
            found.append((event != HOLD_EVENT and bool(settings.get("hold")), index, kind, ends))
    if not found:
        raise invalid_request(
            f"no job kind of the fixtures sends {event!r} to subscriptions",
            reason="event_not_sent",
        )
    _, _, kind, ends = min(found)
    if status is None:
        return kind, ends[0]
    for _, _, kind, ends in sorted(found):
        if status in ends:
            return kind, status
    sent_by = sorted({s for *_, ends in found for s in ends if s is not None})
    raise invalid_request(
        f"a job ending {status!r} does not send {event!r}"
        + (f" (statuses that do: {', '.join(sent_by)})" if sent_by else " (it takes no status)"),
        reason="status_not_applicable",
        statuses=sent_by,
    )


@control("triggerEvent")
def trigger_event(rt: Runtime, call: Validated) -> dict[str, Any]:
    event, status = call.body["event"], call.body.get("status")
    names = event_names(rt)
    if event not in names:
        raise invalid_request(
            f"unknown event {event!r} (events: {', '.join(names)})",
            reason="unknown_event",
            events=names,
        )
    workspace_id = workspace_of(rt, call.body.get("key"))
    kind, end = choose(rt, event, status)
    now = rt.clock.now()
    before = set(delivery.deliveries(rt))
    project = next(iter(rt.world.records(workspace_id, "projects")), None)
    job = engine.create_job(
        rt,
        workspace_id,
        now,
        kind=kind,
        project_id=project["id"] if project else None,
        cost=0,  # nothing charged, no usage line
        meta={"triggeredEvent": event},
    )
    if end == "cancelled":
        engine.decide(rt, workspace_id, job, end, immediately=True)
    elif event != STEP_EVENT:  # a step happened when it was filed; the rest of it goes on as usual
        if end is not None:
            engine.decide(rt, workspace_id, job, end, immediately=False)
        engine.hurry(rt, workspace_id, job, now)
        if end is not None and job["status"] not in engine.TERMINAL:  # it held for approval
            engine.decide(rt, workspace_id, job, end, immediately=True)
    happened = [plain(entry) for entry in engine.stream(job)]
    if event not in {entry["event"] for entry in happened}:
        raise ApiError("internal_error", f"the {kind} job did not send {event!r}")
    return {
        "event": event,
        "jobId": job["id"],
        "kind": kind,
        "status": job["status"],
        "workspace": rt.world.workspace(workspace_id)["slug"],
        "workspaceId": workspace_id,
        "events": happened,
        "deliveries": [id_ for id_ in delivery.deliveries(rt) if id_ not in before],
    }


# -- listeners -------------------------------------------------------------------------------


@control("createListener")
async def create_listener(rt: Runtime, call: Validated) -> dict[str, Any]:
    url = call.body["url"]
    try:  # before any change: the transaction must not stay open across a lookup
        await delivery.check_listener_url(url)
    except urlpolicy.UrlRefused as refused:
        raise invalid_request(
            f"url: {refused.message}", reason="url_not_allowed", field="url", rule=refused.reason
        ) from None
    names = event_names(rt)
    events = call.body.get("events") or names
    unknown = [name for name in events if name not in names]
    if unknown:
        raise invalid_request(
            f"unknown events: {', '.join(unknown)} (events: {', '.join(names)})",
            reason="unknown_event",
            events=names,
        )
    workspace_id = workspace_of(rt, call.body.get("key"))
    secret = "whsec_" + secrets.token_hex(24)
    record = subscriptions.create_listener(
        rt, workspace_id, url=url, events=list(events), secret=secret
    )
    return {
        "subscription": plain(public(record)),
        "secret": secret,
        "workspace": rt.world.workspace(workspace_id)["slug"],
    }


@control("deleteListener")
def delete_listener(rt: Runtime, call: Validated) -> dict[str, Any]:
    found = subscriptions.find_listener(rt, call.path["subscriptionId"])
    if found is None:
        raise not_found(f"listener subscription {call.path['subscriptionId']!r}")
    workspace_id, record = found
    subscriptions.delete_listener(rt, workspace_id, record["id"])
    return {"id": record["id"], "deleted": True}
