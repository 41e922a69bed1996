"""Variation batches: a project's batch of variants, paged by cursor or the deprecated ``after``.

- A batch belongs to one project (fixtures: ``variationBatches``, each with its ``variants`` in
  order). An unknown batch, a batch of another project, or a project of another workspace
  answers ``404 not_found``.
- The page carries ``batch`` (id, project, ``variantCount``, creation time), ``variants``,
  ``nextCursor``/``hasMore`` and the deprecated ``nextAfter`` (paging.py: the cursor wins when
  both ``cursor`` and ``after`` are sent; a cursor of another batch is refused with ``400``).
"""

from __future__ import annotations

from typing import Any

from mockserver.areas.review.paging import page_with_after
from mockserver.call import Call
from mockserver.platform.errors import not_found

COLLECTION = "variationBatches"
SEQ_SPAN = 1_000_000  # a batch's variants page by positions base+1.. base+n, base = _seq * span


def get_batch(call: Call, project_id: str, batch_id: str) -> dict[str, Any]:
    batch = call.world.get(call.workspace_id, COLLECTION, batch_id)
    if batch is None or batch["projectId"] != project_id:
        raise not_found(f"variation batch {batch_id!r} of project {project_id!r}")
    return batch


def view_batch(batch: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": batch["id"],
        "projectId": batch["projectId"],
        "variantCount": len(batch["variants"]),
        "createdAt": batch["createdAt"],
    }


def page(call: Call, batch: dict[str, Any]) -> dict[str, Any]:
    base = batch["_seq"] * SEQ_SPAN
    variants = [{**v, "_seq": base + n} for n, v in enumerate(batch["variants"], 1)]
    body = page_with_after(call, "variants", variants)
    return {"batch": view_batch(batch), **body}
