"""Jobs: read one (the recovery path when webhooks are missed), list them, read their stream."""

from __future__ import annotations

from typing import Any

from mockserver.areas.jobs import engine
from mockserver.call import Call
from mockserver.registry import handler


@handler("listJobs")
def list_jobs(call: Call) -> dict[str, Any]:
    equal = {"status": call.query.get("status"), "projectId": call.query.get("projectId")}
    return call.page("jobs", call.records("jobs", equal), view=engine.view)


@handler("getJob")
def get_job(call: Call) -> dict[str, Any]:
    return {"job": engine.view(engine.get_job(call, call.path["jobId"]))}


@handler("listJobEvents")
def list_job_events(call: Call) -> dict[str, Any]:
    """The ordered stream after ``after`` (the last sequence applied), ``limit`` at a time."""
    events = engine.stream(engine.get_job(call, call.path["jobId"]))
    after, limit = call.query["after"], call.query["limit"]
    page = [e for e in events if e["sequence"] > after][:limit]
    next_after = call.runtime.seams.stream_next_after(page, after)
    return {
        "events": page,
        "nextAfter": next_after,
        "hasMore": events[-1]["sequence"] > next_after if events else False,
    }
