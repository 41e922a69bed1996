"""What the inspector reads and steers, without a browser: the control plane's jobs, clock,
workspaces, faults and deliveries (with signatures checked again), and the page's files."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

import pytest

from mockserver.app import create_app
from mockserver.control.inspector import POLICY
from mockserver.platform import delivery
from mockserver.platform.delivery import signing
from tests.conftest import TEST_SETTINGS
from tests.support.control_check import CheckedControl
from tests.support.inproc import InProcessClient

SECRET = "inspector-secret-" + "s" * 24


def project(api: Any, title: str) -> str:
    response = api.post(
        "/v1/projects", json={"title": title}, headers={"Idempotency-Key": f"p-{title}"}
    )
    assert response.status_code == 200, response.text
    return str(response.json()["project"]["id"])


def render(api: Any, project_id: str, **extra: Any) -> dict[str, Any]:
    body = {"projectId": project_id, "story": "A walk in the park.", **extra}
    response = api.post("/v1/video/render", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json()["job"])


def test_jobs_show_kind_project_outcome_next_step_and_events(api, asgi_http):
    control = CheckedControl(asgi_http)
    control.call("POST", "/reset")
    job = render(api, project(api, "Inspected <b>project</b>"))
    listed = control.call("GET", "/jobs")["jobs"]
    shown = next(j for j in listed if j["id"] == job["id"])
    assert shown["kind"] == "render" and shown["workspace"] == "acme"
    assert shown["projectTitle"] == "Inspected <b>project</b>"
    assert shown["outcome"] == "done" and shown["callbackUrl"] is None
    assert shown["nextStepAt"] > shown["createdAt"]
    assert [e["event"] for e in shown["events"]] == ["job.progressed"]
    decided = control.call("POST", f"/jobs/{job['id']}/outcome", {"status": "qa_failed"})
    assert decided["outcome"] == "qa_failed"
    assert control.call("GET", "/jobs", status="queued")["jobs"][-1]["outcome"] == "qa_failed"
    control.call("POST", "/clock/advance", {"seconds": 3600})
    ended = control.call("GET", "/jobs", status="qa_failed")["jobs"]
    assert [j["id"] for j in ended] == [job["id"]]
    assert ended[0]["nextStepAt"] is None and ended[0]["events"][-1]["event"] == "job.failed"
    assert control.call("GET", "/jobs", workspace="globex")["jobs"] == []


def test_the_clock_says_when_work_is_next_due_and_advancing_there_does_it(api, asgi_http):
    control = CheckedControl(asgi_http)
    control.call("POST", "/reset")
    job = render(api, "prj_acme_01")
    clock = control.call("GET", "/clock")
    next_step = next(j for j in control.call("GET", "/jobs")["jobs"] if j["id"] == job["id"])
    assert clock["nextDueAt"] <= next_step["nextStepAt"]
    steps = len(next_step["events"])
    while clock["nextDueAt"] < next_step["nextStepAt"]:  # other timed work comes first
        clock = control.call("POST", "/clock/advance", {"seconds": clock["nextDueInSeconds"]})
    moved = control.call("POST", "/clock/advance", {"seconds": clock["nextDueInSeconds"]})
    assert moved["now"] == next_step["nextStepAt"]
    after = next(j for j in control.call("GET", "/jobs")["jobs"] if j["id"] == job["id"])
    assert len(after["events"]) > steps


def test_workspaces_list_balances_and_members(asgi_http):
    control = CheckedControl(asgi_http)
    control.call("POST", "/reset")
    control.call("PUT", "/workspaces/globex/credits", {"balance": 7})
    control.call("PUT", "/workspaces/acme/members/erin/budget", {"capped": True})
    listed = {w["slug"]: w for w in control.call("GET", "/workspaces")["workspaces"]}
    assert listed["acme"]["credits"] == 10000 and listed["globex"]["credits"] == 7
    members = {m["name"]: m for m in listed["acme"]["members"]}
    assert members["erin"] == {"name": "erin", "role": "editor", "budgetCapped": True}
    assert listed["globex"]["governance"]["agentConfigLocked"] is True


def test_one_fault_can_be_cleared_by_its_id(api, asgi_http):
    control = CheckedControl(asgi_http)
    control.call("POST", "/reset")
    spec = {"status": 503, "code": "upstream_unavailable", "count": None}
    first = control.call("POST", "/faults", {"match": {"operationId": "listProducts"}, **spec})
    second = control.call("POST", "/faults", {"match": {"path": "/v1/projects"}, **spec})
    control.call("DELETE", f"/faults/{first['fault']['id']}")
    assert [f["id"] for f in control.call("GET", "/faults")["faults"]] == [second["fault"]["id"]]
    assert api.get("/v1/products").status_code == 200
    assert api.get("/v1/projects").status_code == 503
    gone = control.request("DELETE", f"/faults/{first['fault']['id']}")
    assert gone.status_code == 404 and gone.json()["code"] == "not_found"
    control.call("DELETE", "/faults")


def test_deliveries_show_their_body_and_each_attempt_signature_checked(api, asgi_http, receiver):
    control = CheckedControl(asgi_http)
    control.call("POST", "/reset")
    job = render(api, "prj_acme_01", callbackUrl=f"{receiver.url}/hooks", callbackSecret=SECRET)
    receiver.script([503, 200])
    control.call("POST", "/clock/advance", {"seconds": 3600})
    control.call("POST", "/deliveries/flush", {"timeoutSeconds": 15})
    (first,) = control.call("GET", "/deliveries")["deliveries"]
    assert first["jobId"] == job["id"] and first["state"] == "pending"
    assert json.loads(first["body"])["jobId"] == job["id"]
    (failed,) = first["attempts"]
    assert failed["status"] == 503 and failed["signatureCheck"]["verdict"] == "valid"
    got = receiver.deliveries[0]
    assert failed["signed"] == {
        "signature": got.headers["x-service-signature"],
        "timestamp": got.headers["x-service-timestamp"],
        "bodySha256": hashlib.sha256(got.body).hexdigest(),
    }
    assert first["nextAttemptAt"] > failed["at"]
    replayed = control.call("POST", f"/deliveries/{first['id']}/replay")["delivery"]
    assert replayed["replayOf"] == first["id"] and replayed["eventId"] == first["eventId"]
    control.call("POST", "/deliveries/flush", {"timeoutSeconds": 15})
    shown = {d["id"]: d for d in control.call("GET", "/deliveries")["deliveries"]}
    assert shown[replayed["id"]]["state"] == "delivered"
    assert shown[replayed["id"]]["attempts"][0]["signatureCheck"]["verdict"] == "valid"
    assert SECRET not in json.dumps(shown)


def test_a_signature_that_does_not_hold_is_named_with_the_reason():
    secret = "whsec_" + "k" * 32
    body = '{"event":"job.completed"}'
    record = {"body": body}
    stamp = "2026-11-20T09:00:00Z"

    def check(signature: str | None, timestamp: str | None, sent: str = body) -> dict[str, str]:
        digest = hashlib.sha256(sent.encode()).hexdigest()
        attempt = {"signed": {"signature": signature, "timestamp": timestamp, "bodySha256": digest}}
        return delivery.signature_check(record, secret, attempt)

    good = signing.sign(secret, stamp, body.encode())
    assert check(good, stamp)["verdict"] == "valid"
    assert check(good.upper(), stamp)["verdict"] == "invalid"
    assert check(signing.sign("other", stamp, body.encode()), stamp)["verdict"] == "invalid"
    reordered = '{ "event": "job.completed" }'
    assert (
        "body" in check(signing.sign(secret, stamp, reordered.encode()), stamp, reordered)["reason"]
    )
    naive = "2026-11-20T09:00:00"
    assert "timestamp" in check(signing.sign(secret, naive, body.encode()), naive)["reason"]
    assert check(None, None)["verdict"] == "unsigned"
    assert (
        delivery.signature_check(
            record, None, {"signed": {"signature": good, "timestamp": stamp, "bodySha256": "x"}}
        )["verdict"]
        == "unknown"
    )
    assert delivery.signature_check(record, secret, {})["verdict"] == "unknown"


def test_the_page_and_its_files_are_served_with_a_strict_policy(asgi_http):
    control = CheckedControl(asgi_http)
    page = control.request("GET", "/ui")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert control.request("GET", "/ui/").content == page.content  # the folder's address too
    assert page.headers["content-security-policy"] == POLICY
    assert "default-src 'self'" in POLICY and "'unsafe-inline'" not in POLICY
    assert page.headers["x-content-type-options"] == "nosniff"
    assert "<script" in page.text and "<script>" not in page.text  # only src=, never inline
    for name, kind in (("app.js", "text/javascript"), ("app.css", "text/css")):
        served = control.request("GET", f"/ui/{name}")
        assert served.status_code == 200 and served.headers["content-type"].startswith(kind)
        assert served.headers["content-security-policy"] == POLICY
    for missing in ("nope.js", "..%2Fhandlers.py", "openapi.yaml"):
        assert control.request("GET", f"/ui/{missing}").status_code == 404
    index = control.call("GET", "/")
    assert {"inspector", "inspectorIndex", "inspectorFile"} <= {
        op["operationId"] for op in index["operations"]
    }
    assert index["tokenRequired"] is False


def test_the_page_needs_no_token_but_everything_it_reads_does():
    app = create_app(replace(TEST_SETTINGS, control_token="inspect-token"))
    with InProcessClient(app, base_url="http://mock.test") as http:
        anonymous = CheckedControl(http)
        assert anonymous.request("GET", "/ui").status_code == 200
        assert anonymous.request("GET", "/ui/app.js").status_code == 200
        assert anonymous.call("GET", "/")["tokenRequired"] is True
        assert anonymous.request("GET", "/requests").status_code == 401
        assert CheckedControl(http, "inspect-token").call("GET", "/requests")["requests"] == []


def test_no_control_plane_means_no_page():
    app = create_app(replace(TEST_SETTINGS, control_plane=False))
    with InProcessClient(app, base_url="http://mock.test") as http:
        response = http.get("/_mock/ui")
        assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_without_a_browser_the_page_tests_skip_saying_why_but_fail_under_ci(monkeypatch):
    from tests.inspector import conftest

    monkeypatch.setenv("INSPECTOR_CHROMIUM", "/nonexistent/chromium")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no Chromium found"):
        conftest.need_browser()
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="CI needs a browser"):
        conftest.need_browser()
