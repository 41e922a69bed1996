"""The control plane's built-in operations (``openapi.yaml`` beside this module)."""

from __future__ import annotations

from typing import Any

from mockserver.control.plane import control
from mockserver.platform import delivery
from mockserver.platform.auth import hash_key
from mockserver.platform.clock import ManualClock
from mockserver.platform.envelope import iso_z
from mockserver.platform.errors import ApiError, invalid_request, not_found
from mockserver.platform.validation import Validated
from mockserver.runtime import Runtime


def _workspace(rt: Runtime, slug: str) -> dict[str, Any]:
    workspace = rt.world.workspace_by_slug(slug)
    if workspace is None:
        raise not_found(f"workspace {slug!r}")
    return workspace


@control("reset")
def reset(rt: Runtime, call: Validated) -> dict[str, Any]:
    rt.reset()
    return {}


@control("getClock")
def get_clock(rt: Runtime, call: Validated) -> dict[str, Any]:
    return {"now": iso_z(rt.clock.now()), "mode": rt.clock.mode}


@control("advanceClock")
def advance_clock(rt: Runtime, call: Validated) -> dict[str, Any]:
    if not isinstance(rt.clock, ManualClock):
        raise ApiError(
            "conflict",
            "the clock is real; start the mock with --clock manual to move time",
            details={"reason": "clock_not_manual"},
        )
    rt.clock.advance(call.body["seconds"])
    return {"now": iso_z(rt.clock.now()), "mode": rt.clock.mode}


@control("getCredits")
def get_credits(rt: Runtime, call: Validated) -> dict[str, Any]:
    workspace = _workspace(rt, call.path["workspace"])
    return {"workspace": workspace["slug"], "balance": workspace["credits"]}


@control("setCredits")
def set_credits(rt: Runtime, call: Validated) -> dict[str, Any]:
    workspace = _workspace(rt, call.path["workspace"])
    workspace["credits"] = call.body["balance"]
    if rt.defect("budget-cap-lifted-by-top-up"):  # defect:
        for member in workspace["members"].values():
            member["budgetCapped"] = False
    return {"workspace": workspace["slug"], "balance": workspace["credits"]}


@control("setBudget")
def set_budget(rt: Runtime, call: Validated) -> dict[str, Any]:
    workspace = _workspace(rt, call.path["workspace"])
    member = workspace["members"].get(call.path["member"])
    if member is None:
        raise not_found(f"member {call.path['member']!r}")
    member["budgetCapped"] = call.body["capped"]
    return {
        "workspace": workspace["slug"],
        "member": member["name"],
        "capped": member["budgetCapped"],
    }


@control("getGovernance")
def get_governance(rt: Runtime, call: Validated) -> dict[str, Any]:
    workspace = _workspace(rt, call.path["workspace"])
    return {"workspace": workspace["slug"], "governance": workspace["governance"]}


@control("setGovernance")
def set_governance(rt: Runtime, call: Validated) -> dict[str, Any]:
    workspace = _workspace(rt, call.path["workspace"])
    workspace["governance"].update(call.body)
    return {"workspace": workspace["slug"], "governance": workspace["governance"]}


@control("setCapability")
def set_capability(rt: Runtime, call: Validated) -> dict[str, Any]:
    entry = rt.world.data["capabilities"].get(call.path["name"])
    if entry is None:
        raise not_found(f"capability {call.path['name']!r}")
    entry.update(call.body)
    return {"capability": {"name": call.path["name"], **entry}}


@control("revokeKey")
def revoke_key(rt: Runtime, call: Validated) -> dict[str, Any]:
    record = rt.world.data["keys"].get(hash_key(call.body["key"]))
    if record is None:
        raise not_found("that key")
    record["revoked"] = True
    return {"keyId": record["keyId"], "revoked": True}


@control("listFaults")
def list_faults(rt: Runtime, call: Validated) -> dict[str, Any]:
    return {"faults": [fault.view() for fault in rt.faults.rules]}


@control("addFault")
def add_fault(rt: Runtime, call: Validated) -> dict[str, Any]:
    spec = call.body
    operation_id = spec["match"].get("operationId")
    if operation_id is not None and operation_id not in rt.contract.operations:
        raise invalid_request(
            f"the contract has no operation {operation_id!r}", reason="unknown_operation"
        )
    try:
        fault = rt.faults.add(spec)
    except ValueError as exc:
        raise invalid_request(str(exc), reason="code_not_allowed_for_status") from None
    return {"fault": fault.view()}


@control("clearFaults")
def clear_faults(rt: Runtime, call: Validated) -> dict[str, Any]:
    rt.faults.clear()
    return {}


@control("listRequests")
def list_requests(rt: Runtime, call: Validated) -> dict[str, Any]:
    entries = rt.journal.entries()
    return {"requests": entries[-call.query["limit"] :]}


@control("getSnapshot")
def get_snapshot(rt: Runtime, call: Validated) -> dict[str, Any]:
    return {"snapshot": rt.snapshot()}


@control("putSnapshot")
def put_snapshot(rt: Runtime, call: Validated) -> dict[str, Any]:
    rt.restore(call.body)
    return {}


# -- jobs and deliveries ---------------------------------------------------------------------


@control("setJobOutcome")
def set_job_outcome(rt: Runtime, call: Validated) -> dict[str, Any]:
    from mockserver.areas.jobs import engine

    for workspace_id, job in engine.all_jobs(rt.world):
        if job["id"] == call.path["jobId"]:
            if job["status"] in engine.TERMINAL:
                raise ApiError(
                    "conflict",
                    f"the job is already {job['status']}",
                    details={"reason": "job_terminal", "status": job["status"]},
                )
            engine.decide(rt, workspace_id, job, call.body["status"], call.body["immediately"])
            return {"jobId": job["id"], "outcome": call.body["status"], "status": job["status"]}
    raise not_found(f"job {call.path['jobId']!r}")


@control("listDeliveries")
def list_deliveries(rt: Runtime, call: Validated) -> dict[str, Any]:
    records = [
        delivery.view(record)
        for record in delivery.deliveries(rt).values()
        if call.query.get("state") in (None, record["state"])
        and call.query.get("event") in (None, record["event"])
    ]
    return {"deliveries": records[-call.query["limit"] :]}


@control("flushDeliveries")
async def flush_deliveries(rt: Runtime, call: Validated) -> dict[str, Any]:
    timeout = call.body.get("timeoutSeconds", 30) if isinstance(call.body, dict) else 30
    return await rt.delivery.flush(timeout)


@control("replayDelivery")
def replay_delivery(rt: Runtime, call: Validated) -> dict[str, Any]:
    record = delivery.replay(rt, call.path["deliveryId"])
    if record is None:
        raise not_found(f"delivery {call.path['deliveryId']!r}")
    return {"delivery": delivery.view(record)}
