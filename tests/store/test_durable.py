"""``--state PATH``: a SIGKILL in the middle of a burst of writes loses no write that was
acknowledged with a 2xx, and everything else the state holds comes back after a restart.

A real ``mockserver`` process, a real SIGKILL, a real restart on the same file.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx

from conformance.signatures import verify
from tests.store.process import running
from tests.support.client import ApiClient, ControlClient

SECRET = "durable-secret-" + "q" * 24
FOOTAGE = ["https://videos.example.com/cooking/perfect-rice"]


def clients(base_url: str) -> tuple[ApiClient, ControlClient, httpx.Client]:
    http = httpx.Client(base_url=base_url, timeout=30)
    return ApiClient(http), ControlClient(http), http


def burst(base_url: str, stop: threading.Event, acked: list[tuple[str, dict, str]]) -> None:
    """Write until stopped: products, and paid renders with Idempotency-Keys. Every 2xx is
    noted with what it made (the kill stops the loop with a connection error)."""
    n = 0
    with httpx.Client(base_url=base_url, timeout=30) as http:
        auth = {"Authorization": "Bearer sk_test_acme_owner"}
        while not stop.is_set():
            n += 1
            key = f"burst-{threading.get_ident()}-{n}"
            if n % 2:
                path, body, name = "/v1/products", {"name": f"thing {key}"}, "product"
            else:
                path = "/v1/video/render"
                body, name = {"projectId": "prj_acme_01", "story": f"A walk {key}."}, "job"
            try:
                response = http.post(path, json=body, headers={**auth, "Idempotency-Key": key})
            except httpx.HTTPError:
                return
            if response.is_success:
                acked.append((key, body, response.json()[name]["id"]))


def retrying_delivery(
    api: ApiClient, control: ControlClient, receiver: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A subscription and a footage edit whose first delivery the receiver answered 503 (so
    it is retrying): the subscription and the edit's job."""
    receiver.script([503] * 50)
    made = api.post(
        "/v1/webhook-subscriptions",
        json={"url": f"{receiver.url}/hook", "events": ["job.progressed"], "secret": SECRET},
        headers={"Idempotency-Key": "sub"},
    )
    assert made.status_code == 200, made.text
    edit = api.post("/v1/video/edit", json={"projectId": "prj_acme_01", "footageUrls": FOOTAGE})
    control.advance(5)
    control.call("POST", "/deliveries/flush", {"timeoutSeconds": 15})
    assert receiver.deliveries, "the first attempt was made (and answered 503)"
    return made.json()["subscription"], edit.json()["job"]


def test_a_sigkill_in_a_burst_of_writes_loses_nothing_acknowledged(tmp_path, receiver):
    args = ("--state", str(tmp_path / "state.db"), "--clock", "manual",
            "--allow-private-callbacks")  # fmt: skip
    with running(*args) as mock:
        api, control, http = clients(mock.base_url)
        # A subscription (its secret sealed in the file), a footage edit whose first delivery
        # fails (so it is retrying when the process dies), the clock moved, a cursor issued.
        subscription, edit = retrying_delivery(api, control, receiver)
        first = [json.loads(d.body) for d in receiver.deliveries]
        retrying = control.call("GET", "/deliveries")["deliveries"]
        assert any(d["state"] == "pending" and d["attempts"] for d in retrying)
        for n in range(3):
            api.post("/v1/products", json={"name": f"before {n}"})
        start_balance = control.credits() + api.get("/v1/usage").json()["totalCredits"]
        page = api.get("/v1/products", params={"limit": 2}).json()
        cursor, clock_before = page["nextCursor"], control.now()
        job_before = api.get(f"/v1/jobs/{edit['id']}").json()["job"]

        stop, acked = threading.Event(), []
        threads = [
            threading.Thread(target=burst, args=(mock.base_url, stop, acked)) for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while len(acked) < 60 and time.monotonic() < deadline:
            time.sleep(0.01)
        mock.kill()  # while the writers are still writing
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        http.close()
    assert len(acked) >= 60, "the burst wrote"

    receiver.clear()
    with running(*args) as mock:
        api, control, http = clients(mock.base_url)
        assert control.now() == clock_before, "the manual clock's time"
        balance = control.credits()
        products = {p["id"]: p["name"] for p in api.walk("/v1/products", "products", limit=100)}
        for _key, body, made in acked:
            if "name" in body:
                assert products[made] == body["name"]
            else:
                assert api.get(f"/v1/jobs/{made}").json()["job"]["id"] == made
        # Every acknowledged charge is in the ledger, and a replay charges nothing.
        usage = api.get("/v1/usage", params={"limit": 100}).json()
        charged_jobs = {line.get("jobId") for line in usage["usage"]}
        replays = [entry for entry in acked if "story" in entry[1]][:10]
        for key, body, made in replays:
            again = api.post("/v1/video/render", json=body, headers={"Idempotency-Key": key})
            assert again.headers.get("idempotent-replayed") == "true"
            assert again.json()["job"]["id"] == made
        assert control.credits() == balance, "replays after the restart charge nothing"
        total = api.get("/v1/usage").json()["totalCredits"]
        assert balance + total == start_balance, "every charge kept is in the balance, and back"
        assert charged_jobs, "the ledger survived"
        # A cursor issued before the restart still pages.
        resumed = api.get("/v1/products", params={"limit": 2, "cursor": cursor})
        assert resumed.status_code == 200, resumed.text
        # The job and its progress on the clock; the retrying delivery resumes, signed with
        # the subscription's secret, with the same eventId.
        assert api.get(f"/v1/jobs/{edit['id']}").json()["job"] == job_before
        receiver.script([])
        control.advance(600)
        control.call("POST", "/deliveries/flush", {"timeoutSeconds": 15})
        retried = [(json.loads(d.body), d) for d in receiver.deliveries]
        assert {body["eventId"] for body, _ in retried} >= {first[0]["eventId"]}
        for _body, delivery in retried:
            headers = delivery.headers
            assert headers["x-service-subscription-id"] == subscription["id"]
            assert verify(
                SECRET, headers["x-service-timestamp"], delivery.body,
                headers["x-service-signature"],
            )  # fmt: skip
        http.close()


def test_the_state_file_holds_no_secret_in_clear(tmp_path):
    state = tmp_path / "state.db"
    with running("--state", str(state), "--clock", "manual", "--allow-private-callbacks") as mock:
        api, _control, http = clients(mock.base_url)
        made = api.post(
            "/v1/webhook-subscriptions",
            json={"url": "http://127.0.0.1:9/x", "events": ["job.progressed"],
                  "secret": SECRET},
            headers={"Idempotency-Key": "sub"},
        )  # fmt: skip
        assert made.status_code == 200, made.text
        http.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("state"))
    assert SECRET.encode() not in stored
    assert b"sk_test_acme_owner" not in stored, "API keys are kept hashed"
