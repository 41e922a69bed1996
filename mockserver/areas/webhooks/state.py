"""Webhook subscriptions: workspace-wide automation events to a url, signed with a secret.

- ``url`` is held to the callback address rules (HTTPS, public addresses only) when created and
  changed, and again at every delivery.
- The secret is sealed (encrypted) on arrival, kept sealed in snapshots, and never returned by
  any endpoint.
- ``enabled: false`` disables the subscription: no new deliveries, and pending retries stop;
  ``enabled: true`` enables it again. A deleted subscription gets no further attempts.
"""

from __future__ import annotations

from typing import Any

from mockserver.call import Call
from mockserver.platform.delivery import SUBSCRIPTIONS
from mockserver.platform.envelope import public
from mockserver.platform.errors import not_found


def get(call: Call, subscription_id: str) -> dict[str, Any]:
    subscription = call.world.get(call.workspace_id, SUBSCRIPTIONS, subscription_id)
    if subscription is None:
        raise not_found(f"webhook subscription {subscription_id!r}")
    return subscription


def view(call: Call, subscription: dict[str, Any]) -> dict[str, Any]:
    shown = public(subscription)
    if call.runtime.defect("secret-echoed"):  # defect: (mockserver/defects.py)
        shown["secret"] = call.runtime.secrets.open(subscription["_secret"])
    return shown


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


def update(call: Call, subscription: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    for field, value in changes.items():
        if field == "secret":
            subscription["_secret"] = call.runtime.secrets.seal(value)
        elif field == "events":
            subscription["events"] = list(dict.fromkeys(value))
        else:
            subscription[field] = value
    subscription["updatedAt"] = call.now_iso
    return subscription


def delete(call: Call, subscription: dict[str, Any]) -> None:
    del call.world.collection(call.workspace_id, SUBSCRIPTIONS)[subscription["id"]]
