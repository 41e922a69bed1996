"""Projects: what generated work is filed under.

- ``mediaType`` and the deprecated ``kind`` are both accepted on create and stored as
  ``mediaType``; a project is returned with ``kind`` as a copy (deprecated fields stay
  returned). Both sent and different: ``400 invalid_request`` (inferred).
- A project of another workspace is exactly like one that does not exist: ``404 not_found``.
- List cursors issued before the 2026-10-10 switch of the data store (the operation's
  ``x-cursors-valid-from``) are refused with ``400 invalid_request``. Cursors of the old store
  had the form ``v0.<...>``; the default fixtures publish one (``legacyCursors.listProjects``).
"""

from __future__ import annotations

from typing import Any

from mockserver.call import Call
from mockserver.platform.errors import invalid_request, not_found

DEFAULT_MEDIA_TYPE = "video"
LEGACY_CURSOR_PREFIX = "v0."


def get_project(call: Call, project_id: str) -> dict[str, Any]:
    project = call.world.get(call.workspace_id, "projects", project_id)
    if project is None:
        raise not_found(f"project {project_id!r}")
    return project


def view(project: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": project["id"],
        "title": project["title"],
        "mediaType": project["mediaType"],
        "kind": project["mediaType"],
        "description": project.get("description"),
        "createdAt": project["createdAt"],
        "updatedAt": project["updatedAt"],
    }


def media_type(body: dict[str, Any]) -> str:
    sent, legacy = body.get("mediaType"), body.get("kind")
    if sent is not None and legacy is not None and sent != legacy:
        raise invalid_request(
            "mediaType and the deprecated kind disagree; send mediaType only",
            reason="media_type_conflict",
        )
    return sent or legacy or DEFAULT_MEDIA_TYPE


def create(call: Call, body: dict[str, Any]) -> dict[str, Any]:
    kind = media_type(body)
    return call.world.insert(
        call.workspace_id,
        "projects",
        {
            "id": call.new_id("prj"),
            "title": body["title"],
            "mediaType": kind,
            "description": body.get("description"),
            "createdAt": call.now_iso,
            "updatedAt": call.now_iso,
        },
    )


def refuse_pre_switch_cursor(call: Call, cursor: str | None) -> None:
    if cursor is not None and cursor.startswith(LEGACY_CURSOR_PREFIX):
        raise invalid_request(
            "this cursor was issued before the 2026-10-10 switch of the projects data store; "
            "list again from the first page",
            reason="cursor_predates_store_switch",
        )
