"""Webhook subscriptions: create, list, read, update (disable, enable, rotate), delete."""

from __future__ import annotations

from typing import Any

from mockserver.areas.webhooks import state
from mockserver.call import Call
from mockserver.platform.callbacks import check_url
from mockserver.platform.delivery import SUBSCRIPTIONS
from mockserver.registry import handler


@handler("createWebhookSubscription")
async def create_subscription(call: Call) -> dict[str, Any]:
    await check_url(call, call.body["url"], field="url")
    return {"subscription": state.view(call, state.create(call, call.body))}


@handler("listWebhookSubscriptions")
def list_subscriptions(call: Call) -> dict[str, Any]:
    records = call.records(SUBSCRIPTIONS)
    return call.page("subscriptions", records, view=lambda s: state.view(call, s))


@handler("getWebhookSubscription")
def get_subscription(call: Call) -> dict[str, Any]:
    return {"subscription": state.view(call, state.get(call, call.path["subscriptionId"]))}


@handler("updateWebhookSubscription")
async def update_subscription(call: Call) -> dict[str, Any]:
    subscription = state.get(call, call.path["subscriptionId"])
    if "url" in call.body:
        await check_url(call, call.body["url"], field="url")
    subscription = state.get(call, call.path["subscriptionId"])  # it may have gone meanwhile
    return {"subscription": state.view(call, state.update(call, subscription, call.body))}


@handler("deleteWebhookSubscription")
def delete_subscription(call: Call) -> dict[str, Any]:
    subscription = state.get(call, call.path["subscriptionId"])
    state.delete(call, subscription)
    return {"id": subscription["id"], "deleted": True}
