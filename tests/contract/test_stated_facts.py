"""Facts the interface document states are in the contract, and none is marked inferred.

Each row names a fact, where it lives (a path from the document's root; a dict step picks the
parameter with that name), and what the document states. Walking the path follows `$ref`s, and
no node on the way may carry `x-inferred: true`.
"""

from __future__ import annotations

from typing import Any

import pytest

FILM = ("paths", "/v1/text/film", "post", "requestBody", "content", "application/json", "schema")
CHANNEL_PATCH = ("components", "schemas", "ChannelPatch", "properties")
COMMUNITY = ("components", "schemas", "CommunityCampaignCreate", "properties")
AUTOPILOT = ("components", "schemas", "AutopilotSave", "properties")
CAMPAIGN = ("components", "schemas", "Campaign")
LIST_CAMPAIGNS = ("paths", "/v1/campaigns", "get", "parameters")
SCHEMAS = ("components", "schemas")

CAMPAIGN_REQUIRED = [
    "id",
    "title",
    "description",
    "connectedAccountIds",
    "platforms",
    "automationMode",
    "status",
    "scheduledAt",
    "remixJobIds",
    "playbookId",
    "createdAt",
    "updatedAt",
]

FACTS: list[tuple[str, tuple, dict[str, Any]]] = [
    ("Campaign's required fields", CAMPAIGN, {"required": CAMPAIGN_REQUIRED}),
    ("Campaign allows additional properties", CAMPAIGN, {"additionalProperties": True}),
    (
        "Campaign status values",
        (*SCHEMAS, "CampaignStatus"),
        {"enum": ["draft", "scheduled", "active", "paused", "completed"]},
    ),
    (
        "automationMode values",
        (*SCHEMAS, "AutomationMode"),
        {"enum": ["manual", "review-first", "fire-and-forget"]},
    ),
    (
        "assetCount 0 to 2^53-1",
        (*CAMPAIGN, "properties", "assetCount"),
        {"type": "integer", "minimum": 0, "maximum": 9007199254740991},
    ),
    ("platforms is an array", (*CAMPAIGN, "properties", "platforms"), {"type": "array"}),
    (
        "campaign list status filter, default all",
        (*LIST_CAMPAIGNS, {"name": "status"}, "schema"),
        {"enum": ["draft", "scheduled", "active", "paused", "completed", "all"], "default": "all"},
    ),
    (
        "campaign list limit 1 to 100, default 50",
        (*LIST_CAMPAIGNS, {"name": "limit"}, "schema"),
        {"type": "integer", "minimum": 1, "maximum": 100, "default": 50},
    ),
    ("film required fields", FILM, {"required": ["title", "logline", "genre", "projectId"]}),
    ("film title 1 to 200", (*FILM, "properties", "title"), {"minLength": 1, "maxLength": 200}),
    (
        "film logline 1 to 1000",
        (*FILM, "properties", "logline"),
        {"minLength": 1, "maxLength": 1000},
    ),
    ("film genre 1 to 60", (*FILM, "properties", "genre"), {"minLength": 1, "maxLength": 60}),
    (
        "film projectId 1 to 200",
        (*FILM, "properties", "projectId"),
        {"minLength": 1, "maxLength": 200},
    ),
    (
        "film format default feature",
        (*FILM, "properties", "format"),
        {"default": "feature", "minLength": 1, "maxLength": 60},
    ),
    (
        "film targetAudience at most 200",
        (*FILM, "properties", "targetAudience"),
        {"maxLength": 200},
    ),
    ("film themes at most 10", (*FILM, "properties", "themes"), {"maxItems": 10}),
    ("film theme at most 100", (*FILM, "properties", "themes", "items"), {"maxLength": 100}),
    ("film setting at most 500", (*FILM, "properties", "setting"), {"maxLength": 500}),
    ("channel name 1 to 120", (*CHANNEL_PATCH, "name"), {"minLength": 1, "maxLength": 120}),
    ("channel niche at most 200", (*CHANNEL_PATCH, "niche"), {"maxLength": 200}),
    ("channel description at most 2000", (*CHANNEL_PATCH, "description"), {"maxLength": 2000}),
    ("channel accentColor at most 32", (*CHANNEL_PATCH, "accentColor"), {"maxLength": 32}),
    ("channel voicePreset at most 120", (*CHANNEL_PATCH, "voicePreset"), {"maxLength": 120}),
    ("channel products at most 50", (*CHANNEL_PATCH, "products"), {"maxItems": 50}),
    (
        "channel product id 1 to 40",
        (*CHANNEL_PATCH, "products", "items"),
        {"minLength": 1, "maxLength": 40},
    ),
    (
        "channel products: none alone",
        (*CHANNEL_PATCH, "products", "oneOf", 1),
        {"minItems": 1, "maxItems": 1, "items": {"enum": ["none"]}},
    ),
    (
        "channelId 1 to 200",
        (
            "paths",
            "/v1/channels/{channelId}",
            "patch",
            "parameters",
            {"name": "channelId"},
            "schema",
        ),
        {"minLength": 1, "maxLength": 200},
    ),
    (
        "community required fields",
        (*SCHEMAS, "CommunityCampaignCreate"),
        {"required": ["name", "connectedAccountId", "objective", "keywords"]},
    ),
    ("community name 1 to 120", (*COMMUNITY, "name"), {"minLength": 1, "maxLength": 120}),
    (
        "community account 1 to 200",
        (*COMMUNITY, "connectedAccountId"),
        {"minLength": 1, "maxLength": 200},
    ),
    (
        "community objective 1 to 2000",
        (*COMMUNITY, "objective"),
        {"minLength": 1, "maxLength": 2000},
    ),
    ("keywords 1 to 25", (*COMMUNITY, "keywords"), {"minItems": 1, "maxItems": 25}),
    ("keyword 1 to 80", (*COMMUNITY, "keywords", "items"), {"minLength": 1, "maxLength": 80}),
    ("negativeKeywords at most 25", (*COMMUNITY, "negativeKeywords"), {"maxItems": 25}),
    (
        "negative keyword 1 to 80",
        (*COMMUNITY, "negativeKeywords", "items"),
        {"minLength": 1, "maxLength": 80},
    ),
    ("alertEmail is an e-mail", (*COMMUNITY, "alertEmail"), {"format": "email"}),
    (
        "community idempotency-key 1 to 200, required",
        ("paths", "/v1/community-campaigns", "post", "parameters", {"name": "Idempotency-Key"}),
        {"required": True, "schema": {"type": "string", "minLength": 1, "maxLength": 200}},
    ),
    (
        "callbackSecret 32 to 512, write-only",
        (*SCHEMAS, "CallbackSecret"),
        {"minLength": 32, "maxLength": 512, "writeOnly": True},
    ),
    (
        "Job terminal statuses",
        (*SCHEMAS, "JobTerminalStatus"),
        {"enum": ["done", "cancelled", "failed", "qa_failed"]},
    ),
    ("proposal statuses", (*SCHEMAS, "ProposalStatus"), {"enum": ["awaiting_review", "approved"]}),
    (
        "wordLimit at most 2000, default 1000",
        (
            "paths",
            "/v1/projects/{projectId}/transcript",
            "get",
            "parameters",
            {"name": "wordLimit"},
            "schema",
        ),
        {"maximum": 2000, "default": 1000},
    ),
    ("autopilot enabled defaults to false", (*AUTOPILOT, "enabled"), {"default": False}),
    ("maxVideosPerDay defaults to 3", (*AUTOPILOT, "maxVideosPerDay"), {"default": 3}),
    ("maxPostsPerDay defaults to 12", (*AUTOPILOT, "maxPostsPerDay"), {"default": 12}),
    (
        "callback body version",
        (*SCHEMAS, "JobCallbackEvent", "properties", "schemaVersion"),
        {"const": "job-event.v1"},
    ),
    (
        "callback body fields",
        (*SCHEMAS, "JobCallbackEvent"),
        {
            "required": [
                "schemaVersion",
                "eventId",
                "event",
                "jobId",
                "status",
                "error",
                "workspaceId",
                "artifacts",
            ]
        },
    ),
    (
        "subscription body version",
        (*SCHEMAS, "AutomationEvent", "properties", "schemaVersion"),
        {"const": "automation-event.v1"},
    ),
    (
        "resourceUrl is /v1/jobs/<job_id>",
        (*SCHEMAS, "AutomationEvent", "properties", "data", "properties", "resourceUrl"),
        {"pattern": "^/v1/jobs/[^/]+$"},
    ),
    (
        "subscription events",
        (*SCHEMAS, "SubscriptionEventName"),
        {
            "enum": [
                "job.progressed",
                "job.awaiting_approval",
                "job.completed",
                "artifact.ready",
                "job.failed",
                "job.cancelled",
                "publish.completed",
                "publish.failed",
            ]
        },
    ),
    (
        "signature header",
        ("components", "parameters", "DeliverySignature", "schema"),
        {"pattern": "^sha256=[0-9a-f]{64}$"},
    ),
    ("kind is deprecated", (*SCHEMAS, "ProjectCreate", "properties", "kind"), {"deprecated": True}),
    (
        "artifacts.video is deprecated",
        (*SCHEMAS, "JobArtifacts", "properties", "video"),
        {"deprecated": True},
    ),
    (
        "after on assets is deprecated",
        ("paths", "/v1/assets", "get", "parameters", {"name": "after"}),
        {"deprecated": True},
    ),
    (
        "after on variation batches is deprecated",
        (
            "paths",
            "/v1/projects/{projectId}/variations/{batchId}",
            "get",
            "parameters",
            {"name": "after"},
        ),
        {"deprecated": True},
    ),
    (
        "nextAfter is deprecated",
        (*SCHEMAS, "DeprecatedAfterPage", "properties", "nextAfter"),
        {"deprecated": True},
    ),
    (
        "offset on the catalog is deprecated",
        ("paths", "/v1/video/catalog/{domain}", "get", "parameters", {"name": "offset"}),
        {"deprecated": True},
    ),
    (
        "retrievedPassages defaults to []",
        (*SCHEMAS, "ContextSnapshotRequest", "properties", "retrievedPassages"),
        {"default": []},
    ),
    (
        "exclusions defaults to []",
        (*SCHEMAS, "ContextSnapshotRequest", "properties", "exclusions"),
        {"default": []},
    ),
    ("100 requests per minute", ("x-rate-limit",), {"requestsPerMinute": 100}),
    (
        "subscription secret write-only",
        (*SCHEMAS, "WebhookSubscription", "properties", "secret"),
        {"writeOnly": True},
    ),
    ("success bodies: success true", (*SCHEMAS, "Ok", "properties", "success"), {"const": True}),
    ("error bodies: success false", (*SCHEMAS, "Error", "properties", "success"), {"const": False}),
    ("timestamps end in Z", (*SCHEMAS, "Timestamp"), {"format": "date-time"}),
]


