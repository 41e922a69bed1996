"""Defects for the checks that judge answers in general: the key's refusals, the response's
shape, valid input, and records reached through the contract's links. Each rewrites the wire
(``finish_response``, ``prepare_request``)."""

from __future__ import annotations

import json
from typing import Any

from mockserver.contract import Operation
from mockserver.platform.errors import ApiError
from mockserver.seams import Headers, Query
from tests.defects.defect import Defect
from tests.defects.wire import Message, rewriting_requests, rewriting_responses


def _error_text(m: Message) -> str:
    value = m.json()
    return str(value.get("error", "")) if isinstance(value, dict) else ""


def _malformed_key_answers_400(op: Operation | None, m: Message) -> None:
    if m.status == 401 and _error_text(m).startswith("malformed"):
        m.status = 400
        m.edit(code="invalid_request")


def _unknown_key_answers_404(op: Operation | None, m: Message) -> None:
    if m.status == 401 and _error_text(m) == "invalid API key":
        m.status = 404
        m.edit(code="not_found")


def _campaign_without_updated_at(op: Operation | None, m: Message) -> None:
    if op is not None and op.operation_id == "listCampaigns" and m.status == 200:

        def drop(value: Any) -> None:
            for campaign in value.get("campaigns", []):
                campaign.pop("updatedAt", None)

        m.rewrite(drop)


def _server_error_on_film_format(
    op: Operation, query: Query, headers: Headers, body: Any
) -> tuple[Query, Headers, Any]:
    if op.operation_id == "createFilmOutline" and isinstance(body, dict) and "format" in body:
        raise ApiError("internal_error", "the outline engine failed")
    return query, headers, body


_READS = ("getCommunityCampaign", "getProjectTranscript", "getJob", "getWebhookSubscription")


def _created_record_unreadable(op: Operation | None, m: Message) -> None:
    if op is not None and op.operation_id in _READS and m.status == 200:
        m.status = 404
        error = {"success": False, "error": "no such record", "code": "not_found"}
        m.body = json.dumps(error).encode()


DEFECTS: dict[str, Defect] = {
    "malformed-key-answers-400": Defect(
        "a malformed Authorization header answers 401 unauthorized",
        rewriting_responses(_malformed_key_answers_400),
    ),
    "unknown-key-answers-404": Defect(
        "an unknown key answers 401 unauthorized", rewriting_responses(_unknown_key_answers_404)
    ),
    "campaign-without-updated-at": Defect(
        "a campaign carries updatedAt (required in the response)",
        rewriting_responses(_campaign_without_updated_at),
    ),
    "server-error-on-film-format": Defect(
        "valid input never answers 5xx (a film outline with a format)",
        rewriting_requests(_server_error_on_film_format),
    ),
    "created-record-unreadable": Defect(
        "a link's target exists: a record just created can be read",
        rewriting_responses(_created_record_unreadable),
    ),
}
