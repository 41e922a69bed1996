"""The control plane under /_mock/: kept apart from the API, described by its own document."""

from __future__ import annotations

from dataclasses import replace

import yaml
from openapi_spec_validator import validate

from mockserver.app import create_app
from mockserver.control.plane import control_contract
from tests.conftest import TEST_SETTINGS
from tests.support.client import ApiClient
from tests.support.inproc import InProcessClient


def test_its_own_openapi_document_is_valid_and_served(asgi_http):
    validate(control_contract().document)
    response = asgi_http.get("/_mock/openapi.json")
    assert response.status_code == 200 and response.json()["info"]["title"] == "Mock control plane"
    assert response.json()["paths"].keys() >= {
        "/_mock/reset",
        "/_mock/clock",
        "/_mock/faults",
        "/_mock/snapshot",
    }


def test_reset_puts_state_back_to_the_fixtures(api, control):
    api.post("/v1/products", json={"name": "Temporary"})
    control.credits(balance=5)
    control.governance(killSwitch=True)
    control.advance(3600)
    control.reset()
    assert "Temporary" not in {p["name"] for p in api.walk("/v1/products", "products")}
    assert control.credits() == 10000
    assert control.call("GET", "/workspaces/acme/governance")["governance"]["killSwitch"] is False
    assert control.now() == "2026-11-20T09:00:00Z"


def test_the_manual_clock_moves_only_when_told(control):
    start = control.now()
    assert control.now() == start
    control.advance(90)
    assert control.now() == "2026-11-20T09:01:30Z"
    assert control.call("GET", "/clock")["mode"] == "manual"


def test_credits_budget_governance_and_capabilities_are_steerable(api, control):
    assert control.credits(balance=123) == 123
    assert api.get("/v1/capabilities").json()["balance"]["credits"] == 123
    capped = control.call("PUT", "/workspaces/acme/members/erin/budget", {"capped": True})
    assert capped == {"success": True, "workspace": "acme", "member": "erin", "capped": True}
    changed = control.capability("script", price=77, available=False)
    assert changed["price"] == 77 and changed["available"] is False
    listed = {c["name"]: c for c in api.get("/v1/capabilities").json()["capabilities"]}
    assert listed["script"]["price"] == 77 and listed["script"]["available"] is False
    assert control.governance(agentConfigLocked=True)["agentConfigLocked"] is True


def test_control_plane_validates_its_input(asgi_http, control):
    for path, body in [
        ("/_mock/clock/advance", {"seconds": -1}),
        ("/_mock/workspaces/acme/credits", {"balance": "lots"}),
        (
            "/_mock/faults",
            {"match": {"operationId": "listCampaigns"}, "status": 409, "code": "not_found"},
        ),
        (
            "/_mock/faults",
            {
                "match": {"operationId": "noSuchOperation"},
                "status": 503,
                "code": "upstream_unavailable",
            },
        ),
    ]:
        method = "PUT" if "credits" in path else "POST"
        response = asgi_http.request(method, path, json=body)
        assert response.status_code == 400, (path, response.text)
        assert response.json()["code"] == "invalid_request"
    assert (
        asgi_http.put("/_mock/workspaces/nowhere/credits", json={"balance": 1}).status_code == 404
    )


def test_faults_fire_count_times_by_operation_or_path(api, control):
    control.fault(match={"operationId": "listProducts"}, status=500, code="internal_error", count=2)
    assert [api.get("/v1/products").status_code for _ in range(3)] == [500, 500, 200]
    control.fault(match={"path": "/v1/channels*"}, status=500, code="upstream_error", count=1)
    response = api.get("/v1/channels")
    assert response.status_code == 500 and response.json()["code"] == "upstream_error"
    control.fault(
        match={"operationId": "listProducts"},
        status=429,
        code="rate_limited",
        retryAfter=7,
        count=None,
    )
    assert api.get("/v1/products").headers["Retry-After"] == "7"
    assert len(control.call("GET", "/faults")["faults"]) == 1
    control.call("DELETE", "/faults")
    assert api.get("/v1/products").status_code == 200


def test_a_fault_can_only_delay(api, control):
    control.fault(match={"operationId": "listProducts"}, delayMs=50)
    assert api.get("/v1/products").status_code == 200
    journal = control.call("GET", "/requests", None)["requests"]
    assert journal[-1]["durationMs"] >= 50


def test_the_journal_is_newest_last_and_bounded(api, control):
    api.get("/v1/products")
    api.get("/v1/channels", params={"limit": 0})
    entries = control.call("GET", "/requests?limit=2")["requests"]
    assert [(e["path"], e["status"], e["operationId"]) for e in entries] == [
        ("/v1/products", 200, "listProducts"),
        ("/v1/channels", 400, "listChannels"),
    ]
    assert all(e["requestId"].startswith("req_") and e["time"].endswith("Z") for e in entries)
    from mockserver.platform.journal import JOURNAL_SIZE

    assert JOURNAL_SIZE == 1000


def test_a_snapshot_goes_out_and_back_in(api, control):
    api.post("/v1/products", json={"name": "Before"})
    snapshot = control.call("GET", "/snapshot")
    api.post("/v1/products", json={"name": "After"})
    control.credits(balance=1)
    control.call("PUT", "/snapshot", snapshot)  # the GET body, as is
    names = {p["name"] for p in api.walk("/v1/products", "products")}
    assert "Before" in names and "After" not in names
    assert control.credits() == 10000


def test_a_snapshot_that_is_not_one_is_refused(asgi_http, control):
    response = asgi_http.put("/_mock/snapshot", json={"hello": "world"})
    assert response.status_code == 400


def test_no_control_plane_means_not_found():
    app = create_app(replace(TEST_SETTINGS, control_plane=False))
    with InProcessClient(app, base_url="http://mock.test") as http:
        response = http.post("/_mock/reset")
        assert response.status_code == 404 and response.json()["code"] == "not_found"
        assert ApiClient(http).get("/v1/products").status_code == 200


def test_a_control_token_is_required_when_set():
    app = create_app(replace(TEST_SETTINGS, control_token="s3cret"))
    with InProcessClient(app, base_url="http://mock.test") as http:
        assert http.post("/_mock/reset").status_code == 401
        assert (
            http.post("/_mock/reset", headers={"Authorization": "Bearer wrong"}).status_code == 401
        )
        assert (
            http.post("/_mock/reset", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        )
        assert http.get("/_mock/openapi.json").status_code == 200


def test_the_control_document_names_every_operation_the_issue_asks_for():
    paths = yaml.safe_load(yaml.safe_dump(control_contract().document["paths"]))
    for path, methods in {
        "/_mock/reset": {"post"},
        "/_mock/clock": {"get"},
        "/_mock/clock/advance": {"post"},
        "/_mock/workspaces/{workspace}/credits": {"get", "put"},
        "/_mock/workspaces/{workspace}/members/{member}/budget": {"put"},
        "/_mock/workspaces/{workspace}/governance": {"put"},
        "/_mock/capabilities/{name}": {"put"},
        "/_mock/keys/revoke": {"post"},
        "/_mock/faults": {"post", "delete"},
        "/_mock/requests": {"get"},
        "/_mock/snapshot": {"get", "put"},
    }.items():
        assert methods <= set(paths[path]), path
