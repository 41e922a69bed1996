"""Generation operations: film outlines, renders, edits, footage, remixes, 3D and agent runs."""

from __future__ import annotations

from typing import Any

from mockserver.areas.generation import state
from mockserver.areas.jobs import engine
from mockserver.call import Call
from mockserver.platform import credits
from mockserver.platform.callbacks import requested_callback
from mockserver.registry import handler


@handler("renderVideo")
async def render_video(call: Call) -> dict[str, Any]:
    """Render a story into a video: one ``video-render`` charge, one render job."""
    callback = await requested_callback(call)
    project_id = state.filed_project(call)
    job_id = call.new_id("job")
    cost = credits.charge(
        call.world, call.caller, [("video-render", 1)],
        operation_id=call.operation.operation_id, now=call.now, resource_id=job_id,
    )  # fmt: skip
    job = engine.create_job(
        call, kind="render", project_id=project_id, cost=cost["credits"], job_id=job_id,
        callback=callback, meta={"story": call.body["story"]},
    )  # fmt: skip
    return {"job": engine.view(job), "cost": cost}