def walk(doc: dict[str, Any], path: tuple) -> tuple[Any, list[Any]]:
    """The node at `path`, and every node visited on the way (references followed)."""

    def deref(node):
        # OpenAPI 3.1 schemas may carry keywords beside `$ref`: they apply too, so the view
        # returned is the target with the referring node's own keywords over it.
        while isinstance(node, dict) and "$ref" in node:
            target = doc
            for part in node["$ref"][2:].split("/"):
                target = target[part.replace("~1", "/")]
            visited.append(node)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            node = {**target, **siblings} if siblings and isinstance(target, dict) else target
        return node

    visited: list[Any] = []
    node: Any = doc
    for step in path:
        node = deref(node)
        visited.append(node)
        if isinstance(step, dict):
            node = next(
                p for p in (deref(q) for q in node) if all(p.get(k) == v for k, v in step.items())
            )
        else:
            node = node[step]
    node = deref(node)
    visited.append(node)
    return node, visited


def test_there_are_at_least_thirty_facts():
    assert len(FACTS) >= 30


@pytest.mark.parametrize("name,path,expected", FACTS, ids=[f[0] for f in FACTS])
def test_stated_fact(doc, name, path, expected):
    node, visited = walk(doc, path)
    for key, value in expected.items():
        assert node.get(key) == value, (name, key, node.get(key))
    inferred = [n for n in visited if isinstance(n, dict) and n.get("x-inferred") is True]
    assert not inferred, f"{name} is stated by the interface document but marked inferred"


