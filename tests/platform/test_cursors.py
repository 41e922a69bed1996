"""Opaque, signed, query-bound, short-lived cursors over keyset paging."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockserver.contract import default_contract

LIFETIME = default_contract().limits["cursorLifetimeSeconds"]


def first_cursor(api, path: str = "/v1/campaigns", **params) -> str:
    body = api.get(path, params={"limit": 5, **params}).json()
    assert body["nextCursor"]
    return body["nextCursor"]


def refused(response, reason: str | None = None) -> None:
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid_request"
    if reason:
        assert response.json()["details"]["reason"] == reason


def test_the_last_page_has_a_null_cursor_and_has_more_agrees(api):
    body = api.get("/v1/products", params={"limit": 100}).json()
    assert body["nextCursor"] is None and body["hasMore"] is False
    first = api.get("/v1/products", params={"limit": 3}).json()
    assert first["nextCursor"] and first["hasMore"] is True


def test_a_tampered_cursor_is_refused(api):
    cursor = first_cursor(api)
    version, payload, mac = cursor.split(".")
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    data["p"] = 1
    forged = base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    for bad in (
        f"{version}.{forged}.{mac}",
        cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB"),
        "garbage",
        cursor + "x",
    ):
        refused(api.get("/v1/campaigns", params={"limit": 5, "cursor": bad}))


def test_a_cursor_is_bound_to_its_query(api):
    cursor = first_cursor(api, status="all")
    refused(
        api.get("/v1/campaigns", params={"limit": 5, "cursor": cursor, "status": "paused"}),
        "cursor_query_mismatch",
    )
    assert (
        api.get("/v1/campaigns", params={"limit": 7, "cursor": cursor, "status": "all"}).status_code
        == 200
    )
    assert api.get("/v1/campaigns", params={"limit": 7, "cursor": cursor}).status_code == 200, (
        "the default is part of the query"
    )


def test_a_cursor_of_one_list_is_refused_by_another(api):
    cursor = first_cursor(api, "/v1/projects")
    refused(api.get("/v1/campaigns", params={"cursor": cursor}))


def test_cursors_expire_on_the_mock_clock(api, control):
    cursor = first_cursor(api)
    control.advance(LIFETIME - 1)
    assert api.get("/v1/campaigns", params={"limit": 5, "cursor": cursor}).status_code == 200
    control.advance(2)
    refused(api.get("/v1/campaigns", params={"limit": 5, "cursor": cursor}), "cursor_expired")


def test_projects_refuse_cursors_from_before_the_store_switch(api):
    from mockserver.fixtures import load_fixtures
    from mockserver.resources import default_fixtures_path

    legacy = load_fixtures(default_fixtures_path())["legacyCursors"]["listProjects"]
    refused(api.get("/v1/projects", params={"cursor": legacy}), "cursor_predates_store_switch")


def test_a_page_can_be_empty_while_the_cursor_goes_on(api):
    pages = []
    cursor = None
    while True:
        params = {"limit": 10, **({"cursor": cursor} if cursor else {})}
        body = api.get("/v1/campaigns", params=params).json()
        pages.append(body)
        cursor = body["nextCursor"]
        if cursor is None:
            break
    empty = [p for p in pages if not p["campaigns"]]
    assert empty and all(p["nextCursor"] for p in empty), (
        "the fixtures hold an empty page that is not the last"
    )
    seen = [c["id"] for p in pages for c in p["campaigns"]]
    assert len(seen) == len(set(seen)) == 112


def test_a_walk_with_inserts_between_pages_sees_every_item_exactly_once(api):
    originals = {p["id"] for p in api.walk("/v1/products", "products")}
    seen: list[str] = []
    inserted: list[str] = []
    cursor = None
    while True:
        body = api.get(
            "/v1/products", params={"limit": 2, **({"cursor": cursor} if cursor else {})}
        ).json()
        seen.extend(p["id"] for p in body["products"])
        if len(inserted) < 4:
            created = api.post("/v1/products", json={"name": f"Inserted {len(inserted)}"})
            inserted.append(created.json()["product"]["id"])
        cursor = body["nextCursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)), "no item twice"
    assert set(seen) == originals | set(inserted), "none vanished, the inserted ones included"


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    limit=st.integers(2, 100),
    status=st.sampled_from(["all", "draft", "scheduled", "active", "paused", "completed"]),
)
def test_every_walk_of_campaigns_is_the_same_set_whatever_the_limit(api, control, limit, status):
    control.reset()  # a fresh rate-limit window for each example (a walk by 2 fits in one)
    expected = api.walk("/v1/campaigns", "campaigns", limit=100, status=status)
    walked = api.walk("/v1/campaigns", "campaigns", limit=limit, status=status)
    assert walked == expected


@pytest.mark.parametrize(
    "path,items",
    [
        ("/v1/products", "products"),
        ("/v1/channels", "channels"),
        ("/v1/projects", "projects"),
        ("/v1/usage", "usage"),
    ],
)
def test_every_cursor_list_walks_to_its_end(api, path, items):
    small = api.walk(path, items, limit=1)
    assert small == api.walk(path, items, limit=100)


@pytest.mark.parametrize("cursor", ["c1.x.\u0080", "c1.é.y", "\u0000", "c1..", "c1.e30.AAAA"])
def test_unreadable_cursors_answer_400_never_500(api, cursor):
    refused(api.get("/v1/campaigns", params={"cursor": cursor}))
