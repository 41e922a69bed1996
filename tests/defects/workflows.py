"""Defects of workflow rules: a paused autopilot (``refuse_paused_autopilot``), a stale
``expectedGeneration`` (``check_expected_generation``), remix pricing (``remix_work_items``), a
stale word cursor (``refuse_stale_word_cursor``), and on the wire ``maxCredits`` and the
projects list's pre-switch cursors (``prepare_request``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mockserver.areas.projects.state import LEGACY_CURSOR_PREFIX
from mockserver.contract import Operation
from mockserver.seams import Headers, Query, Seams
from tests.defects.defect import Defect
from tests.defects.wire import rewriting_requests

Record = dict[str, Any]
CAPPED = ("createFootage", "createAgentRun")  # the operations that take maxCredits


def _paused_autopilot_runs(seams: Seams) -> Seams:
    def refuse_paused_autopilot(autopilot: Record) -> None:
        return None  # a paused autopilot runs, approves and retries as an enabled one

    return replace(seams, refuse_paused_autopilot=refuse_paused_autopilot)


def _stale_generation_accepted(seams: Seams) -> Seams:
    def check_expected_generation(expected: int | float, current: int) -> None:
        return None  # any expectedGeneration re-cuts the current revision

    return replace(seams, check_expected_generation=check_expected_generation)


def _remix_priced_flat(seams: Seams) -> Seams:
    previous = seams.remix_work_items

    def remix_work_items(url_sources: int, transcripts: int, output_format: str) -> list[Any]:
        return previous(min(url_sources, 1), transcripts, output_format)  # one analysis for all

    return replace(seams, remix_work_items=remix_work_items)


def _stale_word_cursor_served(seams: Seams) -> Seams:
    def refuse_stale_word_cursor(version: int, current: int) -> None:
        return None  # a cursor of an earlier composition keeps paging

    return replace(seams, refuse_stale_word_cursor=refuse_stale_word_cursor)


def _max_credits_ignored(
    op: Operation, query: Query, headers: Headers, body: Any
) -> tuple[Query, Headers, Any]:
    if op.operation_id in CAPPED and isinstance(body, dict):
        body.pop("maxCredits", None)
    return query, headers, body


def _legacy_cursor_accepted(
    op: Operation, query: Query, headers: Headers, body: Any
) -> tuple[Query, Headers, Any]:
    if op.operation_id == "listProjects":
        query = [
            (k, v) for k, v in query if k != "cursor" or not v.startswith(LEGACY_CURSOR_PREFIX)
        ]
    return query, headers, body


DEFECTS: dict[str, Defect] = {
    "paused-autopilot-runs": Defect(
        "a paused autopilot refuses manual runs, approvals and retries with 409",
        _paused_autopilot_runs,
    ),
    "stale-generation-accepted": Defect(
        "a stale expectedGeneration answers 409 conflict with details.currentGeneration",
        _stale_generation_accepted,
    ),
    "remix-priced-flat": Defect(
        "a remix costs one video analysis per url source", _remix_priced_flat
    ),
    "max-credits-ignored": Defect(
        "a live price above maxCredits answers 409 conflict, nothing charged",
        rewriting_requests(_max_credits_ignored),
    ),
    "stale-word-cursor-served": Defect(
        "a wordCursor of a changed composition answers 409 stale_cursor",
        _stale_word_cursor_served,
    ),
    "legacy-cursor-accepted": Defect(
        "GET /v1/projects refuses cursors issued before the 2026-10-10 store switch",
        rewriting_requests(_legacy_cursor_accepted),
    ),
}
