"""100 requests per minute per person; all keys of one member share the bucket."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from mockserver.app import create_app
from mockserver.settings import Settings
from tests.conftest import TEST_SETTINGS
from tests.support.client import ApiClient, ControlClient
from tests.support.control_check import CheckedControl
from tests.support.inproc import InProcessClient


def test_authenticated_responses_carry_rate_limit_headers(api):
    first = api.get("/v1/campaigns")
    second = api.get("/v1/campaigns", params={"limit": 0})  # an error still counts and says so
    assert first.headers["x-ratelimit-limit"] == "100"
    assert int(first.headers["x-ratelimit-remaining"]) == 99
    assert int(second.headers["x-ratelimit-remaining"]) == 98
    assert 0 < int(first.headers["x-ratelimit-reset"]) <= 60


def test_two_keys_of_one_member_share_a_bucket_and_the_101st_request_is_429(api, control):
    for i in range(100):
        response = api.get("/v1/products", key="owner" if i % 2 else "owner2")
        assert response.status_code == 200
    limited = api.get("/v1/products", key="owner")
    assert limited.status_code == 429 and limited.json()["code"] == "rate_limited"
    assert int(limited.headers["Retry-After"]) > 0
    assert limited.headers["x-ratelimit-remaining"] == "0"
    assert api.get("/v1/products", key="owner2").status_code == 429
    assert api.get("/v1/products", key="admin").status_code == 200, (
        "another person has their own bucket"
    )
    control.advance(61)
    assert api.get("/v1/products", key="owner").status_code == 200


def test_openapi_json_is_never_counted_nor_limited(api):
    for _ in range(150):
        response = api.get("/v1/openapi.json", key=None)
        assert response.status_code == 200
        assert "x-ratelimit-limit" not in response.headers
    assert api.get("/v1/products").headers["x-ratelimit-remaining"] == "99"


def test_the_limit_is_a_command_line_choice():
    app = create_app(replace(TEST_SETTINGS, rate_limit=3))
    with InProcessClient(app, base_url="http://mock.test") as http:
        api, control = ApiClient(http), ControlClient(http)
        statuses = [api.get("/v1/products").status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        assert api.get("/v1/products").headers["x-ratelimit-limit"] == "3"
        control.advance(60)
        assert api.get("/v1/products").status_code == 200
    assert Settings().rate_limit is None


# -- the window on the manual clock, seen and emptied (issue 24 part 5) ------------------------


def limited_mock(limit: int, **settings: Any) -> Iterator[tuple[ApiClient, CheckedControl]]:
    """A mock with a small limit: its API (answers checked against the contract) and its
    control plane (answers checked against the control document)."""
    app = create_app(replace(TEST_SETTINGS, rate_limit=limit, **settings))
    with InProcessClient(app, base_url="http://mock.test") as http:
        yield ApiClient(http), CheckedControl(http)
    app.close()


@pytest.fixture
def limited() -> Iterator[tuple[ApiClient, CheckedControl]]:
    yield from limited_mock(3)


def buckets(control: CheckedControl, **params: Any) -> dict[tuple[str, str], dict[str, Any]]:
    listed = control.call("GET", "/rate-limits", **params)
    return {(b["workspace"], b["member"]): b for b in listed["buckets"]}


def test_a_429_on_the_manual_clock_says_the_window_moves_with_the_mock_clock(limited):
    api, _ = limited
    statuses = [api.get("/v1/products").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    refused = api.get("/v1/products")
    body = refused.json()
    assert refused.status_code == 429 and body["code"] == "rate_limited"
    assert (
        refused.headers["Retry-After"] == "60" and refused.headers["x-ratelimit-remaining"] == "0"
    )
    assert body["error"].startswith("rate limit of 3 requests per minute reached; retry after 60")
    for said in (
        "manual clock",
        "POST /_mock/clock/advance",
        "control plane",
        "DELETE /_mock/rate-limits/",
        "--rate-limit",
    ):
        assert said in body["error"], (said, body["error"])


def test_a_429_on_the_real_clock_says_what_it_said_before():
    for api, _ in limited_mock(1, clock="real"):
        assert api.get("/v1/products").status_code == 200
        refused = api.get("/v1/products")
        assert refused.status_code == 429 and refused.json()["code"] == "rate_limited"
        retry = refused.headers["Retry-After"]
        assert refused.json()["error"] == (
            f"rate limit of 1 requests per minute reached; retry after {retry} seconds"
        )


def test_buckets_show_used_limit_and_reset_on_the_mock_clock_per_person(limited):
    api, control = limited
    assert buckets(control) == {}, "nobody has called yet"
    api.get("/v1/products", key="owner")
    control.call("POST", "/clock/advance", {"seconds": 20})
    api.get("/v1/products", key="owner2")  # alice's other key: the same bucket
    api.get("/v1/campaigns", key="viewer")
    listed = control.call("GET", "/rate-limits")
    assert listed["limit"] == 3 and listed["windowSeconds"] == 60 and listed["clock"] == "manual"
    assert listed["now"] == "2026-11-20T09:00:20Z"
    found = buckets(control)
    assert set(found) == {("acme", "alice"), ("acme", "victor")}
    alice = found["acme", "alice"]
    assert (alice["used"], alice["limit"], alice["remaining"]) == (2, 3, 1)
    assert alice["windowStartedAt"] == "2026-11-20T09:00:00Z"
    assert alice["resetsAt"] == "2026-11-20T09:01:00Z" and alice["resetsInSeconds"] == 40
    assert found["acme", "victor"]["used"] == 1
    assert found["acme", "victor"]["resetsAt"] == "2026-11-20T09:01:20Z"
    text = str(listed)
    assert "sk_test" not in text and "key_" not in text, "a bucket is never shown by its key"
    control.call("POST", "/clock/advance", {"seconds": 40})
    assert set(buckets(control)) == {("acme", "victor")}, "alice's window has ended"


def test_an_emptied_bucket_lets_its_person_call_again_with_either_key(limited):
    api, control = limited
    for key in ("owner", "owner2", "owner"):
        assert api.get("/v1/products", key=key).status_code == 200
    assert api.get("/v1/products", key="owner2").status_code == 429
    api.get("/v1/products", key="admin")
    emptied = control.call("DELETE", "/rate-limits/acme/alice")
    assert emptied == {"success": True, "workspace": "acme", "member": "alice", "remaining": 3}
    assert set(buckets(control)) == {("acme", "bob")}, "only alice's bucket was emptied"
    again = api.get("/v1/products", key="owner2")
    assert again.status_code == 200 and again.headers["x-ratelimit-remaining"] == "2"
    assert control.call("DELETE", "/rate-limits/acme/alice")["remaining"] == 3
    for path in ("/rate-limits/acme/nobody", "/rate-limits/nowhere/alice"):
        response = control.request("DELETE", path)
        assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_a_sandbox_counts_in_buckets_of_its_own(limited):
    api, control = limited
    sandbox = control.call("POST", "/sandboxes", {"workspace": "acme"})["sandbox"]
    key = next(k["key"] for k in sandbox["keys"] if k["member"] == "alice")
    for _ in range(3):
        assert api.get("/v1/products", key=key).status_code == 200
    assert api.get("/v1/products", key=key).status_code == 429
    assert buckets(control) == {}, "the base world's alice has called nothing"
    inside = buckets(control, sandbox=sandbox["id"])
    assert inside["acme", "alice"]["used"] == 3
    assert api.get("/v1/products", key="owner").status_code == 200
    control.call("DELETE", "/rate-limits/acme/alice")  # the base world's: the sandbox's stays
    assert api.get("/v1/products", key=key).status_code == 429
    control.call("DELETE", "/rate-limits/acme/alice", sandbox=sandbox["id"])
    assert api.get("/v1/products", key=key).status_code == 200
    control.call("DELETE", f"/sandboxes/{sandbox['id']}")


# -- the limit set through the control plane (issue 25 part 4) ----------------------------------


def test_the_limit_set_on_the_control_plane_holds_from_the_next_request_until_a_reset(limited):
    api, control = limited
    assert api.get("/v1/products").headers["x-ratelimit-remaining"] == "2"
    answer = control.call("PUT", "/rate-limits", {"limit": 5})
    assert answer == {"success": True, "limit": 5, "startLimit": 3, "windowSeconds": 60}
    kept = api.get("/v1/products")
    assert kept.headers["x-ratelimit-limit"] == "5", "the open window's count is kept"
    assert kept.headers["x-ratelimit-remaining"] == "3"
    assert control.call("GET", "/rate-limits")["limit"] == 5
    control.call("PUT", "/rate-limits", {"limit": 1})
    refused = api.get("/v1/products", key="owner2")
    assert refused.status_code == 429 and refused.json()["code"] == "rate_limited"
    assert "PUT /_mock/rate-limits" in refused.json()["error"]
    assert api.get("/v1/products", key="admin").status_code == 200, "bob's bucket holds 1"
    assert api.get("/v1/products", key="admin").status_code == 429
    control.call("POST", "/reset")
    back = api.get("/v1/products")
    assert back.status_code == 200 and back.headers["x-ratelimit-limit"] == "3"
    assert control.call("GET", "/rate-limits")["limit"] == 3


def test_a_limit_set_for_a_sandbox_holds_there_only(limited):
    api, control = limited
    sandbox = control.call("POST", "/sandboxes", {"workspace": "acme"})["sandbox"]
    keys = [k["key"] for k in sandbox["keys"] if k["member"] == "alice"]
    control.call("PUT", "/rate-limits", {"limit": 2}, sandbox=sandbox["id"])
    statuses = [api.get("/v1/products", key=keys[i % 2]).status_code for i in range(3)]
    assert statuses == [200, 200, 429], "one bucket for alice's two keys, at the sandbox's limit"
    base = api.get("/v1/products")
    assert base.status_code == 200 and base.headers["x-ratelimit-limit"] == "3"
    assert control.call("GET", "/rate-limits", sandbox=sandbox["id"])["limit"] == 2
    control.call("POST", "/reset", sandbox=sandbox["id"])
    assert control.call("GET", "/rate-limits", sandbox=sandbox["id"])["limit"] == 3
    control.call("DELETE", f"/sandboxes/{sandbox['id']}")


def test_a_limit_outside_its_bounds_is_refused_and_changes_nothing(limited):
    api, control = limited
    for body in ({"limit": 0}, {"limit": "5"}, {}, {"limit": 5, "window": 10}):
        response = control.request("PUT", "/rate-limits", body)
        assert response.status_code == 400 and response.json()["code"] == "invalid_request"
    assert control.call("GET", "/rate-limits")["limit"] == 3
    assert api.get("/v1/products").headers["x-ratelimit-limit"] == "3"
