"""Many processes on one PostgreSQL database behave as one mock.

Two ``mockserver`` processes on different ports share a database (each request is sent to
a chosen one, so every test knows which process answered), and one ``mockserver --workers 2``
spreads connections over its workers. A real PostgreSQL server (tests/support/postgres.py):
without one the tests skip with the reason, and under CI that skip is a failure.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from conformance.mockprocess import MockProcess
from tests.store.process import mock_process, running
from tests.support.client import ApiClient, ControlClient
from tests.support.postgres import fresh_schema_url, required_server_url

OWNER = {"Authorization": "Bearer sk_test_acme_owner"}
RENDER = {"projectId": "prj_acme_01", "story": "A walk in the park."}
RENDER_PRICE = 400
FOOTAGE = ["https://videos.example.com/cooking/perfect-rice"]


@pytest.fixture(scope="module")
def database() -> str:
    return required_server_url()


@pytest.fixture
def pair(database: str) -> Iterator[tuple[MockProcess, MockProcess]]:
    """Two mock processes on one fresh schema of the database."""
    url = fresh_schema_url()
    args = ("--store", url, "--clock", "manual", "--allow-private-callbacks", "--rate-limit",
            "1000")  # fmt: skip
    with running(*args) as first, running(*args) as second:
        yield first, second


def both(pair: tuple[MockProcess, MockProcess]) -> tuple[httpx.Client, httpx.Client]:
    return tuple(httpx.Client(base_url=p.base_url, timeout=30) for p in pair)  # type: ignore[return-value]


def test_one_idempotency_key_executes_once_across_processes(pair):
    a, b = both(pair)
    ControlClient(a).credits(balance=100_000)

    def send(n: int) -> httpx.Response:
        return (a, b)[n % 2].post(
            "/v1/video/render", json=RENDER, headers={**OWNER, "Idempotency-Key": "same"}
        )

    with ThreadPoolExecutor(max_workers=32) as pool:
        answers = list(pool.map(send, range(32)))
    assert {r.status_code for r in answers} <= {200, 409}
    made = {r.json()["job"]["id"] for r in answers if r.status_code == 200}
    assert len(made) == 1, "one resource"
    assert all(r.json()["code"] == "conflict" for r in answers if r.status_code == 409), (
        "a 409 only for a request still in flight"
    )
    assert ControlClient(b).credits() == 100_000 - RENDER_PRICE, "one charge"


def test_credits_are_never_spent_twice_nor_below_zero(pair):
    a, b = both(pair)
    ControlClient(a).credits(balance=5 * RENDER_PRICE)

    def send(n: int) -> httpx.Response:
        return (a, b)[n % 2].post(
            "/v1/video/render", json=RENDER, headers={**OWNER, "Idempotency-Key": f"k{n}"}
        )

    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(send, range(16)))
    assert sorted(r.status_code for r in answers) == [200] * 5 + [402] * 11
    assert ControlClient(a).credits() == 0 == ControlClient(b).credits()


def test_one_rate_bucket_per_person_across_processes(database):
    url = fresh_schema_url()
    args = ("--store", url, "--clock", "manual", "--rate-limit", "10")
    with running(*args) as first, running(*args) as second:
        a, b = both((first, second))
        answers = [(a, b)[n % 2].get("/v1/projects", headers=OWNER) for n in range(20)]
        assert [r.status_code for r in answers].count(200) == 10
        assert [r.status_code for r in answers].count(429) == 10
        assert answers[-1].headers["x-ratelimit-remaining"] == "0"


def test_a_burst_is_counted_exactly_request_by_request(database):
    """Requests that arrive together are caught up and counted by one statement per process
    (store/replica.py): each still gets a count of its own."""
    url = fresh_schema_url()
    args = ("--store", url, "--clock", "manual", "--rate-limit", "10")
    with running(*args) as first, running(*args) as second:
        a, b = both((first, second))

        def send(n: int) -> httpx.Response:
            return (a, b)[n % 2].get("/v1/projects", headers=OWNER)

        with ThreadPoolExecutor(max_workers=24) as pool:
            answers = list(pool.map(send, range(24)))
        statuses = [r.status_code for r in answers]
        assert statuses.count(200) == 10 and statuses.count(429) == 14, statuses
        remaining = sorted(int(r.headers["x-ratelimit-remaining"]) for r in answers)
        assert remaining == [0] * 15 + list(range(1, 10)), "one count per admitted request"


def test_a_cursor_from_one_process_pages_on_the_other(pair):
    a, b = both(pair)
    page = a.get("/v1/campaigns", params={"limit": 1}, headers=OWNER).json()
    assert page["hasMore"]
    following = b.get(
        "/v1/campaigns", params={"limit": 1, "cursor": page["nextCursor"]}, headers=OWNER
    )
    assert following.status_code == 200, following.text
    assert following.json()["campaigns"][0]["id"] != page["campaigns"][0]["id"]


def test_control_plane_changes_are_seen_by_every_process(pair):
    a, b = both(pair)
    control_a, control_b = ControlClient(a), ControlClient(b)
    control_a.credits(balance=1234)
    assert control_b.credits() == 1234
    control_a.advance(3600)
    assert control_b.now() == control_a.now() == "2026-11-20T10:00:00Z"
    control_a.governance(killSwitch=True)
    assert ControlClient(b).call("GET", "/workspaces/acme/governance")["governance"]["killSwitch"]
    control_a.fault(match={"operationId": "listProjects"}, status=503,
                    code="upstream_unavailable", count=1)  # fmt: skip
    assert b.get("/v1/projects", headers=OWNER).status_code == 503, "the fault fires on b"
    assert a.get("/v1/projects", headers=OWNER).status_code == 200, "once, for both"


def subscribe_and_edit(api: ApiClient, receiver_url: str) -> None:
    made = api.post(
        "/v1/webhook-subscriptions",
        json={"url": f"{receiver_url}/hook", "events": ["job.progressed"],
              "secret": "s" * 32},
        headers={"Idempotency-Key": "sub"},
    )  # fmt: skip
    assert made.status_code == 200, made.text
    edit = api.post("/v1/video/edit", json={"projectId": "prj_acme_01", "footageUrls": FOOTAGE})
    assert edit.status_code == 200, edit.text


def test_the_scheduler_and_deliveries_run_once(pair, receiver):
    a, b = both(pair)
    subscribe_and_edit(ApiClient(a), receiver.url)
    ControlClient(b).advance(3600)  # the job moves on once, wherever it is asked
    for client in (a, b, a, b):
        ControlClient(client).call("POST", "/deliveries/flush", {"timeoutSeconds": 15})
    bodies = [json.loads(d.body) for d in receiver.deliveries]
    assert bodies, "deliveries were made"
    ids = [body["eventId"] for body in bodies]
    assert len(ids) == len(set(ids)), "each event delivered once, not once per process"
    events = ApiClient(b).get("/v1/jobs/" + bodies[0]["data"]["jobId"] + "/events").json()
    assert len({e["sequence"] for e in events["events"]}) == len(events["events"])


def test_a_process_that_dies_mid_delivery_is_replaced_and_the_event_retried(database, receiver):
    url = fresh_schema_url()
    # Claims of 2 s, renewed every second while their attempt is under way (the attempt
    # timeout is 10 s): the default, 15 s, would be waited out after the kill.
    args = ("--store", url, "--clock", "manual", "--allow-private-callbacks",
            "--delivery-lease", "2")  # fmt: skip
    first = mock_process(*args)
    try:
        with running(*args) as second:
            a, b = both((first, second))
            # The first attempt never gets an answer (scripted before the edit: the job's first
            # event may be delivered as soon as the edit is answered).
            receiver.script(["hang"])
            subscribe_and_edit(ApiClient(a), receiver.url)
            ControlClient(a).advance(60)
            # Past the lease and a look of the other process's loop, the attempt still running.
            ControlClient(a).call("POST", "/deliveries/flush", {"timeoutSeconds": 3.5})
            # The delivery answered "hang" (the receiver's session may still get deliveries
            # from mocks of earlier tests: they are kept apart, see tests/support/receiver.py).
            hanging = [d for d in receiver.deliveries if d.answer == "hang"]
            assert hanging, "the first process attempted"
            hung = json.loads(hanging[0].body)["eventId"]
            after = receiver.deliveries.index(hanging[0]) + 1
            again = [json.loads(d.body)["eventId"] for d in receiver.deliveries[after:]]
            assert hung not in again, "a live process's claim is renewed, never taken over"
            first.kill()  # mid-attempt: its claim lapses, the other process takes over
            deadline = time.monotonic() + 60
            seen: list[str] = []
            while time.monotonic() < deadline:
                seen = [json.loads(d.body)["eventId"] for d in receiver.deliveries[after:]]
                if hung in seen:
                    break
                time.sleep(0.5)
            assert hung in seen, "retried by the surviving process, same eventId"
            deliveries = ControlClient(b).call("GET", "/deliveries")["deliveries"]
            retried = [d for d in deliveries if d["eventId"] == hung]
            assert retried and retried[0]["state"] == "delivered"
    finally:
        first.stop()


def test_workers_2_behave_as_one_mock(database):
    url = fresh_schema_url()
    with running("--store", url, "--clock", "manual", "--workers", "2") as mock:
        with httpx.Client(base_url=mock.base_url, timeout=30) as http:
            ControlClient(http).credits(balance=100_000)

        def send(_: int) -> httpx.Response:
            # A new connection each time, so the requests spread over the workers.
            with httpx.Client(base_url=mock.base_url, timeout=30) as http:
                return http.post(
                    "/v1/video/render", json=RENDER, headers={**OWNER, "Idempotency-Key": "w"}
                )

        with ThreadPoolExecutor(max_workers=32) as pool:
            answers = list(pool.map(send, range(32)))
        assert {r.status_code for r in answers} <= {200, 409}
        assert len({r.json()["job"]["id"] for r in answers if r.status_code == 200}) == 1
        with httpx.Client(base_url=mock.base_url, timeout=30) as http:
            assert ControlClient(http).credits() == 100_000 - RENDER_PRICE


def test_a_sandbox_made_on_one_process_is_served_and_ended_by_the_other(pair):
    a, b = both(pair)
    made = ControlClient(a).call("POST", "/sandboxes", {"workspace": "acme"})["sandbox"]
    key = next(k["key"] for k in made["keys"] if k["role"] == "owner")
    auth = {"Authorization": f"Bearer {key}"}
    created = b.post("/v1/products", json={"name": "in the sandbox"}, headers=auth)
    assert created.status_code == 200, created.text
    names = [p["name"] for p in a.get("/v1/products", headers=auth).json()["products"]]
    assert "in the sandbox" in names, "the sandbox's world is one, whichever process answers"
    assert "in the sandbox" not in [
        p["name"] for p in a.get("/v1/products", headers=OWNER).json()["products"]
    ]
    listed = ControlClient(b).call("GET", "/sandboxes")["sandboxes"]
    assert [s["id"] for s in listed] == [made["id"]]
    ControlClient(b).call("POST", f"/clock/advance?sandbox={made['id']}", {"seconds": 60})
    assert ControlClient(a).call("GET", f"/clock?sandbox={made['id']}")["now"] == (
        "2026-11-20T09:01:00Z"
    )
    ControlClient(b).call("DELETE", f"/sandboxes/{made['id']}")
    assert a.get("/v1/products", headers=auth).status_code == 401, "ended for every process"
