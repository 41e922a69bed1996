"""Error responses list exactly the codes of the interface document's status table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

# The interface document's Errors table, transcribed (status -> codes).
STATUS_TABLE = {
    400: ("invalid_request",),
    401: ("unauthorized",),
    402: ("insufficient_credits", "budget_capped"),
    403: ("forbidden", "origin_not_allowed"),
    404: ("not_found",),
    409: ("conflict",),
    413: ("payload_too_large",),
    429: ("rate_limited",),
    500: ("internal_error", "upstream_error"),
    502: ("upstream_error",),
    503: ("capability_unavailable", "upstream_unavailable"),
}

INTERFACE_DOCUMENT = (
    Path(__file__).resolve().parents[3] / "shared" / "contract" / "interface-spec.md"
)


@pytest.mark.skipif(
    not INTERFACE_DOCUMENT.exists(), reason="the interface document is not beside this checkout"
)
def test_transcribed_table_matches_the_interface_document():
    text = INTERFACE_DOCUMENT.read_text(encoding="utf-8")
    section = text.split("## Errors", 1)[1].split("Rules:", 1)[0]
    table = {}
    for line in section.splitlines():
        match = re.match(r"\|\s*(\d{3})\s*\|(.*)\|\s*$", line)
        if match:
            # A status's codes are the backticked names before any parenthesised note.
            codes = re.findall(r"`([a-z_]+)`", re.sub(r"\([^)]*\)", "", match.group(2)))
            table[int(match.group(1))] = tuple(codes)
    assert table == STATUS_TABLE


def test_every_error_response_lists_exactly_its_statuss_codes(contract):
    seen = set()
    for op in contract.operations.values():
        for status, response in op.definition["responses"].items():
            if int(status) >= 400:
                assert contract.known_codes(response) == STATUS_TABLE[int(status)], (
                    op.operation_id,
                    status,
                )
                seen.add(int(status))
    assert seen == set(STATUS_TABLE)


def test_upstream_error_is_known_under_both_500_and_502(contract):
    table = contract.error_codes_by_status
    assert "upstream_error" in table[500] and "upstream_error" in table[502]


def test_error_schema_shape(doc):
    error = doc["components"]["schemas"]["Error"]
    assert error["required"] == ["success", "error", "code"]
    assert error["properties"]["success"] == {"const": False}
    assert error["properties"]["code"]["type"] == "string"
    assert error["properties"]["details"]["type"] == "object"
    assert "x-inferred" not in error


def test_codes_are_open_because_v1_codes_only_grow(contract, doc):
    # Each status's schema lists its known codes, and also admits a future code (handled by its
    # HTTP status) instead of rejecting it.
    schema = doc["components"]["schemas"]["ConflictError"]
    code = schema["allOf"][1]["properties"]["code"]
    assert code["anyOf"][0] == {"enum": ["conflict"]}
    assert contract.resolve(code["anyOf"][1]) == {
        "description": doc["components"]["schemas"]["FutureErrorCode"]["description"],
        "type": "string",
    }
