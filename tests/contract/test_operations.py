"""Every operation of the interface document is in the contract, declared as the rules require."""

from __future__ import annotations

import re

import pytest

from mockserver.contract import Contract

from .conftest import stated_operations, template_shape, titled_operations

AUTH_STATUSES = {"401", "429", "500", "503"}

# Operations whose Idempotency-Key the interface document requires.
IDEMPOTENCY_REQUIRED = {
    ("POST", "/v1/projects"),
    ("POST", "/v1/autopilot-runs"),
    ("POST", "/v1/assets/import"),
    ("POST", "/v1/webhook-subscriptions"),
    ("POST", "/v1/community-campaigns"),
}

# Paid calls (the capability table prices them): each declares 402.
PAID = {
    "createFilmOutline",
    "renderVideo",
    "editVideo",
    "approveVideoEdit",
    "createFootage",
    "remixVideo",
    "createModelFromText",
    "createModelFromImage",
    "createAgentRun",
    "importAsset",
}

CALLBACK_OPERATIONS = {"renderVideo", "editVideo", "createModelFromText", "createModelFromImage"}


def op_for(contract: Contract, method: str, path: str):
    for op in contract.operations.values():
        if op.method == method and template_shape(op.path) == template_shape(path):
            return op
    return None


@pytest.mark.parametrize("row", stated_operations(), ids=lambda r: f"{r['method']} {r['path']}")
def test_every_stated_operation_is_present_with_its_method(contract, row):
    op = op_for(contract, row["method"], row["path"])
    assert op is not None
    # The stated path is the contract's path, or recorded as x-stated-path where OpenAPI's rule
    # against identical templated paths forced one path item for two stated templates.
    assert row["path"] in (op.path, op.definition.get("x-stated-path"))
    assert not op.inferred, "a stated operation is not inferred"


def test_the_two_autopilot_templates_share_one_path_item_and_say_so(contract, doc):
    get, put = contract.operations["getAutopilot"], contract.operations["saveAutopilot"]
    assert get.path == put.path == "/v1/autopilots/{channelId}"
    assert put.definition["x-stated-path"] == "/v1/autopilots/{brandId}"
    assert "brandId" in put.definition["description"]
    assert "/v1/autopilots/{brandId}" in doc["info"]["description"]
    shapes = [template_shape(p) for p in doc["paths"]]
    assert len(shapes) == len(set(shapes)), "no two paths differ only in template names"


@pytest.mark.parametrize("area,title", titled_operations())
def test_every_titled_operation_is_present_and_marked_inferred(contract, area, title):
    matches = [
        op
        for op in contract.operations.values()
        if op.definition["summary"].lower() == title.lower()
    ]
    assert len(matches) == 1, title
    assert matches[0].inferred


def test_operation_count_is_stated_plus_titled(contract):
    assert len(contract.operations) == len(stated_operations()) + len(titled_operations()) == 62


def test_operation_ids_are_unique_stable_camel_case(doc, contract):
    ids = [
        item[m]["operationId"]
        for item in doc["paths"].values()
        for m in ("get", "put", "post", "patch", "delete")
        if m in item
    ]
    assert len(ids) == len(set(ids)) == len(contract.operations)
    for operation_id in ids:
        assert re.fullmatch(r"[a-z][a-zA-Z0-9]*", operation_id), operation_id


def test_each_operation_has_one_declared_tag_a_summary_and_a_description(doc, contract):
    declared = {t["name"] for t in doc["tags"]}
    for op in contract.operations.values():
        assert len(op.definition["tags"]) == 1, op.operation_id
        assert op.definition["tags"][0] in declared
        assert op.definition["summary"].strip()
        assert op.definition["description"].strip()


