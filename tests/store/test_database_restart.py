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

import pytest

from tests.store.process import running
from tests.store.test_durable import SECRET, burst, clients
from tests.support.postgres import own_cluster

FOOTAGE = ["https://videos.example.com/cooking/perfect-rice"]


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
        start_balance = control.credits() + api.get("/v1/usage").json()["totalCredits"]

        stop, acked = threading.Event(), []
        threads = [
            threading.Thread(target=burst, args=(mock.base_url, stop, acked)) for _ in range(2)
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

        balance = control.credits()
        products = {p["id"]: p["name"] for p in api.walk("/v1/products", "products", limit=100)}
        for _key, body, made_id in acked:
            if "name" in body:
                assert products[made_id] == body["name"], "an acknowledged write was lost"
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
