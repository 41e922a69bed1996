"""Generation: paid work filed under a project of the workspace.

Every generation call names its project; a project the workspace does not own answers
``404 not_found`` and the work is never filed elsewhere. A call is priced from the capability
table (work.py, credits.py) and charged in the same synchronous step that creates its job, so a
refused call (400, 402, 403, 404, 409, 503) creates nothing and charges nothing. The checks run
in this order: the callback url (400), the body's own rules (400, work.py), the capabilities
this request needs (503 ``capability_unavailable``, credits.require_capabilities: before any
lookup, so an unavailable capability never answers 404), the project (404; an approval's edit
job), the live price (409 above a ``maxCredits``), then the charge (403 for a viewer, 402
``budget_capped`` / ``insufficient_credits``).

A job's ``cost`` is every credit charged for it (a footage edit's ``video-edit`` plus the
``video-render`` of its first approval); a response's ``cost`` is what that call charged.
Film outlines make no job: the outline is answered directly and kept, filed under its project,
in the workspace's ``filmOutlines`` collection (the usage ledger names it).
"""

from __future__ import annotations

from typing import Any

from mockserver.areas.generation.work import Work, priced
from mockserver.areas.jobs import engine
from mockserver.areas.projects.state import get_project
from mockserver.call import Call
from mockserver.platform import credits


def filed_project(call: Call) -> str:
    """The request's project id, checked to belong to the workspace."""
    return get_project(call, call.body["projectId"])["id"]


def charge(call: Call, work: Work, resource_id: str) -> dict[str, Any]:
    """Charge for some work (the contract's ``Cost``); nothing is written on a refusal."""
    return credits.charge(
        call.world, call.caller, work.items,
        operation_id=call.operation.operation_id, now=call.now, resource_id=resource_id,
    )  # fmt: skip


def start_job(
    call: Call,
    work: Work,
    *,
    kind: str,
    project_id: str,
    callback: dict[str, str] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Price, charge and create the job in one step; the job and the call's cost."""
    priced(call, work)
    job_id = call.new_id("job")
    cost = charge(call, work, job_id)
    job = engine.create_job(
        call.runtime, call.workspace_id, call.now, kind=kind, project_id=project_id,
        cost=cost["credits"], job_id=job_id, callback=callback, meta=work.meta,
    )  # fmt: skip
    return job, cost


def file_outline(call: Call, outline: dict[str, Any], outline_id: str) -> None:
    call.world.insert(
        call.workspace_id,
        "filmOutlines",
        {"id": outline_id, **outline, "createdAt": call.now_iso},
    )