def test_security_is_bearer_globally_and_openapi_json_is_public(doc, contract):
    assert doc["security"] == [{"apiKey": []}]
    scheme = doc["components"]["securitySchemes"]["apiKey"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    public = [op.operation_id for op in contract.operations.values() if op.public]
    assert public == ["getOpenApi"]


def authenticated(contract: Contract):
    return [op for op in contract.operations.values() if not op.public]


def test_every_authenticated_operation_declares_401_429_500_503_with_the_error_schema(contract):
    for op in authenticated(contract):
        responses = op.definition["responses"]
        assert set(responses) >= AUTH_STATUSES, op.operation_id
        for status in AUTH_STATUSES:
            schema = contract.resolve(
                contract.resolve(responses[status])["content"]["application/json"]["schema"]
            )
            assert {"$ref": "#/components/schemas/Error"} in schema["allOf"], (op, status)


def test_every_declared_error_uses_the_shared_error_schema(contract):
    for op in contract.operations.values():
        for status, response in op.definition["responses"].items():
            if int(status) >= 400:
                schema = contract.resolve(
                    contract.resolve(response)["content"]["application/json"]["schema"]
                )
                assert {"$ref": "#/components/schemas/Error"} in schema["allOf"]


def test_statuses_implied_by_the_rules_are_declared(contract):
    for op in authenticated(contract):
        responses = set(op.definition["responses"])
        name = op.operation_id
        assert "400" in responses, name  # unknown query parameters are refused on every call
        assert "403" in responses, name  # keys (role) and origin can refuse anywhere
        if name in PAID:
            assert "402" in responses, name
        if "{" in op.path or name in PAID:
            assert "404" in responses, name
        if "requestBody" in op.definition:
            assert "413" in responses, name
        if any(
            p.get("$ref", "").endswith("IdempotencyKey")
            for p in op.definition.get("parameters", [])
        ):
            assert "409" in responses, name
    for name in (
        "createFootage",
        "approveVideoEdit",
        "createAgentRun",
        "getProjectTranscript",
        "createAutopilotRun",
        "approveAutopilotRun",
        "retryAutopilotRun",
    ):
        assert "409" in contract.operations[name].definition["responses"], name


def test_list_campaigns_declares_exactly_the_stated_failure_statuses(contract):
    responses = contract.operations["listCampaigns"].definition["responses"]
    assert sorted(int(s) for s in responses if int(s) >= 400) == [
        400,
        401,
        402,
        403,
        404,
        409,
        413,
        429,
        500,
        502,
        503,
    ]


def idempotency_parameter(contract: Contract, op):
    for param in op.definition.get("parameters", []):
        param = contract.resolve(param)
        if param["in"] == "header" and param["name"].lower() == "idempotency-key":
            return param
    return None


def test_idempotency_key_is_required_exactly_where_stated(contract):
    for op in contract.operations.values():
        param = idempotency_parameter(contract, op)
        if (op.method, op.path) in IDEMPOTENCY_REQUIRED:
            assert param is not None and param.get("required") is True, op.operation_id
        elif param is not None:
            assert not param.get("required"), op.operation_id


def test_idempotency_key_is_accepted_on_every_call_that_spends_or_creates(contract):
    creating = {
        "createProduct",
        "createProject",
        "addProjectComment",
        "shareProject",
        "createWebhookSubscription",
        "createCommunityCampaign",
        "createAutopilotRun",
        "importAsset",
        "createContextSnapshot",
        "compileDiscoveryPlan",
    }
    for name in PAID | creating:
        assert idempotency_parameter(contract, contract.operations[name]) is not None, name


def test_every_response_declares_x_request_id(contract):
    for op in contract.operations.values():
        for status, response in op.definition["responses"].items():
            headers = contract.resolve(response).get("headers", {})
            header = contract.resolve(headers.get("x-request-id", {}))
            assert header.get("required") is True, (op.operation_id, status)


def test_authenticated_success_responses_declare_rate_limit_headers(contract):
    for op in authenticated(contract):
        for status, response in op.definition["responses"].items():
            if status.startswith("2") or status in ("400", "402", "403", "404", "409", "429"):
                headers = contract.resolve(response)["headers"]
                for name in ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"):
                    assert contract.resolve(headers[name])["required"], (op.operation_id, status)


def test_retry_after_is_declared_on_429_and_503(contract):
    for op in authenticated(contract):
        responses = op.definition["responses"]
        limited = contract.resolve(responses["429"])["headers"]
        assert contract.resolve(limited["Retry-After"])["required"] is True
        unavailable = contract.resolve(responses["503"])["headers"]
        assert "Retry-After" in unavailable


def test_success_bodies_have_success_true(contract):
    def success_const(schema):
        schema = contract.resolve(schema)
        if schema.get("properties", {}).get("success") == {"const": True}:
            return True
        return any(success_const(part) for part in schema.get("allOf", []))

    for op in contract.operations.values():
        if op.public:
            continue
        for status, response in op.definition["responses"].items():
            if status.startswith("2"):
                schema = contract.resolve(response)["content"]["application/json"]["schema"]
                assert success_const(schema), (op.operation_id, status)


def test_callbacks_on_the_four_callback_operations(contract, doc):
    with_callbacks = {
        o.operation_id for o in contract.operations.values() if "callbacks" in o.definition
    }
    assert with_callbacks == CALLBACK_OPERATIONS
    callback = doc["components"]["callbacks"]["JobEvent"]["{$request.body#/callbackUrl}"]["post"]
    body = callback["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/JobCallbackEvent"}
    headers = {contract.resolve(p)["name"] for p in callback["parameters"]}
    assert headers == {
        "X-Service-Signature",
        "X-Service-Timestamp",
        "X-Service-Event",
        "X-Service-Event-Id",
        "X-Service-Job-Id",
    }


def test_webhooks_for_the_eight_subscription_events(contract, doc):
    events = doc["components"]["schemas"]["SubscriptionEventName"]["enum"]
    assert set(doc["webhooks"]) == set(events)
    for name, item in doc["webhooks"].items():
        post = item["post"]
        headers = {contract.resolve(p)["name"] for p in post["parameters"]}
        assert headers == {
            "X-Service-Signature",
            "X-Service-Timestamp",
            "X-Service-Event",
            "X-Service-Event-Id",
            "X-Service-Subscription-Id",
        }
        schema = post["requestBody"]["content"]["application/json"]["schema"]
        assert {"$ref": "#/components/schemas/AutomationEvent"} in schema["allOf"]
        assert schema["allOf"][1]["properties"]["event"]["const"] == name


@pytest.mark.parametrize(
    "creator,readers",
    [
        (
            "createProject",
            {"getProjectTranscript", "listProjectComments", "addProjectComment", "shareProject"},
        ),
        ("createProduct", {"updateChannel", "listProducts"}),
        (
            "createWebhookSubscription",
            {"getWebhookSubscription", "updateWebhookSubscription", "deleteWebhookSubscription"},
        ),
        ("renderVideo", {"getJob", "listJobEvents"}),
        ("editVideo", {"getJob", "listJobEvents", "getJobProposal"}),
        ("createCommunityCampaign", {"getCommunityCampaign", "updateCommunityCampaign"}),
        ("createAutopilotRun", {"approveAutopilotRun", "retryAutopilotRun"}),
    ],
)
def test_links_join_creators_to_what_reads_updates_or_deletes_their_resource(
    contract, creator, readers
):
    response = contract.resolve(contract.operations[creator].definition["responses"]["200"])
    linked = {link["operationId"] for link in response.get("links", {}).values()}
    assert readers <= linked
    for link in response["links"].values():
        assert link["operationId"] in contract.operations


def test_list_items_fields_are_the_stated_names(contract):
    stated = {
        "listCampaigns": "campaigns",
        "listProjects": "projects",
        "listThemes": "themes",
        "listAutopilotRuns": "runs",
        "listWebhookSubscriptions": "subscriptions",
        "listJobs": "jobs",
        "listProjectComments": "comments",
        "listAssets": "assets",
        "getVariationBatch": "variants",
        "listCatalogVideos": "videos",
    }

    def properties(schema):
        schema = contract.resolve(schema)
        found = dict(schema.get("properties", {}))
        for part in schema.get("allOf", []):
            found.update(properties(part))
        return found

    for name, field in stated.items():
        schema = contract.operations[name].definition["responses"]["200"]["content"][
            "application/json"
        ]["schema"]
        props = properties(schema)
        assert props[field]["type"] == "array", name
        assert "nextCursor" in props, name
        assert "x-inferred" not in props[field], name
        params = {
            contract.resolve(p)["name"] for p in contract.operations[name].definition["parameters"]
        }
        assert {"limit", "cursor"} <= params, name
