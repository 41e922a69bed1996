"""Integer and number parameters in query and path follow the contract's representable range.

Any integer text is read as an integer (no digit cap); an integer outside
``x-limits.integerRange`` answers ``400 invalid_request`` naming the parameter and the rule
``integerRange``; a number too large for a double is refused rather than read as infinity.
Whatever an operation then does with a huge but representable integer, it never answers 5xx.
Every integer parameter is found by walking the contract, not listed by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from mockserver.contract import default_contract

CONTRACT = default_contract()
LOW, HIGH = CONTRACT.limits["integerRange"]

# Ids from the fixtures for the path templates of operations with integer parameters; a jobId
# is created by the test (there are no fixture jobs).
PATH_VALUES = {
    "projectId": "prj_acme_01",
    "batchId": "vb_acme_01",
    "assetId": "ast_acme_01",
    "domain": "cooking",
    "channelId": "chn_money_minute",
    "campaignId": "cmp_acme_002",
}


def _schema_type(schema: dict[str, Any]) -> str | None:
    """The parameter schema's type, following references and allOf branches."""
    schema = CONTRACT.resolve(schema)
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    for part in schema.get("allOf", []):
        found = _schema_type(part)
        if found:
            return found
    return None


def _params(kinds: tuple[str, ...]) -> list[tuple[str, str, str, str]]:
    """(operationId, path template, location, name) of every query or path parameter."""
    found = []
    for op_id, op in CONTRACT.operations.items():
        if op.method != "GET" and op.public:
            continue
        for raw in op.parameters:
            param = CONTRACT.resolve(raw)
            if param["in"] in ("query", "path") and _schema_type(param.get("schema", {})) in kinds:
                found.append((op_id, op.path, param["in"], param["name"]))
    return found


INTEGER_PARAMS = _params(("integer",))
NUMBER_PARAMS = _params(("number",))


def test_the_contract_has_integer_parameters_to_check():
    names = {(op, name) for op, _, _, name in INTEGER_PARAMS}
    assert ("getHookStats", "offset") in names and ("listJobEvents", "after") in names
    assert [LOW, HIGH] == [-(2**63), 2**63 - 1]


def _request(api, op_id: str, template: str, location: str, name: str, text: str):
    op = CONTRACT.operations[op_id]
    values = dict(PATH_VALUES)
    if "{jobId}" in template:
        job = api.post(
            "/v1/video/edit",
            json={
                "projectId": "prj_acme_01",
                "footageUrls": ["https://videos.example.com/cooking/perfect-rice"],
            },
        )
        assert job.status_code == 200, job.text
        values["jobId"] = job.json()["job"]["id"]
    if location == "path":
        values[name] = text
    path = template.format(**values)
    params = {name: text} if location == "query" else None
    return api.request(op.method, path, params=params)


def _errors_at(response, location: str, name: str) -> list[dict[str, str]]:
    if response.status_code != 400:
        return []
    body = response.json()
    assert body["success"] is False and body["code"] == "invalid_request", response.text
    return [
        e
        for e in body.get("details", {}).get("errors", [])
        if e["location"] == location and e["path"] == f"/{name}"
    ]


ACCEPTED = {"10^18": str(10**18), "2^63-1": str(2**63 - 1), "-2^63": str(-(2**63))}
REFUSED = {
    "2^63": str(2**63),
    "-2^63-1": str(-(2**63) - 1),
    "5000 digits": "9" * 5000,
    "-5000 digits": "-" + "1" * 5000,
}


@pytest.mark.parametrize("value", list(ACCEPTED.values()), ids=list(ACCEPTED))
@pytest.mark.parametrize(
    ("op_id", "template", "location", "name"),
    INTEGER_PARAMS,
    ids=[f"{op}.{name}" for op, _, _, name in INTEGER_PARAMS],
)
def test_a_representable_integer_is_read_as_an_integer(api, op_id, template, location, name, value):
    response = _request(api, op_id, template, location, name, value)
    assert response.status_code < 500, response.text
    for error in _errors_at(response, location, name):
        # Refused, if at all, by the parameter's own bounds: never as "not an integer".
        assert error["rule"] not in ("type", "integerRange"), response.text
        assert error["rule"] in ("minimum", "maximum"), response.text


@pytest.mark.parametrize("value", list(REFUSED.values()), ids=list(REFUSED))
@pytest.mark.parametrize(
    ("op_id", "template", "location", "name"),
    INTEGER_PARAMS,
    ids=[f"{op}.{name}" for op, _, _, name in INTEGER_PARAMS],
)
def test_an_integer_outside_the_range_is_400_integer_range(
    api, op_id, template, location, name, value
):
    response = _request(api, op_id, template, location, name, value)
    assert response.status_code == 400, response.text
    errors = _errors_at(response, location, name)
    assert [e["rule"] for e in errors] == ["integerRange"], response.text
    assert value not in response.text or len(value) < 30
    assert "2^63" in errors[0]["message"]
    assert response.json()["details"]["reason"] == "number_out_of_range"


@pytest.mark.parametrize("text", ["1e18", "1.5", "12abc", "", " 7", "0x10", "+5", "٣"])
def test_text_that_is_not_an_integer_is_a_type_error(api, text):
    response = api.get("/v1/hooks/stats", params={"offset": text})
    assert response.status_code == 400, response.text
    errors = _errors_at(response, "query", "offset")
    assert [e["rule"] for e in errors] == ["type"], response.text


def test_a_huge_offset_is_an_empty_page(api):
    for path in ("/v1/hooks/stats", "/v1/hooks", "/v1/video/catalog/cooking"):
        response = api.get(path, params={"offset": str(10**18)})
        assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("op_id", "template", "location", "name"),
    NUMBER_PARAMS,
    ids=[f"{op}.{name}" for op, _, _, name in NUMBER_PARAMS],
)
@pytest.mark.parametrize("text", ["1e400", "-1e400", "1" * 400, "1" * 5000 + ".5"])
def test_a_number_a_double_cannot_hold_is_refused(api, op_id, template, location, name, text):
    response = _request(api, op_id, template, location, name, text)
    assert response.status_code == 400, response.text
    errors = _errors_at(response, location, name)
    assert [e["rule"] for e in errors] == ["numberRange"], response.text
    assert "inf" not in errors[0]["message"].lower()


@pytest.mark.parametrize(
    ("op_id", "template", "location", "name"),
    NUMBER_PARAMS,
    ids=[f"{op}.{name}" for op, _, _, name in NUMBER_PARAMS],
)
@pytest.mark.parametrize("text", ["1e308", "50", "50.5", str(10**18), "1e-400"])
def test_a_number_a_double_holds_is_read_as_a_number(api, op_id, template, location, name, text):
    response = _request(api, op_id, template, location, name, text)
    assert response.status_code < 500, response.text
    for error in _errors_at(response, location, name):
        assert error["rule"] in ("minimum", "maximum"), response.text
