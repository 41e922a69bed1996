"""Every response carries its request id; successes say so; timestamps are UTC ending in Z."""

from __future__ import annotations

import re

import pytest

from mockserver.platform.errors import ApiError, statuses_by_code

STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")


def test_request_ids_are_unique_across_successes_errors_and_unknown_paths(api):
    responses = [
        api.get("/v1/campaigns"),
        api.get("/v1/campaigns", params={"limit": 0}),
        api.get("/v1/campaigns", key=None),
        api.get("/v1/no-such-thing"),
        api.get("/nowhere", key=None),
        api.request("TRACE", "/v1/campaigns"),
        api.get("/v1/openapi.json", key=None),
    ]
    ids = [r.headers["x-request-id"] for r in responses]
    assert all(ids) and len(set(ids)) == len(ids)


def test_unknown_paths_and_methods_answer_404_in_the_standard_body(api):
    for response in (api.get("/v1/nope"), api.delete("/v1/campaigns"), api.get("/", key=None)):
        assert response.status_code == 404
        assert response.json() == {**response.json(), "success": False, "code": "not_found"}


def timestamps(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key.endswith("At") and isinstance(value, str):
                yield value
            yield from timestamps(value)
    elif isinstance(node, list):
        for item in node:
            yield from timestamps(item)


def test_success_bodies_say_success_and_timestamps_end_in_z(api):
    for path in (
        "/v1/campaigns",
        "/v1/channels",
        "/v1/products",
        "/v1/projects",
        "/v1/capabilities",
        "/v1/usage",
    ):
        body = api.get(path).json()
        assert body["success"] is True
        for stamp in timestamps(body):
            assert STAMP.match(stamp), (path, stamp)


def test_a_code_cannot_leave_under_a_status_its_table_does_not_list():
    with pytest.raises(ValueError):
        ApiError("not_found", "x", status=409)
    with pytest.raises(ValueError):
        ApiError("teapot", "x")
    assert ApiError("upstream_error", "x", status=502).status == 502
    assert ApiError("upstream_error", "x").status == 500
    assert statuses_by_code()["capability_unavailable"] == (503,)


@pytest.mark.parametrize("segment", ["%0A", "%0D%0A", "%20", "a%2Fb"])
def test_odd_path_segments_reach_their_operation(api, segment):
    response = api.get(f"/v1/jobs/{segment}")
    assert response.status_code == 404 and "x-ratelimit-limit" in response.headers
