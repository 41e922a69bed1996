"""Review notes (comments) of a project.

- Per project, oldest first (insertion order), paged with ``cursor``; a cursor from another
  project's list is refused (``400 invalid_request``).
- Adding a note records ``author`` as the caller's member and ``timecode`` (seconds into the
  composition) or null; a viewer key may read notes but not add them (``403 forbidden``).
- A project of another workspace answers ``404 not_found``, like one that does not exist.
- The transcript read carries the project's latest notes (at most ``NOTES_IN_TRANSCRIPT``,
  oldest first, inferred) as ``notes``; the full list is the comments list.
"""

from __future__ import annotations

from typing import Any

from mockserver.call import Call
from mockserver.platform.envelope import public

COLLECTION = "comments"
NOTES_IN_TRANSCRIPT = 100


def of_project(call: Call, project_id: str) -> list[dict[str, Any]]:
    records = call.world.records(call.workspace_id, COLLECTION)
    return [comment for comment in records if comment["projectId"] == project_id]


def view(comment: dict[str, Any]) -> dict[str, Any]:
    return public(comment)


def add(call: Call, project_id: str, body: dict[str, Any]) -> dict[str, Any]:
    assert call.caller is not None
    return call.world.insert(
        call.workspace_id,
        COLLECTION,
        {
            "id": call.new_id("cmt"),
            "projectId": project_id,
            "text": body["text"],
            "author": call.caller.member,
            "timecode": body.get("timecode"),
            "createdAt": call.now_iso,
        },
    )


def notes(call: Call, project_id: str) -> list[dict[str, Any]]:
    return [view(c) for c in of_project(call, project_id)[-NOTES_IN_TRANSCRIPT:]]
