"""Control operations of the jobs area: every job, as the inspector shows it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mockserver.areas.jobs import engine
from mockserver.control.plane import control
from mockserver.platform.envelope import iso_z
from mockserver.platform.validation import Validated
from mockserver.runtime import Runtime


@control("listJobsControl")
def list_jobs(rt: Runtime, call: Validated) -> dict[str, Any]:
    world = rt.world
    status, slug = call.query.get("status"), call.query.get("workspace")
    found = [
        (workspace_id, job)
        for workspace_id, job in engine.all_jobs(world)
        if status in (None, job["status"]) and slug in (None, world.workspace(workspace_id)["slug"])
    ]
    found.sort(key=lambda pair: pair[1]["_seq"])
    return {"jobs": [inspected(rt, ws, job) for ws, job in found[-call.query["limit"] :]]}


def inspected(rt: Runtime, workspace_id: str, job: dict[str, Any]) -> dict[str, Any]:
    """A job with what the inspector shows beside it (never its callback's secret)."""
    project_id = job["projectId"]
    project = rt.world.get(workspace_id, "projects", project_id) if project_id else None
    terminal = job["status"] in engine.TERMINAL
    steps, index = job["_plan"], job["_step"]
    next_at = None if terminal or index >= len(steps) else epoch_iso(steps[index]["at"])
    callback = job["_callback"]
    return {
        **engine.view(job),
        "workspace": rt.world.workspace(workspace_id)["slug"],
        "projectTitle": project["title"] if project is not None else None,
        "outcome": job["status"] if terminal else job["_outcome"],
        "nextStepAt": next_at,
        "callbackUrl": callback["url"] if callback is not None else None,
        "events": engine.stream(job),
    }


def epoch_iso(moment: float) -> str:
    return iso_z(datetime.fromtimestamp(moment, UTC))
