"""Keys, workspaces and roles."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Basic c2s6",
        "bearer sk_test_acme_owner x",
        "Bearer sk_test_nobody",
        "sk_test_acme_owner",
    ],
)
def test_missing_malformed_or_unknown_keys_answer_401(api, authorization):
    headers = {} if authorization is None else {"Authorization": authorization}
    response = api.get("/v1/campaigns", key=None, headers=headers)
    assert response.status_code == 401 and response.json()["code"] == "unauthorized"
    assert "x-ratelimit-limit" not in response.headers


def test_a_revoked_key_answers_401_and_other_keys_of_the_member_still_work(api, control):
    assert api.get("/v1/campaigns", key="owner").status_code == 200
    control.call("POST", "/keys/revoke", {"key": "sk_test_acme_owner"})
    assert api.get("/v1/campaigns", key="owner").status_code == 401
    assert api.get("/v1/campaigns", key="owner2").status_code == 200


def test_a_credential_store_outage_is_503_with_retry_after_never_401(api, control):
    control.fault(match={"path": "/v1/*"}, status=503, code="upstream_unavailable", count=3)
    for key in ("owner", "sk_test_nobody", None):
        response = api.get("/v1/campaigns", key=key)
        assert response.status_code == 503, response.text
        assert response.json()["code"] == "upstream_unavailable"
        assert int(response.headers["Retry-After"]) > 0
    assert api.get("/v1/campaigns").status_code == 200


def test_ids_of_another_workspace_answer_exactly_like_ids_that_do_not_exist(api):
    cases = [
        ("PATCH", "/v1/channels/{}", {"niche": "x"}, "chn_globex_main", "chn_missing"),
        ("PATCH", "/v1/campaigns/{}", {"status": "paused"}, "cmp_globex_001", "cmp_missing"),
    ]
    for method, template, body, foreign, missing in cases:
        a = api.request(method, template.format(foreign), json=body)
        b = api.request(method, template.format(missing), json=body)
        assert a.status_code == b.status_code == 404
        assert a.json()["code"] == b.json()["code"] == "not_found"
        assert set(a.json()) == set(b.json())
    globex_channels = api.get("/v1/channels", key="globex").json()["channels"]
    assert [c["id"] for c in globex_channels] == ["chn_globex_main"]


def test_products_of_another_workspace_cannot_be_bound(api):
    response = api.patch("/v1/channels/chn_money_minute", json={"products": ["prd_globex_widget"]})
    assert response.status_code == 404


def test_a_workspace_slug_that_disagrees_is_refused_and_one_that_agrees_is_fine(api):
    refused = api.get("/v1/campaigns", headers={"X-Workspace-Slug": "globex"})
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    assert refused.json()["details"]["reason"] == "workspace_mismatch"
    assert api.get("/v1/campaigns", headers={"X-Workspace-Slug": "acme"}).status_code == 200


def test_a_viewer_reads_including_usage_but_writes_nothing(api):
    assert api.get("/v1/usage", key="viewer").status_code == 200
    assert api.get("/v1/campaigns", key="viewer").status_code == 200
    for method, path, body, headers in [
        ("POST", "/v1/products", {"name": "x"}, {}),
        ("POST", "/v1/projects", {"title": "x"}, {"Idempotency-Key": "v1"}),
        ("PATCH", "/v1/channels/chn_money_minute", {"niche": "x"}, {}),
        ("PATCH", "/v1/campaigns/cmp_acme_001", {"status": "paused"}, {}),
    ]:
        response = api.request(method, path, json=body, headers=headers, key="viewer")
        assert response.status_code == 403 and response.json()["code"] == "forbidden", path


def test_keys_are_stored_hashed_and_never_in_a_snapshot(api, control):
    snapshot = json.dumps(control.call("GET", "/snapshot")["snapshot"])
    for key in ("sk_test_acme_owner", "sk_test_acme_viewer", "sk_test_globex_owner"):
        assert key not in snapshot


def test_there_is_no_operation_that_creates_a_key(api):
    from mockserver.contract import default_contract

    for op in default_contract().operations.values():
        assert "key" not in op.path.lower().replace("idempotency", ""), op.path
