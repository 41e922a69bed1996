"""A secret sent in a request is never echoed: not in an error message, a header or the journal.

The contract marks every secret field ``writeOnly: true`` and ``x-secret: true``. A request whose
secret breaks a rule (too short, too long, the wrong type), or that carries a secret while
something else in the body is wrong, or whose body is not an object at all, answers
``400 invalid_request`` whose ``details.errors`` still names the field and the rule broken,
but no message quotes the secret. The secret's content is any text (quotes, backslashes,
non-ASCII): redaction is structural, not a search for the secret's text.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockserver.contract import Contract, default_contract
from mockserver.platform.errors import ApiError
from mockserver.platform.validation import OperationValidator

CONTRACT = default_contract()
CALLBACK_URL = "https://hooks.example.com/x"
SUBSCRIPTION_URL = "https://93.184.216.34/h"

# (operationId, field, a valid body without the secret, a change that breaks another rule)
FIELDS: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    (
        "createWebhookSubscription",
        "secret",
        {"url": SUBSCRIPTION_URL, "events": ["job.completed"]},
        {"events": []},
    ),
    ("updateWebhookSubscription", "secret", {}, {"enabled": "yes"}),
    (
        "renderVideo",
        "callbackSecret",
        {"projectId": "prj_acme_01", "story": "A walk.", "callbackUrl": CALLBACK_URL},
        {"story": ""},
    ),
    (
        "editVideo",
        "callbackSecret",
        {
            "projectId": "prj_acme_01",
            "footageUrls": ["https://videos.example.com/cooking/perfect-rice"],
            "callbackUrl": CALLBACK_URL,
        },
        {"footageUrls": []},
    ),
    (
        "createModelFromText",
        "callbackSecret",
        {"projectId": "prj_acme_01", "prompt": "A teapot", "callbackUrl": CALLBACK_URL},
        {"prompt": ""},
    ),
    (
        "createModelFromImage",
        "callbackSecret",
        {
            "projectId": "prj_acme_01",
            "imageUrl": "https://images.example.com/teapot.png",
            "callbackUrl": CALLBACK_URL,
        },
        {"imageUrl": 7},
    ),
]
IDS = [f"{op}.{field}" for op, field, _, _ in FIELDS]

# Any text: quotes, backslashes, control and non-ASCII characters (no lone surrogates: JSON
# encoders refuse them).
CHARACTERS = st.one_of(
    st.sampled_from(['"', "\\", "'", "é", "€", "😀", "\n", "\u2028", "{", "}"]),
    st.characters(exclude_categories=("Cs",)),
)


def secrets(low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(CHARACTERS, min_size=low, max_size=high)


SHORT = secrets(20, 31)
LONG = secrets(513, 560)
VALID = secrets(32, 64)
SETTINGS = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _secret_marks(schema: Any, path: str, found: set[str], seen: frozenset[str]) -> None:
    """JSON pointers (``*`` for array items) of the fields marked x-secret under a schema."""
    if not isinstance(schema, dict):
        return
    if "$ref" in schema:
        ref = schema["$ref"]
        if ref not in seen:
            _secret_marks(CONTRACT.pointer(ref), path, found, seen | {ref})
    if schema.get("x-secret") is True:
        found.add(path)
    for key in ("allOf", "anyOf", "oneOf"):
        for part in schema.get(key, []):
            _secret_marks(part, path, found, seen)
    for name, sub in schema.get("properties", {}).items():
        _secret_marks(sub, f"{path}/{name}", found, seen)
    if "items" in schema:
        _secret_marks(schema["items"], f"{path}/*", found, seen)


def test_every_secret_field_is_marked_write_only_and_secret():
    marked: dict[str, set[str]] = {}
    for op_id, op in CONTRACT.operations.items():
        body = op.definition.get("requestBody")
        if body is None:
            continue
        schema = CONTRACT.resolve(body)["content"]["application/json"]["schema"]
        found: set[str] = set()
        _secret_marks(schema, "", found, frozenset())
        if found:
            marked[op_id] = found
    assert marked == {op: {f"/{field}"} for op, field, _, _ in FIELDS}
    schemas = CONTRACT.document["components"]["schemas"]
    for name in ("WebhookSubscriptionCreate", "WebhookSubscriptionPatch", "WebhookSubscription"):
        secret = schemas[name]["properties"]["secret"]
        assert secret.get("writeOnly") is True and secret.get("x-secret") is True, name
        assert not secret.get("x-inferred"), name
    callback = schemas["CallbackSecret"]
    assert callback.get("writeOnly") is True and callback.get("x-secret") is True
    assert not callback.get("x-inferred")
    assert "x-secret" in CONTRACT.document["info"]["description"]


def send(api, op_id: str, body: Any):
    op = CONTRACT.operations[op_id]
    path = op.path.replace("{subscriptionId}", "whk_nope")
    headers = {"Idempotency-Key": "secret-test"} if op_id == "createWebhookSubscription" else {}
    # Sent as bytes, so that the test controls the encoding of the secret exactly.
    return api.request(
        op.method,
        path,
        content=json.dumps(body, ensure_ascii=False).encode(),
        headers={"Content-Type": "application/json", **headers},
    )


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in (k, *_strings(v))]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def assert_not_echoed(response, secret: str) -> None:
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    for form in forms:
        assert form not in response.text, response.text
        for name, value in response.headers.items():
            assert form not in value, (name, value)
    for text in _strings(response.json()):
        assert secret not in text, text


def refused(response) -> list[dict[str, str]]:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "invalid_request", response.text
    errors = body["details"]["errors"]
    assert body["error"].endswith(errors[0]["message"])
    return errors


def assert_names(errors: list[dict[str, str]], path: str, rule: str, field: str) -> None:
    match = [e for e in errors if e["path"] == path and e["rule"] == rule]
    assert match, errors
    assert field in match[0]["message"], match[0]


@pytest.mark.parametrize(("op_id", "field", "base", "breaks"), FIELDS, ids=IDS)
@given(secret=SHORT)
@SETTINGS
def test_a_too_short_secret_is_not_echoed(api, control, op_id, field, base, breaks, secret):
    control.reset()  # each example starts fresh (rate limit, state)
    response = send(api, op_id, {**base, field: secret})
    assert_not_echoed(response, secret)
    assert_names(refused(response), f"/{field}", "minLength", field)
    assert "32" in response.json()["error"]


@pytest.mark.parametrize(("op_id", "field", "base", "breaks"), FIELDS, ids=IDS)
@given(secret=LONG)
@SETTINGS
def test_a_too_long_secret_is_not_echoed(api, control, op_id, field, base, breaks, secret):
    control.reset()  # each example starts fresh (rate limit, state)
    response = send(api, op_id, {**base, field: secret})
    assert_not_echoed(response, secret)
    assert_names(refused(response), f"/{field}", "maxLength", field)
    assert "512" in response.json()["error"]


@pytest.mark.parametrize(("op_id", "field", "base", "breaks"), FIELDS, ids=IDS)
@given(number=st.integers(min_value=10**15, max_value=2**53))
@SETTINGS
def test_a_number_as_the_secret_is_not_echoed(api, control, op_id, field, base, breaks, number):
    control.reset()  # each example starts fresh (rate limit, state)
    response = send(api, op_id, {**base, field: number})
    assert str(number) not in response.text
    assert_names(refused(response), f"/{field}", "type", field)


@pytest.mark.parametrize(("op_id", "field", "base", "breaks"), FIELDS, ids=IDS)
@pytest.mark.parametrize("wrap", ["array", "object", "nested array"])
@given(secret=VALID)
@SETTINGS
def test_a_secret_of_the_wrong_type_is_not_echoed(
    api, control, op_id, field, base, breaks, wrap, secret
):
    control.reset()  # each example starts fresh (rate limit, state)
    value = {"array": [secret], "object": {"value": secret}, "nested array": [[secret, 1]]}[wrap]
    response = send(api, op_id, {**base, field: value})
    assert_not_echoed(response, secret)
    assert_names(refused(response), f"/{field}", "type", field)


@pytest.mark.parametrize(("op_id", "field", "base", "breaks"), FIELDS, ids=IDS)
@given(secret=st.one_of(VALID, SHORT, LONG))
@SETTINGS
def test_a_secret_beside_another_broken_rule_is_not_echoed(
    api, control, op_id, field, base, breaks, secret
):
    control.reset()  # each example starts fresh (rate limit, state)
    response = send(api, op_id, {**base, field: secret, **breaks})
    assert_not_echoed(response, secret)
    errors = refused(response)
    (other,) = breaks
    assert any(e["path"] == f"/{other}" for e in errors), errors
    response = send(api, op_id, {**base, field: secret, "colour": "red"})
    assert_not_echoed(response, secret)
    assert any(e["rule"] == "unknownField" for e in refused(response))


@pytest.mark.parametrize(("op_id", "field", "base", "breaks"), FIELDS, ids=IDS)
@pytest.mark.parametrize("shape", ["array of the body", "array of the secret", "the secret"])
@given(secret=VALID)
@SETTINGS
def test_a_body_that_is_not_an_object_does_not_echo_its_secret(
    api, control, op_id, field, base, breaks, shape, secret
):
    control.reset()  # each example starts fresh (rate limit, state)
    body = {
        "array of the body": [{**base, field: secret}],
        "array of the secret": [secret],
        "the secret": secret,
    }[shape]
    response = send(api, op_id, body)
    assert_not_echoed(response, secret)
    assert_names(refused(response), "", "type", "object")


@given(secret=st.one_of(VALID, SHORT))
@SETTINGS
def test_an_agent_step_carrying_a_secret_does_not_echo_it(api, control, secret):
    control.reset()  # each example starts fresh (rate limit, state)
    step = {
        "operation": "renderVideo",
        "arguments": {"story": "A walk.", "callbackUrl": CALLBACK_URL, "callbackSecret": secret},
    }
    cases = [
        ([step], None),  # refused as not a step argument (naming it, not its value)
        ([step] * 21, ("/steps", "maxItems")),  # the whole array is what breaks the rule
        ([{**step, "operation": "noSuchOperation"}], ("/steps/0/operation", "enum")),
    ]
    for steps, expected in cases:
        response = api.post(
            "/v1/agent/runs",
            json={"projectId": "prj_acme_01", "goal": "A short", "steps": steps},
        )
        assert_not_echoed(response, secret)
        assert response.status_code == 400 and response.json()["code"] == "invalid_request"
        if expected is not None:
            errors = refused(response)
            assert any((e["path"], e["rule"]) == expected for e in errors), errors


def test_the_journal_and_snapshot_keep_no_secret(api, control):
    secret = 'journal "secret" \\ ' + "é" * 5
    send(api, "renderVideo", {**FIELDS[2][2], "callbackSecret": secret})
    send(api, "createWebhookSubscription", {**FIELDS[0][2], "secret": secret + "x" * 20})
    for path in ("/requests?limit=50", "/snapshot"):
        text = json.dumps(control.call("GET", path), ensure_ascii=False)
        assert secret not in text and json.dumps(secret)[1:-1] not in text


# -- redaction of errors reported at an ancestor of a secret (a synthetic contract) ------------

SYNTHETIC = {
    "openapi": "3.1.0",
    "x-limits": {"integerRange": [-(2**63), 2**63 - 1]},
    "paths": {
        "/x": {
            "post": {
                "operationId": "x",
                "requestBody": {
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/B"}}}
                },
            }
        }
    },
    "components": {
        "schemas": {
            "Key": {"type": "string", "writeOnly": True, "x-secret": True, "minLength": 32},
            "B": {
                "type": "object",
                "maxProperties": 3,
                "not": {"required": ["forbidden"]},
                "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
                "properties": {
                    "token": {"$ref": "#/components/schemas/Key"},
                    "keys": {
                        "type": "array",
                        "uniqueItems": True,
                        "maxItems": 1,
                        "items": {
                            "allOf": [
                                {
                                    "type": "object",
                                    "properties": {"key": {"$ref": "#/components/schemas/Key"}},
                                }
                            ],
                            "enum": [{"key": "k" * 40}],
                        },
                    },
                },
            },
        }
    },
}


@given(secret=VALID)
@SETTINGS
def test_an_error_at_an_ancestor_of_a_secret_names_no_value(secret):
    validator = OperationValidator(Contract(SYNTHETIC), Contract(SYNTHETIC).operations["x"])
    bodies = [
        {"token": secret, "forbidden": 1, "a": 1, "b": 2},
        {"keys": [{"key": secret}, {"key": secret}], "a": 1},
        {"token": secret[:5] + secret, "keys": [{"key": secret}], "b": 1},
    ]
    for body in bodies:
        with pytest.raises(ApiError) as raised:
            validator.validate({}, [], {}, body)
        text = json.dumps(raised.value.body(), ensure_ascii=False)
        assert secret not in text and json.dumps(secret)[1:-1] not in text, text
        assert secret not in raised.value.message
        for error in raised.value.details["errors"]:
            assert error["rule"] and error["message"], error
