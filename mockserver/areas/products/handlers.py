"""Products: list and create (only ``name`` is required)."""

from __future__ import annotations

from typing import Any

from mockserver.call import Call
from mockserver.platform.envelope import public
from mockserver.registry import handler


@handler("listProducts")
def list_products(call: Call) -> dict[str, Any]:
    return call.page("products", call.records("products"))


@handler("createProduct")
def create_product(call: Call) -> dict[str, Any]:
    body = call.body
    product = call.world.insert(
        call.workspace_id,
        "products",
        {
            "id": call.new_id("prd"),
            "name": body["name"],
            "description": body.get("description"),
            "url": body.get("url"),
            "priceCents": body.get("priceCents"),
            "createdAt": call.now_iso,
        },
    )
    return {"product": public(product)}
