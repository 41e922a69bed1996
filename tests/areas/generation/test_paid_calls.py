"""Every paid generation call: charged from the table, refused whole, filed under its project."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.support.contract_check import check_response
from tests.support.generation import (
    CALLBACK_URL,
    GLOBEX_PROJECT,
    PAID,
    REQUESTS,
    SECRET,
    balance,
    jobs,
    ledger,
    price,
    refused,
    request,
    start,
    usage,
)

CAPABILITY = {
    "render": "video-render",
    "footage-edit": "video-edit",
    "footage": "footage",
    "remix": "video-analysis",
    "3d-from-text": "3d-from-text",
    "3d-from-image": "3d-from-image",
    "agent-run": "video-render",
    "film-outline": "film-outline",
}
PAID_KINDS = list(PAID)


def post(api, kind, *, key="owner", headers=None, **changes):
    path, body = request(kind, **changes)
    return api.post(path, json=body, key=key, headers=headers)


@pytest.mark.parametrize("kind", PAID_KINDS)
def test_each_call_charges_its_price_from_the_capability_table(api, kind):
    quantity = 4 if kind == "footage" else 1
    expected = price(api, CAPABILITY[kind]) * quantity
    body = post(api, kind).json()
    assert body["cost"]["credits"] == expected
    assert body["cost"]["balance"] == 10_000 - expected == balance(api)
    [charge] = usage(api)
    assert (charge["capability"], charge["quantity"], charge["credits"]) == (
        CAPABILITY[kind], quantity, expected,
    )  # fmt: skip
    assert charge["member"] == "alice"
    if kind != "film-outline":
        assert body["job"]["cost"] == expected
        assert charge["resourceId"] == body["job"]["id"]


def test_prices_are_live(api, control):
    control.capability("3d-from-text", price=7)
    assert start(api, "3d-from-text")["cost"]["credits"] == 7
    assert balance(api) == 10_000 - 7


@pytest.mark.parametrize("kind", PAID_KINDS)
def test_short_of_credits_answers_402_and_creates_nothing(api, control, kind):
    control.credits(balance=3)
    before = ledger(api)
    details = refused(post(api, kind), 402, "insufficient_credits")
    assert details["balance"] == 3
    assert details["shortfall"] == details["price"] - 3
    assert ledger(api) == before


@pytest.mark.parametrize("kind", PAID_KINDS)
def test_a_budget_cap_answers_402_budget_capped_and_a_top_up_does_not_lift_it(api, control, kind):
    control.call("PUT", "/workspaces/acme/members/alice/budget", {"capped": True})
    control.credits(balance=1_000_000)
    before = ledger(api)
    refused(post(api, kind), 402, "budget_capped")
    assert ledger(api) == before
    assert post(api, kind, key="admin").status_code == 200  # bob is not capped


@pytest.mark.parametrize("kind", PAID_KINDS)
def test_an_unavailable_capability_answers_503_and_creates_nothing(api, control, kind):
    control.capability(CAPABILITY[kind], available=False)
    before = ledger(api)
    details = refused(post(api, kind), 503, "capability_unavailable")
    assert details["capability"] == CAPABILITY[kind]
    assert ledger(api) == before


@pytest.mark.parametrize("kind", PAID_KINDS)
def test_a_viewer_key_may_not_spend(api, kind):
    before = ledger(api)
    refused(post(api, kind, key="viewer"), 403, "forbidden")
    assert ledger(api) == before


@pytest.mark.parametrize("kind", PAID_KINDS)
def test_a_project_of_another_workspace_is_not_found_and_nothing_is_filed(api, kind):
    before = ledger(api)
    globex_before = (balance_of(api, "globex"), len(jobs(api, key="globex")))
    refused(post(api, kind, projectId=GLOBEX_PROJECT), 404, "not_found")
    refused(post(api, kind, projectId="prj_nowhere"), 404, "not_found")
    assert ledger(api) == before
    assert (balance_of(api, "globex"), len(jobs(api, key="globex"))) == globex_before


def balance_of(api, key):
    return api.get("/v1/capabilities", key=key).json()["balance"]["credits"]


@pytest.mark.parametrize("kind", PAID_KINDS)
def test_a_retry_with_the_same_idempotency_key_replays_the_same_work_charged_once(api, kind):
    first = post(api, kind, headers={"Idempotency-Key": f"gen-{kind}"})
    again = post(api, kind, headers={"Idempotency-Key": f"gen-{kind}"})
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert len(usage(api)) == 1
    assert len(jobs(api)) == (0 if kind == "film-outline" else 1)


def test_fifty_concurrent_same_key_renders_make_one_job_and_one_charge(mock_app, api):
    path, body = REQUESTS["render"]

    async def burst() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=mock_app)
        async with httpx.AsyncClient(transport=transport, base_url="http://mock.test") as client:
            headers = {"Authorization": "Bearer sk_test_acme_owner", "Idempotency-Key": "burst"}
            return await asyncio.gather(
                *(client.post(path, json=body, headers=headers) for _ in range(50))
            )

    responses = asyncio.run(burst())
    for response in responses:
        check_response(response)
    assert {r.status_code for r in responses} == {200}
    assert len({r.json()["job"]["id"] for r in responses}) == 1
    assert len(jobs(api)) == 1
    assert [e["credits"] for e in usage(api)] == [400]
    assert balance(api) == 9_600


@pytest.mark.parametrize("max_credits", [0, 119])
def test_footage_above_max_credits_answers_409_and_charges_nothing(api, max_credits):
    before = ledger(api)
    response = post(api, "footage", durationSeconds=4, maxCredits=max_credits)
    details = refused(response, 409, "conflict")
    assert details["reason"] == "price_above_max_credits"
    assert (details["price"], details["maxCredits"]) == (120, max_credits)
    assert ledger(api) == before


def test_footage_at_max_credits_runs_and_the_cap_follows_the_live_price(api, control):
    assert post(api, "footage", durationSeconds=4, maxCredits=120).status_code == 200
    control.capability("footage", price=31)
    before = ledger(api)
    details = refused(post(api, "footage", durationSeconds=4, maxCredits=120), 409, "conflict")
    assert details["price"] == 124
    assert ledger(api) == before


def test_footage_is_priced_per_second_with_the_contract_default(api):
    path, body = request("footage")
    del body["durationSeconds"]
    response = api.post(path, json=body)
    assert response.json()["cost"]["lines"][0]["quantity"] == 10  # the contract's default
    assert response.json()["cost"]["credits"] == 300


@pytest.mark.parametrize("kind", ["render", "footage-edit", "3d-from-text", "3d-from-image"])
def test_a_callback_url_the_service_would_not_deliver_to_is_refused_before_any_charge(api, kind):
    before = ledger(api)
    response = post(api, kind, callbackUrl="ftp://hooks.example.com/x", callbackSecret=SECRET)
    assert refused(response, 400, "invalid_request")["field"] == "callbackUrl"
    assert ledger(api) == before
    assert post(api, kind, callbackUrl=CALLBACK_URL, callbackSecret=SECRET).status_code == 200


def test_an_image_url_the_service_would_not_fetch_is_refused(api):
    before = ledger(api)
    response = post(api, "3d-from-image", imageUrl="ftp://images.example.com/chair.png")
    assert refused(response, 400, "invalid_request")["field"] == "imageUrl"
    assert ledger(api) == before
