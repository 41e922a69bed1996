"""Autopilots: read and save a channel's autopilot; start, approve, retry and list its runs.

The rules are in ``state.py`` (configuration, governance lock) and ``runs.py`` (the run's life
on the clock, refusals, retries, scheduled runs).
"""

from __future__ import annotations

from typing import Any

from mockserver.areas.autopilots import runs, state
from mockserver.call import Call
from mockserver.registry import handler


@handler("getAutopilot")
def get_autopilot(call: Call) -> dict[str, Any]:
    return {"autopilot": state.view(state.read(call, call.path["channelId"]))}


@handler("saveAutopilot")
def save_autopilot(call: Call) -> dict[str, Any]:
    return {"autopilot": state.view(state.save(call, call.path["channelId"], call.body))}


@handler("createAutopilotRun")
def create_run(call: Call) -> dict[str, Any]:
    run = runs.start_manual(call)
    runs.bring_up_to_date(call.runtime, call.workspace_id, run, call.now)
    return {"run": runs.view(run)}


@handler("approveAutopilotRun")
def approve_run(call: Call) -> dict[str, Any]:
    run = runs.get_run(call, call.path["runId"])
    return {"run": runs.view(runs.approve(call, run))}


@handler("retryAutopilotRun")
def retry_run(call: Call) -> dict[str, Any]:
    run = runs.get_run(call, call.path["runId"])
    return {"run": runs.view(runs.retry(call, run))}


@handler("listAutopilotRuns")
def list_runs(call: Call) -> dict[str, Any]:
    runs.sync_workspace(call)
    records = call.records(runs.COLLECTION, {"channelId": call.query.get("channelId")})
    return call.page("runs", records, view=runs.view)
