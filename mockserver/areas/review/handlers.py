"""HTTP handlers of the review area: transcript read and edit, comments, share, variations."""

from __future__ import annotations

from typing import Any

from mockserver.areas.projects.state import get_project
from mockserver.areas.review import comments, compositions, share, transcript, variations
from mockserver.call import Call
from mockserver.registry import handler


@handler("getProjectTranscript")
def get_transcript(call: Call) -> dict[str, Any]:
    project = get_project(call, call.path["projectId"])
    return {"transcript": transcript.read(call, project["id"])}


@handler("editProjectTranscript")
def edit_transcript(call: Call) -> dict[str, Any]:
    project = get_project(call, call.path["projectId"])
    return compositions.edit(call, project["id"], call.body)


@handler("listProjectComments")
def list_comments(call: Call) -> dict[str, Any]:
    project = get_project(call, call.path["projectId"])
    records = call.records(comments.COLLECTION, {"projectId": project["id"]})
    return call.page("comments", records, view=comments.view)


@handler("addProjectComment")
def add_comment(call: Call) -> dict[str, Any]:
    project = get_project(call, call.path["projectId"])
    return {"comment": comments.view(comments.add(call, project["id"], call.body))}


@handler("shareProject")
def share_project(call: Call) -> dict[str, Any]:
    project = get_project(call, call.path["projectId"])
    return {"share": share.share(call, project["id"])}


@handler("getVariationBatch")
def get_variation_batch(call: Call) -> dict[str, Any]:
    project = get_project(call, call.path["projectId"])
    batch = variations.get_batch(call, project["id"], call.path["batchId"])
    return variations.page(call, batch)
