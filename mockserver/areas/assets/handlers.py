"""HTTP handlers of the assets area: list, import (with its analysis job), transcript."""

from __future__ import annotations

from typing import Any

from mockserver.areas.assets import state
from mockserver.areas.jobs import engine
from mockserver.areas.projects.state import get_project
from mockserver.areas.review.paging import page_with_after
from mockserver.call import Call
from mockserver.platform import credits
from mockserver.platform.callbacks import check_fetch_url
from mockserver.registry import handler


@handler("listAssets")
def list_assets(call: Call) -> dict[str, Any]:
    def view(asset: dict[str, Any]) -> dict[str, Any]:
        return state.view(state.sync(call.world, call.workspace_id, asset))

    return page_with_after(call, "assets", call.records(state.COLLECTION), view=view)


@handler("importAsset")
def import_asset(call: Call) -> dict[str, Any]:
    check_fetch_url(call, call.body["url"], field="url")
    items = [(state.CAPABILITY, 1)]
    credits.require_capabilities(call.world, items)  # before the project: 503, never 404
    project_id = None
    if "projectId" in call.body:
        project_id = get_project(call, call.body["projectId"])["id"]
    asset_id, job_id = call.new_id("ast"), call.new_id("job")
    cost = credits.charge(
        call.world, call.caller, items,
        operation_id=call.operation.operation_id, now=call.now, resource_id=asset_id,
    )  # fmt: skip
    asset = state.create(call, asset_id, call.body, project_id, job_id)
    job = engine.create_job(
        call.runtime, call.workspace_id, call.now, kind="media-analysis", project_id=project_id,
        cost=cost["credits"], job_id=job_id, meta={"assetId": asset_id},
    )  # fmt: skip
    return {"asset": state.view(asset), "job": engine.view(job), "cost": cost}


@handler("getAssetTranscript")
def get_asset_transcript(call: Call) -> dict[str, Any]:
    return state.transcript_page(call, state.get_asset(call, call.path["assetId"]))
