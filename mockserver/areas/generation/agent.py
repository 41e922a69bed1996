"""Agent runs: planned steps, each a generation operation with its arguments, capped per step.

- Each step's ``arguments`` are that operation's request body without ``projectId`` (the run's).
  They are validated with the contract's own compiled validator for that operation, defaults
  filled in, as ``{"projectId": <the run's>, **arguments}``; a failure answers
  ``400 invalid_request`` whose ``details.errors[].path`` points into
  ``/steps/<i>/arguments``. ``projectId``, ``callbackUrl`` and ``callbackSecret`` in a step's
  arguments answer ``400`` (``not_a_step_argument``, inferred): a run files everything under
  its own project and is observed as one job.
- Each step is then checked and priced by the very function its operation uses (work.py), so a
  remix step with several url sources costs one ``video-analysis`` per url, a url longer than
  the limit is refused, and a footage step's own ``maxCredits`` still applies.
- Every capability any step needs is checked available before the run's project is looked up
  (credits.py): an unavailable one answers ``503 capability_unavailable``, never ``404``.
- ``maxCredits`` is checked against each step's price before anything runs: a step above it
  answers ``409 conflict`` (``step_price_above_max_credits``, with the step index, its
  operation, its price and the cap) and nothing is charged.
- The run is charged the sum of its steps' prices when it starts (one cost line per
  capability) and runs as one ``agent-run`` job under the run's project.
"""

from __future__ import annotations

import copy
from typing import Any

from mockserver.areas.generation.work import WORK, Work, priced
from mockserver.call import Call
from mockserver.platform import credits
from mockserver.platform.errors import ApiError, conflict, invalid_request

NOT_STEP_ARGUMENTS = ("projectId", "callbackUrl", "callbackSecret")


def _arguments(call: Call, index: int, operation: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The step's arguments validated as its operation's body (defaults filled in)."""
    at = f"steps/{index}/arguments"
    for name in NOT_STEP_ARGUMENTS:
        if name in arguments:
            raise invalid_request(
                f"{at}/{name}: a step's arguments leave out {name} (the run files every step "
                "under its own projectId and is observed as one job)",
                reason="not_a_step_argument",
                field=f"{at}/{name}",
                step=index,
            )
    body = copy.deepcopy({"projectId": call.body["projectId"], **arguments})
    try:
        return call.runtime.validators[operation].validate({}, [], {}, body).body
    except ApiError as error:
        details = dict(error.details or {})
        details["errors"] = [
            {**item, "path": f"/{at}{item['path']}"} for item in details.get("errors", [])
        ]
        raise ApiError(
            "invalid_request",
            f"{at} do not match {operation}'s request body: {error.message}",
            details={**details, "step": index, "operation": operation},
        ) from None


def plan(call: Call) -> list[dict[str, Any]]:
    """Every step checked (400) and its work, in order; nothing priced yet."""
    planned = []
    for index, step in enumerate(call.body["steps"]):
        operation = step["operation"]
        arguments = _arguments(call, index, operation, step["arguments"])
        work = WORK[operation](call, arguments, f"steps/{index}/arguments/")
        planned.append({"operation": operation, "work": work})
    return planned


def needs(planned: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """Every step's capability items, in order (checked available before the project)."""
    return [item for step in planned for item in step["work"].items]


def price(call: Call, planned: list[dict[str, Any]]) -> Work:
    """Each step priced from the live table and held to the caps; the run's whole work."""
    cap = call.body.get("maxCredits")
    totals: dict[str, int] = {}
    steps = []
    for index, step in enumerate(planned):
        lines = priced(call, step["work"], f"steps/{index}/arguments/")
        step_price = credits.total(lines)
        if cap is not None and step_price > cap:
            raise conflict(
                f"step {index} ({step['operation']}) costs {step_price} credits, above "
                f"maxCredits ({cap}); nothing ran and nothing was charged",
                reason="step_price_above_max_credits",
                step=index,
                operation=step["operation"],
                price=step_price,
                maxCredits=cap,
            )
        for capability, quantity in step["work"].items:
            totals[capability] = totals.get(capability, 0) + quantity
        steps.append(
            {
                "index": index,
                "operation": step["operation"],
                "credits": step_price,
                "work": step["work"].meta,
            }
        )
    meta = {"goal": call.body["goal"], "steps": steps, "maxCredits": cap}
    return Work(list(totals.items()), meta=meta)
