"""Projects: list and create."""

from __future__ import annotations

from typing import Any

from mockserver.areas.projects import state
from mockserver.call import Call
from mockserver.platform.clock import parse_time
from mockserver.platform.cursors import Position
from mockserver.platform.errors import invalid_request
from mockserver.registry import handler


@handler("listProjects")
def list_projects(call: Call) -> dict[str, Any]:
    state.refuse_pre_switch_cursor(call, call.query.get("cursor"))
    valid_from = parse_time(call.operation.definition["x-cursors-valid-from"]).timestamp()

    def check(position: Position) -> None:
        if position.issued_at < valid_from:
            raise invalid_request(
                "this cursor was issued before the 2026-10-10 switch of the projects data "
                "store; list again from the first page",
                reason="cursor_predates_store_switch",
            )

    return call.page("projects", call.records("projects"), view=state.view, check=check)


@handler("createProject")
def create_project(call: Call) -> dict[str, Any]:
    return {"project": state.view(state.create(call, call.body))}
