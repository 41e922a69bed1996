"""Error responses list exactly the codes of the interface document's status table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

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


def _validator(doc, name):
    # The whole document is the schema's resource, so `#/components/...` references resolve.
    return Draft202012Validator({**doc, "$ref": f"#/components/schemas/{name}"})


ERROR_SCHEMAS = {
    400: "InvalidRequestError",
    401: "UnauthorizedError",
    402: "PaymentRequiredError",
    403: "ForbiddenError",
    404: "NotFoundError",
    409: "ConflictError",
    413: "PayloadTooLargeError",
    429: "RateLimitedError",
    500: "InternalServerError",
    502: "BadGatewayError",
    503: "ServiceUnavailableError",
}


@pytest.mark.parametrize("status,name", sorted(ERROR_SCHEMAS.items()))
def test_codes_are_open_because_v1_codes_only_grow(contract, doc, status, name):
    # Each status's schema lists its known codes in `x-known-codes` on a plain `type: string`
    # (a form code generators read), so a future code (handled by its HTTP status) is accepted
    # instead of rejected; and `code` is still a string.
    schema = doc["components"]["schemas"][name]
    assert {"$ref": "#/components/schemas/Error"} in schema["allOf"]
    codes = [
        contract.resolve(part).get("properties", {}).get("code")
        for part in schema["allOf"]
        if "code" in contract.resolve(part).get("properties", {})
    ]
    declared = [c for c in codes if "x-known-codes" in c]
    assert len(declared) == 1, name
    assert declared[0] == {"type": "string", "x-known-codes": list(STATUS_TABLE[status])}
    validator = _validator(doc, name)
    body = {"success": False, "error": "e", "code": STATUS_TABLE[status][0]}
    assert validator.is_valid(body)
    assert validator.is_valid({**body, "code": "a_code_v1_adds_later"})
    assert not validator.is_valid({**body, "code": 409})
    assert not validator.is_valid({**body, "details": "not an object"})


def test_no_open_enum_left_for_generators_to_trip_on(doc):
    # `anyOf: [{enum}, {type: string}]` made openapi-python-client drop every error schema.
    text = json.dumps(doc["components"]["schemas"])
    assert "FutureErrorCode" not in text
    for name in ERROR_SCHEMAS.values():
        for part in doc["components"]["schemas"][name]["allOf"]:
            assert "anyOf" not in part.get("properties", {}).get("code", {}), name


@pytest.mark.parametrize(
    "name,details,good,bad",
    [
        (
            "PaymentRequiredError",
            "CreditShortfall",
            {"price": 150, "balance": 100, "shortfall": 50},
            {"shortfall": 0},
        ),
        ("ConflictError", "ConflictDetails", {"currentGeneration": 2}, {"reason": 7}),
        ("InvalidRequestError", "InvalidRequestDetails", {"reason": "x"}, {"errors": "x"}),
    ],
)
def test_typed_details_come_first_so_generators_type_them(contract, doc, name, details, good, bad):
    # The part that types `details` is listed before `Error` (see its description): a generator
    # that keeps the first declaration of a property then types `details` by it.
    parts = doc["components"]["schemas"][name]["allOf"]
    first = contract.resolve(parts[0])
    assert first["properties"]["details"] == {"$ref": f"#/components/schemas/{details}"}
    assert parts[1] == {"$ref": "#/components/schemas/Error"}
    validator = _validator(doc, name)
    body = {"success": False, "error": "e", "code": STATUS_TABLE[_status(name)][0]}
    assert validator.is_valid({**body, "details": good})
    assert not validator.is_valid({**body, "details": bad})


def _status(name: str) -> int:
    return next(status for status, schema in ERROR_SCHEMAS.items() if schema == name)
