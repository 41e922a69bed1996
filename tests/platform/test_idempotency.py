"""One logical operation per Idempotency-Key: replayed, never executed twice."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.support.contract_check import check_response


def projects(api) -> list[dict]:
    return api.walk("/v1/projects", "projects", limit=100)


def test_same_key_same_body_replays_status_and_body_with_no_second_resource(api):
    before = len(projects(api))
    first = api.post("/v1/projects", json={"title": "Once"}, headers={"Idempotency-Key": "k-1"})
    again = api.post("/v1/projects", json={"title": "Once"}, headers={"Idempotency-Key": "k-1"})
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert first.headers["x-request-id"] != again.headers["x-request-id"]
    assert len(projects(api)) == before + 1


def test_same_key_different_body_is_refused(api):
    api.post("/v1/projects", json={"title": "One"}, headers={"Idempotency-Key": "k-2"})
    response = api.post("/v1/projects", json={"title": "Two"}, headers={"Idempotency-Key": "k-2"})
    assert response.status_code == 409
    assert response.json()["details"]["reason"] == "idempotency_key_reused"


def test_a_key_is_scoped_to_its_workspace(api):
    a = api.post("/v1/projects", json={"title": "Same"}, headers={"Idempotency-Key": "shared"})
    b = api.post(
        "/v1/projects", json={"title": "Same"}, headers={"Idempotency-Key": "shared"}, key="globex"
    )
    assert a.status_code == b.status_code == 200
    assert a.json()["project"]["id"] != b.json()["project"]["id"]


def test_a_failed_call_does_not_hold_its_key(api):
    failed = api.post(
        "/v1/projects",
        json={"title": "x", "kind": "audio", "mediaType": "video"},
        headers={"Idempotency-Key": "k-3"},
    )
    assert failed.status_code == 400
    fixed = api.post(
        "/v1/projects", json={"title": "x", "kind": "audio"}, headers={"Idempotency-Key": "k-3"}
    )
    assert fixed.status_code == 200


def test_the_key_is_honoured_on_other_creating_calls(api):
    first = api.post("/v1/products", json={"name": "Once"}, headers={"Idempotency-Key": "prod-1"})
    again = api.post("/v1/products", json={"name": "Once"}, headers={"Idempotency-Key": "prod-1"})
    assert first.json() == again.json()
    assert [p["name"] for p in api.walk("/v1/products", "products")].count("Once") == 1


def test_keys_expire_after_their_retention(api, control):
    from mockserver.contract import default_contract

    retention = default_contract().limits["idempotencyKeyRetentionSeconds"]
    first = api.post("/v1/products", json={"name": "Kept"}, headers={"Idempotency-Key": "old"})
    control.advance(retention + 1)
    later = api.post("/v1/products", json={"name": "Kept"}, headers={"Idempotency-Key": "old"})
    assert later.json()["product"]["id"] != first.json()["product"]["id"]


def test_expired_keys_are_swept_from_the_state(api, control):
    """Memory stays bounded: kept answers leave the state when they expire, used again or not."""
    from mockserver.contract import default_contract

    retention = default_contract().limits["idempotencyKeyRetentionSeconds"]

    def kept() -> set[str]:
        sections = control.call("GET", "/snapshot")["snapshot"]["idempotency"]
        return {key for entries in sections.values() for key in entries}

    api.post("/v1/products", json={"name": "P0"}, headers={"Idempotency-Key": "k0"})
    control.advance(retention / 2)
    api.post("/v1/products", json={"name": "P1"}, headers={"Idempotency-Key": "k1"})
    assert kept() == {"k0", "k1"}
    control.advance(retention / 2)  # k0 is a full retention old: swept as the clock moves
    assert kept() == {"k1"}
    control.advance(retention)
    assert kept() == set()


def test_fifty_concurrent_same_key_creates_make_one_project_through_asgi(mock_app, api):
    before = len(projects(api))

    async def burst() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=mock_app)
        async with httpx.AsyncClient(transport=transport, base_url="http://mock.test") as client:
            return await asyncio.gather(
                *(
                    client.post(
                        "/v1/projects",
                        json={"title": "Concurrent"},
                        headers={
                            "Authorization": "Bearer sk_test_acme_owner",
                            "Idempotency-Key": "burst",
                        },
                    )
                    for _ in range(50)
                )
            )

    responses = asyncio.run(burst())
    for response in responses:
        check_response(response)
    assert {r.status_code for r in responses} == {200}
    assert len({r.json()["project"]["id"] for r in responses}) == 1
    assert len(projects(api)) == before + 1


def test_fifty_concurrent_same_key_creates_make_one_project_over_real_http(live):
    api, control = live
    control.call("PUT", "/workspaces/acme/credits", {"balance": 10000})
    before = len(api.walk("/v1/projects", "projects", limit=100))

    def create(_: int) -> httpx.Response:
        return api.post(
            "/v1/projects", json={"title": "Threads"}, headers={"Idempotency-Key": "threads"}
        )

    with ThreadPoolExecutor(max_workers=25) as pool:
        responses = list(pool.map(create, range(50)))
    assert {r.status_code for r in responses} == {200}
    assert len({r.json()["project"]["id"] for r in responses}) == 1
    assert len(api.walk("/v1/projects", "projects", limit=100)) == before + 1
