"""Defects for what a call means beyond its shape (the checks of conformance/checks/semantics.py):
defaults, the campaign's account, deterministic classification, the published document. Each
rewrites finished responses (``finish_response``) on the wire."""

from __future__ import annotations

import itertools
import json
from typing import Any

from mockserver.contract import Operation
from tests.defects.defect import Defect
from tests.defects.wire import Message, rewriting_responses


def _walk(node: Any) -> Any:
    """Every object within ``node``."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _default_not_applied(op: Operation | None, m: Message) -> None:
    # A saved autopilot without maxVideosPerDay answers 5 instead of the stated 3.
    if op is not None and op.operation_id in ("saveAutopilot", "getAutopilot") and m.status < 300:

        def change(value: Any) -> None:
            for node in _walk(value):
                if node.get("maxVideosPerDay") == 3:
                    node["maxVideosPerDay"] = 5

        m.rewrite(change)


def _unconnected_account_accepted(op: Operation | None, m: Message) -> None:
    if op is not None and op.operation_id == "createCommunityCampaign" and m.status in (400, 404):
        m.status = 200
        m.body = json.dumps({"success": True, "campaign": {"id": "cc_accepted"}}).encode()


_draws = itertools.count(1)


def _classification_drifts(op: Operation | None, m: Message) -> None:
    if op is not None and op.operation_id == "classifyThemes" and m.status == 200:
        drift = next(_draws) / 1000

        def change(value: Any) -> None:
            result = value.get("result") if isinstance(value, dict) else None
            if isinstance(result, dict) and isinstance(result.get("confidence"), float):
                result["confidence"] = round(result["confidence"] + drift, 3)

        m.rewrite(change)


def _deprecations_unmarked(op: Operation | None, m: Message) -> None:
    if op is not None and op.public and m.status == 200:

        def change(value: Any) -> None:
            for node in _walk(value):
                node.pop("deprecated", None)

        m.rewrite(change)


DEFECTS: dict[str, Defect] = {
    "default-not-applied": Defect(
        "an omitted field takes its stated default (autopilot maxVideosPerDay: 3)",
        rewriting_responses(_default_not_applied),
    ),
    "unconnected-account-accepted": Defect(
        "a community campaign needs a connected account of the workspace",
        rewriting_responses(_unconnected_account_accepted),
    ),
    "classification-drifts": Defect(
        "classification is deterministic", rewriting_responses(_classification_drifts)
    ),
    "deprecations-unmarked": Defect(
        "a deprecated field is marked deprecated: true in the OpenAPI document",
        rewriting_responses(_deprecations_unmarked),
    ),
}
