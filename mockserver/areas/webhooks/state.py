"""Webhook subscriptions: workspace-wide automation events to a url, signed with a secret.

- ``url`` is held to the callback address rules (HTTPS, public addresses only) when created and
  changed, and again at every delivery.
- The secret is sealed (encrypted) on arrival, kept sealed in snapshots, and never returned by
  any endpoint.
- ``enabled: false`` disables the subscription: no new deliveries, and pending retries stop;
  ``enabled: true`` enables it again. A deleted subscription gets no further attempts.
- ``mockserver listen`` makes a *listener* subscription through the control plane
  (:func:`create_listener`): a normal subscription (listed, readable, deletable by the API, its
  secret never returned by it) marked ``_listener``, whose deliveries may reach loopback without
  ``--allow-private-callbacks`` (platform/delivery/worker.py). Changing its url drops the mark.
"""

from __future__ import annotations

from typing import Any

from mockserver.call import Call
from mockserver.platform.delivery import SUBSCRIPTIONS
from mockserver.platform.envelope import iso_z
from mockserver.platform.errors import not_found
from mockserver.runtime import Runtime

LISTENER_DESCRIPTION = "mockserver listen"


def get(call: Call, subscription_id: str) -> dict[str, Any]:
    subscription = call.world.get(call.workspace_id, SUBSCRIPTIONS, subscription_id)
    if subscription is None:
        raise not_found(f"webhook subscription {subscription_id!r}")
    return subscription


def view(call: Call, subscription: dict[str, Any]) -> dict[str, Any]:
    """A subscription as the API shows it (never its secret)."""
    return call.runtime.seams.show_subscription(call.runtime, subscription)


def create(call: Call, body: dict[str, Any]) -> dict[str, Any]:
    return call.world.insert(
        call.workspace_id,
        SUBSCRIPTIONS,
        {
            "id": call.new_id("whk"),
            "url": body["url"],
            "events": list(dict.fromkeys(body["events"])),
            "enabled": body.get("enabled", True),
            "description": body.get("description"),
            "createdAt": call.now_iso,
            "updatedAt": call.now_iso,
            "_secret": call.runtime.secrets.seal(body["secret"]),
        },
    )


def create_listener(
    rt: Runtime, workspace_id: str, *, url: str, events: list[str], secret: str
) -> dict[str, Any]:
    """A subscription for ``mockserver listen`` (its url already checked to be loopback)."""
    now = iso_z(rt.clock.now())
    return rt.world.insert(
        workspace_id,
        SUBSCRIPTIONS,
        {
            "id": rt.world.ids.new("whk"),
            "url": url,
            "events": list(dict.fromkeys(events)),
            "enabled": True,
            "description": LISTENER_DESCRIPTION,
            "createdAt": now,
            "updatedAt": now,
            "_secret": rt.secrets.seal(secret),
            "_listener": True,
        },
    )


def find_listener(rt: Runtime, subscription_id: str) -> tuple[str, dict[str, Any]] | None:
    """``(workspace id, subscription)`` of a listener subscription, or None."""
    for workspace_id in rt.world.workspaces:
        found = rt.world.get(workspace_id, SUBSCRIPTIONS, subscription_id)
        if found is not None and found.get("_listener"):
            return workspace_id, found
    return None


def delete_listener(rt: Runtime, workspace_id: str, subscription_id: str) -> None:
    rt.world.delete(workspace_id, SUBSCRIPTIONS, subscription_id)


def update(call: Call, subscription: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    for field, value in changes.items():
        if field == "secret":
            subscription["_secret"] = call.runtime.secrets.seal(value)
        elif field == "events":
            subscription["events"] = list(dict.fromkeys(value))
        elif field == "url":
            subscription["url"] = value
            subscription.pop("_listener", None)  # a new url is held to the usual rules
        else:
            subscription[field] = value
    subscription["updatedAt"] = call.now_iso
    return subscription


def delete(call: Call, subscription: dict[str, Any]) -> None:
    call.world.delete(call.workspace_id, SUBSCRIPTIONS, subscription["id"])
