"""``--store postgresql://...``: the database server restarted in the middle of a load.

A real ``mockserver`` process on a PostgreSQL cluster of this test's own (never the shared
server CI starts: this one is stopped and started again with ``pg_ctl``). While the server is
down, requests answer ``503 upstream_unavailable`` with ``Retry-After``; once it is back the
mock serves again with no restart of its own; every write acknowledged with a 2xx is kept, a
charge retried with its Idempotency-Key is made once, and a delivery that was due is made
after the recovery with its ``eventId`` unchanged.
"""

from __future__ import annotations

import json
import os
import threading
import time

import httpx
import pytest

from tests.store.process import running
from tests.store.test_durable import SECRET, clients
from tests.support.postgres import own_cluster

FOOTAGE = ["https://videos.example.com/cooking/perfect-rice"]
AUTH = {"Authorization": "Bearer sk_test_acme_owner"}
Refused = tuple[str, str, dict, int, str]  # path, Idempotency-Key, body, status, text


def load(base_url: str, stop: threading.Event, acked: list, refused: list[Refused]) -> None:
    """Write until stopped: products, and paid renders, each with an Idempotency-Key. A 2xx
    is noted in ``acked`` with what it made; any other answer in ``refused``."""
    n = 0
    with httpx.Client(base_url=base_url, timeout=30) as http:
        while not stop.is_set():
            n += 1
            key = f"load-{threading.get_ident()}-{n}"
            if n % 2:
                path, body, name = "/v1/products", {"name": f"thing {key}"}, "product"
            else:
                path = "/v1/video/render"
                body, name = {"projectId": "prj_acme_01", "story": f"A walk {key}."}, "job"
            answer = http.post(path, json=body, headers={**AUTH, "Idempotency-Key": key})
            if answer.is_success:
                acked.append((key, body, answer.json()[name]["id"]))
            else:  # checked by the test: only 503 upstream_unavailable
                refused.append((path, key, body, answer.status_code, answer.text))


@pytest.fixture
def cluster():
    try:
        made = own_cluster()
    except RuntimeError as exc:
        if os.environ.get("CI"):  # CI installs PostgreSQL: a missing server is a failure there
            raise
        pytest.skip(str(exc))
    yield made
    made.remove()


def test_a_database_restart_in_a_load_answers_503_then_recovers(cluster, receiver):
    with running("--store", cluster.url, "--rate-limit", "100000") as mock:
        api, control, http = clients(mock.base_url)
        # A delivery that is due and retrying (its first attempt answered 503) when the
        # database goes away.
        receiver.script([503] * 50)
        made = api.post(
            "/v1/webhook-subscriptions",
            json={"url": f"{receiver.url}/hook", "events": ["job.progressed"], "secret": SECRET},
            headers={"Idempotency-Key": "sub"},
        )
        assert made.status_code == 200, made.text
        api.post("/v1/video/edit", json={"projectId": "prj_acme_01", "footageUrls": FOOTAGE})
        control.advance(5)
        control.call("POST", "/deliveries/flush", {"timeoutSeconds": 15})
        first = [json.loads(d.body)["eventId"] for d in receiver.deliveries]
        assert first, "the first attempt was made (and answered 503)"
        control.credits(balance=1_000_000)  # the load never runs out
        start_balance = control.credits() + api.get("/v1/usage").json()["totalCredits"]

        stop, acked, refused = threading.Event(), [], []
        threads = [
            threading.Thread(target=load, args=(mock.base_url, stop, acked, refused))
            for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while len(acked) < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        cluster.pg_ctl("stop", "-m", "fast")  # while the writers are still writing
        before_down = len(acked)

        down = api.post("/v1/products", json={"name": "while down"})
        assert down.status_code == 503, down.text
        assert down.json()["code"] == "upstream_unavailable"
        assert "unreachable" in down.json()["error"]
        assert int(down.headers["Retry-After"]) >= 1
        assert api.get("/v1/products").status_code == 503, "reads too: the truth is not there"

        cluster.pg_ctl("start")
        # The writers go on: their requests are served again, by the same mock process.
        deadline = time.monotonic() + 60
        while len(acked) < before_down + 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        assert len(acked) >= before_down + 10, "the mock served again after the restart"
        assert mock.process is not None and mock.process.poll() is None, "no restart of the mock"

        assert refused, "the load met the server down"
        # Retried with their keys, the refused requests apply once (a commit whose answer was
        # lost with the connection replays).
        odd = [(status, text) for *_, status, text in refused if status != 503]
        assert not odd, "\n".join(mock.lines[-60:])
        assert all(json.loads(text)["code"] == "upstream_unavailable" for *_, text in refused)
        for path, key, body, *_ in refused:
            again = api.post(path, json=body, headers={"Idempotency-Key": key})
            assert again.is_success, again.text
            name = "product" if "name" in body else "job"
            acked.append((key, body, again.json()[name]["id"]))

        balance = control.credits()
        products = {p["id"]: p["name"] for p in api.walk("/v1/products", "products", limit=100)}
        for _key, body, made_id in acked:
            if "name" in body:
                assert products[made_id] == body["name"], "an acknowledged write was lost"
                assert list(products.values()).count(body["name"]) == 1, "applied once"
            else:
                assert api.get(f"/v1/jobs/{made_id}").json()["job"]["id"] == made_id
        for key, body, made_id in [entry for entry in acked if "story" in entry[1]]:
            again = api.post("/v1/video/render", json=body, headers={"Idempotency-Key": key})
            assert again.headers.get("idempotent-replayed") == "true"
            assert again.json()["job"]["id"] == made_id
        assert control.credits() == balance, "a retried charge is not made twice"
        total = api.get("/v1/usage").json()["totalCredits"]
        assert balance + total == start_balance, "every charge kept is in the balance, once"

        # The delivery that was due is made after the recovery, with the same eventId.
        receiver.script([])
        control.advance(600)
        control.call("POST", "/deliveries/flush", {"timeoutSeconds": 15})
        retried = {json.loads(d.body)["eventId"] for d in receiver.deliveries}
        assert retried >= set(first)
        assert len(receiver.deliveries) > len(first), "delivered again after the recovery"
        http.close()