def test_timestamp_pattern_requires_utc_z(doc):
    import re

    pattern = doc["components"]["schemas"]["Timestamp"]["pattern"]
    assert re.search(pattern, "2026-11-22T10:00:00Z")
    assert re.search(pattern, "2026-11-22T10:00:00.123Z")
    assert not re.search(pattern, "2026-11-22T10:00:00+00:00")


@pytest.mark.parametrize(
    "products,valid",
    [
        ([], True),  # nothing bound yet
        (["prod_1"], True),
        ([f"p{i}" for i in range(50)], True),
        (["none"], True),  # deliberately promotes nothing
        ([f"p{i}" for i in range(51)], False),
        (["none", "prod_1"], False),
        (["prod_1", "none"], False),
        (["none", "none"], False),
        ([""], False),
        (["x" * 41], False),
        ("none", False),
        ([None], False),
    ],
)
def test_channel_products_means_ids_or_exactly_none(doc, products, valid):
    # `["none"]` is written as an array of one item whose only value is `none` (a `const` array
    # stopped code generators); the meaning is unchanged: ids, or `none` alone.
    from jsonschema import Draft202012Validator

    schema = {**doc, "$ref": "#/components/schemas/ChannelProducts"}
    assert Draft202012Validator(schema).is_valid(products) is valid
