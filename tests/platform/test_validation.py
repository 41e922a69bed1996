"""Bad input answers 4xx with the standard error body: never a 500, never half-written state."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockserver.contract import default_contract

MAX_BODY = default_contract().limits["maxRequestBodyBytes"]


def error_of(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is False and body["code"] == code and body["error"]
    return body


def test_malformed_json_is_400(api):
    response = api.patch(
        "/v1/channels/chn_money_minute",
        content=b'{"name": ',
        headers={"Content-Type": "application/json"},
    )
    assert error_of(response, 400, "invalid_request")["details"]["reason"] == "malformed_json"


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_that_is_not_json_is_400(api, content_type):
    headers = {"Content-Type": content_type} if content_type else {}
    response = api.patch("/v1/channels/chn_money_minute", content=b"name=x", headers=headers)
    assert (
        error_of(response, 400, "invalid_request")["details"]["reason"] == "unsupported_media_type"
    )


def test_json_nan_is_not_json(api):
    response = api.patch(
        "/v1/channels/chn_money_minute",
        content=b'{"name": NaN}',
        headers={"Content-Type": "application/json"},
    )
    assert error_of(response, 400, "invalid_request")["details"]["reason"] == "malformed_json"


def test_wrong_types_name_each_field_and_rule(api):
    response = api.patch(
        "/v1/channels/chn_money_minute", json={"name": 7, "enabled": "yes", "niche": "x" * 201}
    )
    errors = error_of(response, 400, "invalid_request")["details"]["errors"]
    found = {(e["location"], e["path"], e["rule"]) for e in errors}
    assert {
        ("body", "/name", "type"),
        ("body", "/enabled", "type"),
        ("body", "/niche", "maxLength"),
    } <= found
    for error in errors:
        assert error["message"]


def test_unknown_body_fields_are_refused(api):
    response = api.patch("/v1/channels/chn_money_minute", json={"name": "x", "colour": "red"})
    errors = error_of(response, 400, "invalid_request")["details"]["errors"]
    assert errors == [
        {
            "location": "body",
            "path": "/colour",
            "rule": "unknownField",
            "message": "unknown field 'colour'",
        }
    ]


def test_unknown_query_parameters_are_refused(api):
    response = api.get("/v1/campaigns", params={"limt": 5})
    errors = error_of(response, 400, "invalid_request")["details"]["errors"]
    assert errors[0]["location"] == "query" and errors[0]["rule"] == "unknownParameter"


def test_repeated_query_parameters_are_refused(api):
    response = api.get("/v1/campaigns", params=[("limit", "5"), ("limit", "6")])
    assert error_of(response, 400, "invalid_request")["details"]["errors"][0]["rule"] == "duplicate"


@pytest.mark.parametrize("limit", ["0", "101", "-1", "ten", "1.5", ""])
def test_limit_out_of_bounds_is_400(api, limit):
    error_of(api.get("/v1/campaigns", params={"limit": limit}), 400, "invalid_request")


def test_a_body_above_the_limit_is_413_and_writes_nothing(api):
    before = api.get("/v1/channels").json()
    huge = json.dumps({"description": "x" * (MAX_BODY + 1)}).encode()
    response = api.patch(
        "/v1/channels/chn_money_minute", content=huge, headers={"Content-Type": "application/json"}
    )
    error_of(response, 413, "payload_too_large")
    assert api.get("/v1/channels").json()["channels"] == before["channels"]


def test_a_body_just_under_the_limit_is_judged_by_the_schema(api):
    body = json.dumps({"description": "x" * (MAX_BODY - 100)}).encode()
    response = api.patch(
        "/v1/channels/chn_money_minute", content=body, headers={"Content-Type": "application/json"}
    )
    assert error_of(response, 400, "invalid_request")["details"]["errors"][0]["rule"] == "maxLength"


def test_a_missing_body_is_400(api):
    response = api.patch("/v1/channels/chn_money_minute")
    assert error_of(response, 400, "invalid_request")["details"]["errors"][0]["location"] == "body"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
channel_fields = st.sampled_from(
    ["name", "niche", "description", "accentColor", "voicePreset", "products", "enabled"]
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=st.dictionaries(channel_fields | st.text(max_size=8), json_values, max_size=4))
def test_any_channel_patch_is_accepted_whole_or_refused_whole(api, control, body):
    control.reset()
    before = {c["id"]: c for c in api.get("/v1/channels").json()["channels"]}["chn_carry_on"]
    response = api.patch("/v1/channels/chn_carry_on", json=body)
    assert response.status_code in (200, 400, 404), response.text
    after = {c["id"]: c for c in api.get("/v1/channels").json()["channels"]}["chn_carry_on"]
    if response.status_code == 200:
        assert after == response.json()["channel"]
        for field, value in body.items():
            assert after[field] == value
    else:
        assert after == before, "a refused request writes nothing"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=st.binary(max_size=200))
def test_any_bytes_as_a_body_never_cause_a_5xx(api, raw):
    response = api.post(
        "/v1/products",
        content=raw,
        headers={"Content-Type": "application/json", "Idempotency-Key": "fuzz"},
    )
    assert response.status_code < 500
