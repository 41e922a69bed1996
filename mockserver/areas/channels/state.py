"""Channels: PATCH changes only the fields sent; ``enabled: false`` archives; no delete.

``products`` keeps the difference the engine reads: ``[]`` means nothing is bound yet and
``["none"]`` means the channel deliberately promotes nothing. Every product id sent must be a
product of the workspace (else ``404 not_found``).
"""

from __future__ import annotations

from typing import Any

from mockserver.call import Call
from mockserver.platform.errors import not_found

PROMOTES_NOTHING = ["none"]


def get_channel(call: Call, channel_id: str) -> dict[str, Any]:
    channel = call.world.get(call.workspace_id, "channels", channel_id)
    if channel is None:
        raise not_found(f"channel {channel_id!r}")
    return channel


def check_products(call: Call, products: list[str]) -> None:
    if products == PROMOTES_NOTHING:
        return
    for product_id in products:
        if call.world.get(call.workspace_id, "products", product_id) is None:
            raise not_found(f"product {product_id!r}")


def update(call: Call, channel: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """Apply a PATCH: every check first, then the changes, so nothing is half-written."""
    if "products" in changes:
        check_products(call, changes["products"])
    for field, value in changes.items():
        channel[field] = list(value) if isinstance(value, list) else value
    if "enabled" in changes:
        channel["archivedAt"] = None if changes["enabled"] else call.now_iso
    channel["updatedAt"] = call.now_iso
    return channel
