"""Generation operations: film outlines, renders, edits, footage, remixes, 3D and agent runs.

Thin handlers: the rules are in state.py (order of checks, charge and job in one step; the
capabilities a request needs are checked before its project or edit job is looked up, see
credits.py), work.py (each operation's checks and price), proposals.py (footage-edit proposals),
agent.py (agent runs), media.py (video lengths) and outline.py (film outlines).
"""

from __future__ import annotations

from typing import Any

from mockserver.areas.generation import agent, proposals, state
from mockserver.areas.generation.outline import film_outline
from mockserver.areas.generation.work import APPROVAL_ITEMS, WORK, approval_work, priced
from mockserver.areas.jobs import engine
from mockserver.call import Call
from mockserver.platform import credits
from mockserver.platform.callbacks import requested_callback
from mockserver.registry import handler

JOB_KINDS = {
    "renderVideo": "render",
    "editVideo": "footage-edit",
    "createFootage": "footage",
    "remixVideo": "remix",
    "createModelFromText": "3d-from-text",
    "createModelFromImage": "3d-from-image",
}


async def start(call: Call) -> dict[str, Any]:
    """A job-making generation call: checked, priced, charged and started (state.py)."""
    operation_id = call.operation.operation_id
    callback = await requested_callback(call)
    work = WORK[operation_id](call, call.body, "")
    credits.require_capabilities(call.world, work.items)
    project_id = state.filed_project(call)
    job, cost = state.start_job(
        call, work, kind=JOB_KINDS[operation_id], project_id=project_id, callback=callback
    )
    return {"job": engine.view(job), "cost": cost}


for _operation_id in JOB_KINDS:
    handler(_operation_id)(start)


@handler("createFilmOutline")
def create_film_outline(call: Call) -> dict[str, Any]:
    """The outline, answered directly (no job); charged one ``film-outline``."""
    work = WORK["createFilmOutline"](call, call.body, "")
    credits.require_capabilities(call.world, work.items)
    project_id = state.filed_project(call)
    priced(call, work)
    outline_id = call.new_id("out")
    cost = state.charge(call, work, outline_id)
    outline = film_outline(call.body, project_id)
    state.file_outline(call, outline, outline_id)
    return {"outline": outline, "cost": cost}


@handler("createAgentRun")
def create_agent_run(call: Call) -> dict[str, Any]:
    """Every step checked and priced against ``maxCredits`` first; then one charged job."""
    planned = agent.plan(call)
    credits.require_capabilities(call.world, agent.needs(planned))
    project_id = state.filed_project(call)
    work = agent.price(call, planned)
    job, cost = state.start_job(call, work, kind="agent-run", project_id=project_id)
    return {"job": engine.view(job), "cost": cost}


@handler("approveVideoEdit")
def approve_video_edit(call: Call) -> dict[str, Any]:
    """First approval (the edit renders) or a re-cut (a new render); proposals.py."""
    credits.require_capabilities(call.world, APPROVAL_ITEMS)  # the same for both, before lookup
    edit = proposals.edit_job(call, call.body["jobId"])
    action = proposals.check_approval(call, edit, call.body.get("expectedGeneration"))
    if action == proposals.FIRST_APPROVAL:
        work = approval_work(edit["id"], 0)
        priced(call, work)
        cost = state.charge(call, work, edit["id"])
        render = proposals.approve_first(call, edit, cost)
    else:
        work = approval_work(edit["id"], edit["_meta"]["proposal"]["generation"] + 1)
        render, cost = state.start_job(call, work, kind="edit-render", project_id=edit["projectId"])
        proposals.recut(edit, render)
    return {
        "proposal": proposals.summary(call.world, edit),
        "job": engine.view(render),
        "cost": cost,
    }


@handler("getJobProposal")
def get_job_proposal(call: Call) -> dict[str, Any]:
    """A page of the proposal's cuts after ``after`` (cuts already read)."""
    job = proposals.edit_job(call, call.path["jobId"])
    return proposals.page(call, job, call.query["after"], call.query["limit"])
