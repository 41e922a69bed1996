"""Workflow context snapshots: what a workflow step retrieved and what it left out.

- ``retrievedPassages`` and ``exclusions`` are optional and each defaults to an empty array
  (the contract's defaults, filled by validation); ``query`` defaults to null.
- ``projectId`` is optional (inferred); when sent it must be a project of the workspace, else
  ``404 not_found`` (another workspace's project included).
- Inferred: the snapshot is stored as sent (collection ``contextSnapshots``) and answered whole,
  with an id and its creation time; nothing is computed from it. Free (no charge); a viewer
  key may not create one (it writes). ``Idempotency-Key`` is optional: a retry with the same
  key answers the first snapshot.
"""

from __future__ import annotations

from typing import Any

from mockserver.areas.projects.state import get_project
from mockserver.call import Call
from mockserver.platform.envelope import public

COLLECTION = "contextSnapshots"


def create(call: Call, body: dict[str, Any]) -> dict[str, Any]:
    project_id = None
    if "projectId" in body:
        project_id = get_project(call, body["projectId"])["id"]
    return call.world.insert(
        call.workspace_id,
        COLLECTION,
        {
            "id": call.new_id("ctx"),
            "projectId": project_id,
            "query": body.get("query"),
            "retrievedPassages": body["retrievedPassages"],
            "exclusions": body["exclusions"],
            "createdAt": call.now_iso,
        },
    )


def view(snapshot: dict[str, Any]) -> dict[str, Any]:
    return public(snapshot)
