"""The request journal: what was asked and answered, secrets redacted, filtered."""

from __future__ import annotations

import json

from mockserver.platform.journal import BODY_LIMIT
from tests.support.control_check import CheckedControl

SECRET = "journal-secret-" + "j" * 30
URL = "https://93.184.216.34/hooks"


def journal(control, **filters) -> list[dict]:
    query = "&".join(f"{k}={v}" for k, v in filters.items())
    return control.call("GET", f"/requests?{query}")["requests"]


def test_entries_hold_query_bodies_code_and_key_label(api, control):
    api.get("/v1/campaigns", params={"status": "active", "limit": 2})
    api.post("/v1/products", json={"name": ""}, key="editor")
    listed, refused = journal(control, limit=2)
    assert listed["query"] == {"status": ["active"], "limit": ["2"]}
    assert listed["requestBody"] is None and listed["code"] is None
    assert len(listed["responseBody"]["campaigns"]) == 2
    assert refused["operationId"] == "createProduct" and refused["status"] == 400
    assert refused["code"] == "invalid_request"
    assert refused["requestBody"] == {"name": ""}
    assert refused["responseBody"]["details"]["errors"][0]["path"] == "/name"
    assert refused["keyId"].startswith("key_") and "sk_test" not in json.dumps(refused)


def test_secrets_are_redacted_in_request_bodies(api, control):
    api.post(
        "/v1/webhook-subscriptions",
        json={"url": URL, "events": ["job.completed"], "secret": SECRET},
        headers={"Idempotency-Key": "s1"},
    )
    api.post(
        "/v1/video/render",
        json={
            "projectId": "prj_acme_01",
            "story": "A walk.",
            "callbackUrl": URL,
            "callbackSecret": SECRET[:20],  # too short: refused, and still never shown
        },
    )
    entries = journal(control, limit=2)
    assert entries[0]["requestBody"]["secret"] == "[secret]"
    assert entries[1]["requestBody"]["callbackSecret"] == "[secret]"
    assert entries[1]["requestBody"]["story"] == "A walk."
    assert SECRET[:20] not in json.dumps(entries)


def test_filters_by_operation_status_code_and_key(api, control):
    api.get("/v1/products")
    api.get("/v1/products", key="viewer")
    api.post("/v1/products", json={}, key="viewer")
    api.get("/v1/projects")
    assert [e["operationId"] for e in journal(control, operationId="listProducts")] == [
        "listProducts",
        "listProducts",
    ]
    assert [e["status"] for e in journal(control, status=400)] == [400]
    assert len(journal(control, code="invalid_request")) == 1
    by_key = journal(control, key="sk_test_acme_viewer")
    assert [e["operationId"] for e in by_key] == ["listProducts", "createProduct"]
    assert journal(control, key=by_key[0]["keyId"]) == by_key


def test_large_and_non_json_bodies_are_kept_as_sizes(api, control):
    big = {"name": "n", "description": "d" * (BODY_LIMIT + 10)}
    api.post("/v1/products", json=big)
    broken_body = b'{"name": "x", "secret": "' + SECRET.encode() + b'"'
    api.post("/v1/products", content=broken_body, headers={"Content-Type": "application/json"})
    oversize, broken = journal(control, limit=2)
    assert oversize["requestBody"]["omitted"].startswith("over")
    assert oversize["requestBody"]["bytes"] > BODY_LIMIT
    assert broken["requestBody"] == {"omitted": "not JSON", "bytes": len(broken_body)}
    assert SECRET not in json.dumps(broken)


def test_entries_name_the_member_and_show_headers_with_credentials_redacted(api, asgi_http):
    control = CheckedControl(asgi_http)
    control.call("POST", "/reset")
    api.post(
        "/v1/products",
        json={"name": "Headed"},
        key="editor",
        headers={
            "Idempotency-Key": "headers-1",
            "Cookie": "session=c00kie-value",
            "X-Api-Token": "t0ken-value",
        },
    )
    api.get("/v1/products", key="sk_test_no_such_key")
    created, refused = control.call("GET", "/requests", limit=2)["requests"]
    assert (created["workspace"], created["member"], created["role"]) == ("acme", "erin", "editor")
    sent = created["requestHeaders"]
    assert sent["authorization"] == f"Bearer {created['keyId']}"
    assert sent["idempotency-key"] == "headers-1"
    assert sent["cookie"] == sent["x-api-token"] == "[redacted]"
    assert created["responseHeaders"]["x-request-id"] == created["requestId"]
    assert created["responseHeaders"]["content-type"] == "application/json"
    assert "x-ratelimit-remaining" in created["responseHeaders"]
    # an unknown key: no member, and still only a label
    assert refused["status"] == 401 and refused["member"] is refused["role"] is None
    assert refused["requestHeaders"]["authorization"].startswith("Bearer key_")
    shown = json.dumps([created, refused])
    for secret in ("sk_test", "c00kie-value", "t0ken-value"):
        assert secret not in shown


