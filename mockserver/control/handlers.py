"""The control plane's built-in operations (``openapi.yaml`` beside this module)."""

from __future__ import annotations

import logging
import math
from datetime import UTC, datetime
from typing import Any

from mockserver.control.plane import control, control_contract
from mockserver.control.snapshots import SnapshotCheck
from mockserver.platform import delivery
from mockserver.platform.auth import hash_key, key_label
from mockserver.platform.clock import ManualClock
from mockserver.platform.envelope import iso_z
from mockserver.platform.errors import ApiError, invalid_request, not_found
from mockserver.platform.faults import CredentialStoreOutage
from mockserver.platform.journal import Filters
from mockserver.platform.validation import Validated
from mockserver.runtime import Runtime

log = logging.getLogger("mockserver.control")
SNAPSHOT_CHECK = SnapshotCheck(control_contract().document)  # compiled once, at start-up


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
    return _clock(rt)


def _clock(rt: Runtime) -> dict[str, Any]:
    """Now, the clock's mode, and when the mock next has work to do: a job's or a run's next
    step, any timed rule of an area (the scheduler), or a delivery's next attempt."""
    now = rt.clock.now().timestamp()
    times = [rt.scheduler.next_due] + [
        record["nextAttemptAt"]
        for record in delivery.deliveries(rt).values()
        if record["state"] == "pending"
    ]
    later = [t for t in times if t is not None and t > now]
    due = min(later) if later else None
    return {
        "now": iso_z(rt.clock.now()),
        "mode": rt.clock.mode,
        "nextDueAt": iso_z(datetime.fromtimestamp(due, UTC)) if due is not None else None,
        "nextDueInSeconds": math.ceil(round(due - now, 6)) if due is not None else None,
    }


@control("advanceClock")
def advance_clock(rt: Runtime, call: Validated) -> dict[str, Any]:
    if not isinstance(rt.clock, ManualClock):
        raise ApiError(
            "conflict",
            "the clock is real; start the mock with --clock manual to move time",
            details={"reason": "clock_not_manual"},
        )
    rt.clock.advance(call.body["seconds"])
    return _clock(rt)


@control("listWorkspaces")
def list_workspaces(rt: Runtime, call: Validated) -> dict[str, Any]:
    return {
        "workspaces": [
            {
                "slug": workspace["slug"],
                "name": workspace["name"],
                "credits": workspace["credits"],
                "members": [
                    {
                        "name": member["name"],
                        "role": member["role"],
                        "budgetCapped": bool(member.get("budgetCapped", False)),
                    }
                    for member in workspace["members"].values()
                ],
                "governance": workspace["governance"],
            }
            for workspace in rt.world.workspaces.values()
        ]
    }


@control("getCredits")
def get_credits(rt: Runtime, call: Validated) -> dict[str, Any]:
    workspace = _workspace(rt, call.path["workspace"])
    return {"workspace": workspace["slug"], "balance": workspace["credits"]}


@control("setCredits")
def set_credits(rt: Runtime, call: Validated) -> dict[str, Any]:
    workspace = _workspace(rt, call.path["workspace"])
    rt.seams.set_balance(workspace, call.body["balance"])
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
    entry = rt.world.capability(call.path["name"])
    if entry is None:
        raise not_found(f"capability {call.path['name']!r}")
    entry.update(call.body)
    return {"capability": {"name": call.path["name"], **entry}}


@control("revokeKey")
def revoke_key(rt: Runtime, call: Validated) -> dict[str, Any]:
    record = rt.world.key(hash_key(call.body["key"]))
    if record is None:
        raise not_found("that key")
    rt.seams.revoke_key(record)
    return {"keyId": record["keyId"], "revoked": True}


@control("listFaults")
def list_faults(rt: Runtime, call: Validated) -> dict[str, Any]:
    store = rt.faults.credential_store
    return {
        "faults": [fault.view() for fault in rt.faults.rules],
        "credentialStore": store.view() if store is not None else {"reachable": True},
    }


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


@control("removeFault")
def remove_fault(rt: Runtime, call: Validated) -> dict[str, Any]:
    if not rt.faults.remove(call.path["faultId"]):
        raise not_found(f"fault {call.path['faultId']!r} (it may have fired its last time)")
    return {}


@control("clearFaults")
def clear_faults(rt: Runtime, call: Validated) -> dict[str, Any]:
    rt.faults.clear()
    return {}


@control("setCredentialStore")
def set_credential_store(rt: Runtime, call: Validated) -> dict[str, Any]:
    if call.body["reachable"]:
        rt.faults.credential_store = None
        return {"credentialStore": {"reachable": True}}
    outage = rt.faults.credential_store or CredentialStoreOutage()
    if "retryAfter" in call.body:
        outage.retry_after = call.body["retryAfter"]
    rt.faults.credential_store = outage
    return {"credentialStore": outage.view()}


