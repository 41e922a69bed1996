"""Shapes third-party tools read: open responses, inline callbacks, bounds and marks they found.

Code generators (tests/generators) and linters read the contract as well as this kit does; these
tests hold the shapes they need without loosening a stated constraint.
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from mockserver.contract import Contract

from .test_operations import CALLBACK_OPERATIONS


def _closed(node: Any) -> bool:
    extra = node.get("additionalProperties")
    if extra is False:
        return True
    return isinstance(extra, dict) and extra.get("$ref", "").endswith("/NoUnknownFields")


def _closed_objects(contract: Contract, node: Any, trail: tuple, seen: frozenset) -> list[tuple]:
    """Trails to every closed object schema reachable from `node`."""
    found: list[tuple] = []
    if isinstance(node, list):
        for item in node:
            found += _closed_objects(contract, item, trail, seen)
        return found
    if not isinstance(node, dict):
        return found
    if "$ref" in node:
        ref = node["$ref"]
        if ref not in seen:
            found += _closed_objects(
                contract, contract.pointer(ref), (*trail, ref.rsplit("/", 1)[-1]), seen | {ref}
            )
    if _closed(node):
        found.append(trail)
    for key, value in node.items():
        if key in ("$ref", "additionalProperties", "x-defaults", "examples", "example"):
            continue
        step = trail if key in ("properties", "allOf", "anyOf", "oneOf", "items") else (*trail, key)
        found += _closed_objects(contract, value, step, seen)
    return found


def test_response_objects_are_open(contract, doc):
    # Responses may gain fields (interface document, Errors and Versioning), so no object a
    # response, a webhook body or a callback body carries refuses unknown members.
    closed = []
    for op in contract.operations.values():
        for status, response in op.definition["responses"].items():
            for media in contract.resolve(response).get("content", {}).values():
                closed += _closed_objects(
                    contract, media.get("schema", {}), (op.operation_id, status), frozenset()
                )
    for name, item in doc["webhooks"].items():
        closed += _closed_objects(contract, item["post"]["requestBody"], (name,), frozenset())
    closed += _closed_objects(contract, doc["components"]["callbacks"], ("callback",), frozenset())
    assert closed == []


@pytest.mark.parametrize(
    "request_name,response_name",
    [
        ("CampaignSchedule", "CampaignScheduleRead"),
        ("CampaignCaps", "CampaignCapsRead"),
        ("CommunitySchedule", "CommunityScheduleRead"),
    ],
)
def test_request_variants_stay_closed_and_response_variants_keep_their_bounds(
    doc, request_name, response_name
):
    schemas = doc["components"]["schemas"]
    request, response = schemas[request_name], schemas[response_name]
    assert _closed(request)
    assert response["additionalProperties"] is True
    assert set(request["properties"]) == set(response["properties"])
    for name, member in request["properties"].items():
        if name == "window":  # the one nested object: same members, open in the response
            assert member["properties"] == response["properties"]["window"]["properties"]
            assert _closed(member) and response["properties"]["window"]["additionalProperties"]
        else:
            assert member == response["properties"][name], name
    assert request.get("x-inferred") == response.get("x-inferred")


def test_responses_use_the_open_variants_and_requests_the_closed_ones(doc):
    schemas = doc["components"]["schemas"]
    campaign = schemas["Campaign"]["properties"]
    assert campaign["schedule"]["$ref"].endswith("/CampaignScheduleRead")
    assert campaign["caps"]["$ref"].endswith("/CampaignCapsRead")
    community = schemas["CommunityCampaign"]["properties"]
    assert community["schedule"]["$ref"].endswith("/CommunityScheduleRead")
    patch = schemas["CampaignPatch"]["properties"]
    assert patch["schedule"]["$ref"].endswith("/CampaignSchedule")
    assert patch["caps"]["$ref"].endswith("/CampaignCaps")
    for name in ("CommunityCampaignCreate", "CommunityCampaignPatch"):
        assert schemas[name]["properties"]["schedule"]["$ref"].endswith("/CommunitySchedule")


def _query_parameter(contract: Contract, operation_id: str, name: str) -> dict[str, Any]:
    for raw in contract.operations[operation_id].parameters:
        param = contract.resolve(raw)
        if param["in"] == "query" and param["name"] == name:
            return param
    raise AssertionError(f"{operation_id} has no query parameter {name}")


def _refuses_empty(schema: dict[str, Any]) -> bool:
    validator = Draft202012Validator(schema)
    return not validator.is_valid("") and validator.is_valid("c")


def test_every_cursor_parameter_refuses_an_empty_cursor_and_says_it_is_inferred(contract):
    # The interface document says a cursor is the previous page's `nextCursor`; it does not say
    # one is never empty, so the bound is this contract's choice, marked as such.
    cursors = [
        (op.operation_id, name)
        for op in contract.operations.values()
        for raw in op.parameters
        for name in [contract.resolve(raw)["name"]]
        if contract.resolve(raw)["in"] == "query" and name in ("cursor", "wordCursor")
    ]
    assert len(cursors) >= 15
    for operation_id, name in cursors:
        param = _query_parameter(contract, operation_id, name)
        schema = param["schema"]
        assert _refuses_empty(schema), (operation_id, name)
        if param.get("x-inferred"):
            continue  # the whole parameter is this contract's choice (listChannels)
        assert "minLength" not in schema, (operation_id, name)
        assert {"x-inferred": True, "minLength": 1} in schema["allOf"], (operation_id, name)


def test_render_request_marks_what_the_interface_document_leaves_open(contract, doc):
    # "`POST /v1/video/render` also takes `projectId` and `story`": the names are stated; which
    # are required and what `story` is are not.
    render = doc["components"]["schemas"]["RenderRequest"]
    assert "required" not in render
    assert {"x-inferred": True, "required": ["projectId", "story"]} in render["allOf"]
    story = render["properties"]["story"]
    assert "x-inferred" not in story and "type" not in story  # the field itself is stated
    target = contract.resolve(story)
    assert target["x-inferred"] is True and target["type"] == "string"
    assert "x-inferred" not in render["properties"]["projectId"]
    validator = Draft202012Validator({**doc, "$ref": "#/components/schemas/RenderRequest"})
    assert validator.is_valid({"projectId": "p", "story": "s"})
    assert not validator.is_valid({"projectId": "p"})
    assert not validator.is_valid({"story": "s"})


def test_operations_declare_their_callback_inline_not_as_a_reference(contract, doc):
    # openapi-python-client reads an operation's callback map as path items only and stops on a
    # `$ref` there, so each operation carries the callback itself (a YAML alias of one
    # definition, which `components.callbacks.JobEvent` names too).
    component = doc["components"]["callbacks"]["JobEvent"]
    for name in CALLBACK_OPERATIONS:
        callbacks = contract.operations[name].definition["callbacks"]
        assert callbacks == {"jobEvent": component}, name
        assert "$ref" not in callbacks["jobEvent"]
