"""100 requests per minute per person; all keys of one member share the bucket."""

from __future__ import annotations

from dataclasses import replace

from mockserver.app import create_app
from mockserver.settings import Settings
from tests.conftest import TEST_SETTINGS
from tests.support.client import ApiClient, ControlClient
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