@control("listRequests")
def list_requests(rt: Runtime, call: Validated) -> dict[str, Any]:
    query = call.query
    key = query.get("key")
    if key is not None and not key.startswith("key_"):
        key = _label(key)  # the label a key is journalled under
    status_class = query.get("statusClass")

    def redact(operation_id: str, body: Any) -> Any:
        return rt.validators[operation_id].secrets.redacted(body)

    filters = Filters(
        operation_id=query.get("operationId"),
        status=query.get("status"),
        status_class=int(status_class[0]) if status_class else None,
        code=query.get("code"),
        key_id=key,
        workspace=query.get("workspace"),
        member=query.get("member"),
        after=query.get("after", 0),
        findings=query.get("findings"),
    )
    journal = rt.journal
    latest = journal.latest_seq
    unsettled = journal.unsettled_seq()
    return {
        "requests": journal.entries(redact, _label, filters, query["limit"]),
        "latestSeq": latest,
        "oldestSeq": journal.oldest_seq,
        "settledSeq": latest if unsettled is None else min(latest, unsettled - 1),
    }


def _label(key: str) -> str:
    return key_label(hash_key(key))


@control("getSnapshot")
def get_snapshot(rt: Runtime, call: Validated) -> dict[str, Any]:
    """The state, in the envelope ``PUT /_mock/snapshot`` takes back as is: its own
    containers, not a copy of them (~9,000 for the fixtures: copying cost ~1.3 ms, encoding
    ~0.1 ms), since the answer is encoded at once, in this transaction (plane.py's
    ``transact``), and the same bytes as a copy's."""
    return {"snapshot": rt.snapshot(copy=False)}


@control("putSnapshot")
def put_snapshot(rt: Runtime, call: Validated) -> dict[str, Any]:
    """Replace the state with a snapshot the mock can serve (snapshots.py), or change nothing."""
    snapshot = call.body["snapshot"]
    problems = SNAPSHOT_CHECK.problems(snapshot)
    if problems:
        raise _invalid_snapshot(problems)
    try:
        rt.restore(snapshot)
    except Exception as exc:  # the checks passed, yet taking it in failed: the control plane's
        # transaction puts the previous state back when this refusal leaves the handler
        log.exception("a checked snapshot could not be restored")
        raise _invalid_snapshot(
            [{"path": "", "message": f"the mock could not take it in: {type(exc).__name__}: {exc}"}]
        ) from None
    return {}


def _invalid_snapshot(problems: list[dict[str, str]]) -> ApiError:
    first = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return invalid_request(
        f"the snapshot cannot be served: {first['path'] or '/'}: {first['message']}{more}",
        reason="invalid_snapshot",
        errors=problems,
    )


# -- jobs and deliveries ---------------------------------------------------------------------


@control("setJobOutcome")
def set_job_outcome(rt: Runtime, call: Validated) -> dict[str, Any]:
    from mockserver.areas.jobs import engine

    found = rt.world.find("jobs", call.path["jobId"])
    if found is None:
        raise not_found(f"job {call.path['jobId']!r}")
    workspace_id, job = found
    if job["status"] in engine.TERMINAL:
        raise ApiError(
            "conflict",
            f"the job is already {job['status']}",
            details={"reason": "job_terminal", "status": job["status"]},
        )
    engine.decide(rt, workspace_id, job, call.body["status"], call.body["immediately"])
    return {"jobId": job["id"], "outcome": call.body["status"], "status": job["status"]}


@control("listDeliveries")
def list_deliveries(rt: Runtime, call: Validated) -> dict[str, Any]:
    records = [
        delivery.checked_view(rt, record)
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
    return {"delivery": delivery.checked_view(rt, record)}


# -- sandboxes (mockserver/sandboxes.py) and the index ----------------------------------------


@control("controlIndex")
def control_index(rt: Runtime, call: Validated) -> dict[str, Any]:
    operations = [
        {
            "method": op.method,
            "path": op.path,
            "operationId": op.operation_id,
            "summary": op.definition.get("summary", ""),
            "sandbox": op.definition.get("x-sandbox", True),
        }
        for op in control_contract().operations.values()
    ]
    token = rt.settings.control_token is not None
    return {"document": "/_mock/openapi.json", "tokenRequired": token, "operations": operations}


@control("createSandbox")
async def create_sandbox(rt: Runtime, call: Validated) -> dict[str, Any]:
    spec = call.body if isinstance(call.body, dict) else {}
    sandbox = await rt.sandboxes.create(
        workspace=spec.get("workspace"),
        clock=spec.get("clock", "manual"),
        start=spec.get("start"),
        seed=spec.get("seed"),
    )
    return {"sandbox": rt.sandboxes.view(sandbox)}


@control("listSandboxes")
async def list_sandboxes(rt: Runtime, call: Validated) -> dict[str, Any]:
    return {"sandboxes": [rt.sandboxes.view(s) for s in await rt.sandboxes.all()]}


@control("getSandbox")
async def get_sandbox(rt: Runtime, call: Validated) -> dict[str, Any]:
    return {"sandbox": rt.sandboxes.view(await rt.sandboxes.get(call.path["sandboxId"]))}


@control("deleteSandbox")
async def delete_sandbox(rt: Runtime, call: Validated) -> dict[str, Any]:
    await rt.sandboxes.end(call.path["sandboxId"])
    return {}
