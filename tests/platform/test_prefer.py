"""Per-request answers: ``Prefer: code=<status>[, reason=<code>]`` (mockserver/platform/prefer.py).

Every answer goes through HTTP (the ASGI app) and is checked against the contract (ApiClient:
tests/support/contract_check.py). The statuses and codes an operation states are read here
from the contract too, never listed by hand.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockserver.app import create_app
from mockserver.contract import default_contract
from mockserver.platform.prefer import stated_errors
from tests.conftest import TEST_SETTINGS
from tests.support.client import ApiClient
from tests.support.contract_check import router
from tests.support.inproc import InProcessClient

CONTRACT = default_contract()
OPERATIONS = sorted(CONTRACT.operations.values(), key=lambda op: op.operation_id)
FILM = {"title": "T", "logline": "L", "genre": "drama", "projectId": "prj_acme_01"}
RETRY_AFTER = {("rate_limited", 429): "30", ("upstream_unavailable", 503): "5"}


def concrete_path(op) -> str:
    """A path that routes to ``op`` (its parameters filled with a value no concrete segment
    has); the answer comes before the parameters are read."""
    path = re.sub(r"\{(\w+)\}", r"prefer_\1", op.path)
    assert router().match(op.method, path)[0] == op, path
    return path


def ask(api: ApiClient, op, prefer: str, **kwargs):
    return api.request(op.method, concrete_path(op), headers={"Prefer": prefer}, **kwargs)


def assert_preferred(response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    applied = f"code={status}, reason={code}"
    assert body["code"] == code and body["success"] is False
    assert body["details"] == {"reason": "prefer", "prefer": applied}
    assert response.headers["Preference-Applied"] == applied
    assert response.headers.get("Retry-After") == RETRY_AFTER.get((code, status))
    if status == 429:
        assert response.headers["x-ratelimit-remaining"] == "0"
        assert response.headers["x-ratelimit-reset"] == "30"


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.operation_id)
def test_each_stated_status_answers_its_first_code(api, op):
    stated = stated_errors(CONTRACT, op)
    assert stated, f"{op.operation_id} states no error"
    for status, codes in sorted(stated.items()):
        assert_preferred(ask(api, op, f"code={status}"), status, codes[0])


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.operation_id)
def test_reason_picks_each_code_of_a_status(api, op):
    for status, codes in sorted(stated_errors(CONTRACT, op).items()):
        for code in codes:
            assert_preferred(ask(api, op, f"code={status}, reason={code}"), status, code)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_operation_any_stated_status_any_spelling(api, control, data):
    """The header as clients write it: any case, spaces, quotes, other preferences around it,
    parameters after ``;``."""
    control.call("DELETE", "/rate-limits/acme/alice")  # each example starts with a full window
    op = data.draw(st.sampled_from(OPERATIONS), label="operation")
    stated = stated_errors(CONTRACT, op)
    status = data.draw(st.sampled_from(sorted(stated)), label="status")
    code = data.draw(st.none() | st.sampled_from(stated[status]), label="reason")
    space = st.sampled_from(["", " ", "  "])
    name = data.draw(st.sampled_from(["code", "CODE", "Code"]))
    value = data.draw(st.sampled_from([str(status), f'"{status}"']))
    parts = [f"{name}={value}"]
    if code is not None:
        parts.append(f"reason={code}")
    if data.draw(st.booleans(), label="other preference"):
        parts.insert(data.draw(st.integers(0, len(parts))), "return=minimal")
    separator = data.draw(st.sampled_from([",", ";"]))
    header = (separator + data.draw(space)).join(parts)
    response = ask(api, op, data.draw(space) + header)
    assert_preferred(response, status, code or stated[status][0])


def test_a_status_the_operation_does_not_state_is_refused_with_the_stated_ones(api):
    op = CONTRACT.operations["createProject"]
    stated = sorted(stated_errors(CONTRACT, op))
    assert 402 not in stated  # creating a project costs nothing
    for asked in ("402", "418", "200", "abc", ""):
        response = ask(api, op, f"code={asked}", json={"title": "x"})
        assert response.status_code == 400, response.text
        body = response.json()
        assert body["code"] == "invalid_request"
        assert body["details"] == {
            "reason": "unstated_status",
            "operationId": "createProject",
            "statuses": stated,
        }
        assert ", ".join(map(str, stated)) in body["error"]
        assert "Preference-Applied" not in response.headers


def test_a_code_the_status_does_not_list_is_refused_with_the_listed_ones(api):
    op = router().match("POST", "/v1/text/film")[0]
    codes = list(stated_errors(CONTRACT, op)[402])
    response = ask(api, op, "code=402, reason=rate_limited", json=FILM)
    assert response.status_code == 400, response.text
    assert response.json()["details"] == {
        "reason": "unstated_code",
        "operationId": op.operation_id,
        "status": 402,
        "codes": codes,
    }
    assert ", ".join(codes) in response.json()["error"]


def test_reason_without_code_is_refused_and_other_preferences_change_nothing(api):
    response = api.get("/v1/projects", headers={"Prefer": "reason=rate_limited"})
    assert response.status_code == 400
    assert response.json()["details"]["reason"] == "prefer_without_code"
    for other in ("return=minimal", "respond-async, wait=5", ""):
        response = api.get("/v1/projects", headers={"Prefer": other})
        assert response.status_code == 200, response.text
        assert "Preference-Applied" not in response.headers


def test_nothing_is_charged_created_or_changed(api, control, asgi_http):
    film = router().match("POST", "/v1/text/film")[0]
    create = CONTRACT.operations["createProject"]
    before = asgi_http.get("/_mock/snapshot").json()["snapshot"]
    projects = len(api.walk("/v1/projects", "projects"))
    balance = control.credits()
    for status in sorted(stated_errors(CONTRACT, film)):
        response = api.post(
            "/v1/text/film",
            json=FILM,
            headers={"Prefer": f"code={status}", "Idempotency-Key": f"film-{status}"},
        )
        assert response.status_code == status, response.text
    for status in sorted(stated_errors(CONTRACT, create)):
        response = api.post(
            "/v1/projects",
            json={"title": "Preferred"},
            headers={"Prefer": f"code={status}", "Idempotency-Key": "project-1"},
        )
        assert response.status_code == status, response.text
    assert control.credits() == balance
    assert len(api.walk("/v1/projects", "projects")) == projects
    # Records, balances, idempotency keys, deliveries, counters: all as they were.
    assert asgi_http.get("/_mock/snapshot").json()["snapshot"] == before
    # The Idempotency-Key was not held: the real request creates, and is no replay.
    real = api.post(
        "/v1/projects", json={"title": "Real"}, headers={"Idempotency-Key": "project-1"}
    )
    assert real.status_code == 200 and "Idempotent-Replayed" not in real.headers
    assert real.json()["project"]["title"] == "Real"


def test_authentication_comes_first_except_for_401_and_5xx(api):
    """As with faults; and a refused ``Prefer`` is refused where validation would refuse."""
    # 401 and 5xx need no key, as the faults that imitate an outage need none.
    for prefer, status in (("code=401", 401), ("code=500", 500), ("code=503", 503)):
        response = api.get("/v1/projects", key=None, headers={"Prefer": prefer})
        assert response.status_code == status, response.text
        assert "Preference-Applied" in response.headers
    # Every other status is answered only to a caller the mock knows.
    for key in (None, "sk_test_nobody"):
        response = api.get("/v1/projects", key=key, headers={"Prefer": "code=429"})
        assert response.status_code == 401 and "Preference-Applied" not in response.headers
    for key in (None, "sk_test_nobody"):
        response = api.get("/v1/projects", key=key, headers={"Prefer": "code=418"})
        assert response.status_code == 401, response.text
    # ...and after the workspace header.
    response = api.get("/v1/projects", headers={"Prefer": "code=429", "X-Workspace-Slug": "globex"})
    assert response.status_code == 403 and response.json()["details"]["reason"] == (
        "workspace_mismatch"
    )


def test_a_fault_waiting_for_the_request_answers_first(api, control):
    control.fault(match={"operationId": "listProjects"}, status=403, code="forbidden")
    response = api.get("/v1/projects", headers={"Prefer": "code=429"})
    assert response.status_code == 403 and response.json()["details"]["reason"] == "injected_fault"
    assert api.get("/v1/projects", headers={"Prefer": "code=429"}).status_code == 429


def test_the_journal_shows_a_preferred_answer(api, control):
    api.get("/v1/projects", headers={"Prefer": "code=503, reason=upstream_unavailable"})
    api.get("/v1/projects")
    preferred, worked_out = control.call("GET", "/requests?limit=2")["requests"]
    assert preferred["preferred"] == "code=503, reason=upstream_unavailable"
    assert preferred["status"] == 503 and preferred["code"] == "upstream_unavailable"
    assert preferred["responseHeaders"]["preference-applied"] == preferred["preferred"]
    assert worked_out["preferred"] is None and worked_out["status"] == 200
    only = control.call("GET", "/requests?statusClass=5xx")["requests"]
    assert [e["preferred"] for e in only] == ["code=503, reason=upstream_unavailable"]


def test_without_the_control_plane_the_header_is_ignored():
    app = create_app(replace(TEST_SETTINGS, control_plane=False))
    with InProcessClient(app, base_url="http://mock.test") as http:
        api = ApiClient(http)
        for prefer in ("code=429", "code=503", "code=418", "reason=nope"):
            response = api.get("/v1/projects", headers={"Prefer": prefer})
            assert response.status_code == 200, response.text
            assert "Preference-Applied" not in response.headers


def test_the_control_document_and_the_readme_describe_it():
    from mockserver.control.plane import control_contract

    described = control_contract().document["info"]["description"]
    assert "Prefer: code=<status>" in described and "reason=<code>" in described
    entry = control_contract().document["components"]["schemas"]["JournalEntry"]
    assert "preferred" in entry["required"]
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "#### Per-request answers (`Prefer`)" in readme
