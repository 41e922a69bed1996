"""HTTP handlers of the workflow area: context snapshots."""

from __future__ import annotations

from typing import Any

from mockserver.areas.workflow import state
from mockserver.call import Call
from mockserver.registry import handler


@handler("createContextSnapshot")
def create_context_snapshot(call: Call) -> dict[str, Any]:
    return {"snapshot": state.view(state.create(call, call.body))}