def test_filters_by_status_class_workspace_member_and_after(api, asgi_http):
    control = CheckedControl(asgi_http)
    control.call("POST", "/reset")
    api.get("/v1/products")  # alice
    api.post("/v1/products", json={"name": "x"}, key="viewer")  # victor: 403, never writes
    api.get("/v1/products", key="globex")  # gina
    api.get("/v1/no-such-path")  # 404, no operation: still alice's key

    def journal(**filters: object) -> dict:
        return control.call("GET", "/requests", **filters)

    assert [e["status"] for e in journal(statusClass="4xx")["requests"]] == [403, 404]
    assert [e["member"] for e in journal(statusClass="2xx")["requests"]] == ["alice", "gina"]
    acme = [e["member"] for e in journal(workspace="acme")["requests"]]
    assert acme == ["alice", "victor", "alice"]
    assert [e["status"] for e in journal(member="victor")["requests"]] == [403]
    assert journal(workspace="globex", member="alice")["requests"] == []
    everything = journal()
    first, *rest = everything["requests"]
    assert [e["seq"] for e in everything["requests"]] == list(range(first["seq"], first["seq"] + 4))
    assert journal(after=first["seq"])["requests"] == rest
    assert everything["latestSeq"] == rest[-1]["seq"] and everything["oldestSeq"] == first["seq"]
    refused = control.request("GET", "/requests", statusClass="6xx")
    assert refused.status_code == 400


def test_an_answer_given_before_the_key_is_checked_still_names_the_key(api, asgi_http):
    """A 404 (no operation), a public operation and a fault answered before authentication
    name a valid key's member, without counting its rate limit; an invalid key names no one,
    and only by its label."""
    control = CheckedControl(asgi_http)
    control.call("POST", "/reset")
    control.call("DELETE", "/faults")
    before = api.get("/v1/products", key="admin").headers["x-ratelimit-remaining"]
    missing = api.get("/v1/no-such-path", key="admin")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    api.get("/v1/openapi.json", key="editor")
    control.call("PUT", "/credential-store", {"reachable": False, "retryAfter": 5})
    unreachable = api.get("/v1/products", key="viewer")
    control.call("DELETE", "/faults")
    assert unreachable.status_code == 503
    api.get("/v1/no-such-path", key="sk_test_no_such_key")
    api.get("/v1/no-such-path", key=None)
    after = api.get("/v1/products", key="admin").headers["x-ratelimit-remaining"]
    assert int(before) - int(after) == 1  # the 404 was not counted

    entries = control.call("GET", "/requests", limit=6)["requests"][:-1]
    named = [(e["status"], e["workspace"], e["member"], e["role"]) for e in entries]
    assert named == [
        (404, "acme", "bob", "admin"),
        (200, "acme", "erin", "editor"),
        (503, "acme", "victor", "viewer"),
        (404, None, None, None),
        (404, None, None, None),
    ]
    assert entries[0]["keyId"].startswith("key_")
    bobs = control.call("GET", "/requests", member="bob", statusClass="4xx")["requests"]
    assert [e["path"] for e in bobs] == ["/v1/no-such-path"]
    unknown, keyless = entries[3:]
    assert unknown["keyId"] is None
    assert unknown["requestHeaders"]["authorization"].startswith("Bearer key_")
    assert "authorization" not in keyless["requestHeaders"]
    assert "sk_test" not in json.dumps(entries)


def test_numbering_goes_on_after_a_reset_that_empties_the_journal(api, asgi_http):
    control = CheckedControl(asgi_http)
    api.get("/v1/products")
    before = control.call("GET", "/requests")["latestSeq"]
    control.call("POST", "/reset")
    emptied = control.call("GET", "/requests", after=before)
    assert emptied == {
        "success": True,
        "requests": [],
        "latestSeq": before,
        "oldestSeq": before + 1,
        "settledSeq": before,  # the mock's own entries are final when journalled
    }
    api.get("/v1/products")
    again = control.call("GET", "/requests")
    assert [e["seq"] for e in again["requests"]] == [before + 1]
