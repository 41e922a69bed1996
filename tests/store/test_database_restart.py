"""``--store postgresql://...``: the database server restarted in the middle of a load.

A real ``mockserver`` process on a real PostgreSQL server: a cluster of this test's own in the
README's test command; the very server CI started for every other test in a step of
``.ci/run``'s own, when nothing else uses it (``MOCKSERVER_TEST_PG_DIR``). Under a load of
writers, the server is stopped and started with ``pg_ctl`` (the test looks at the mock while
it is down), then restarted with ``pg_ctl restart``. While it is down, requests answer
``503 upstream_unavailable`` with ``Retry-After``; once it is back the mock serves again with
no restart of its own; every write acknowledged with a 2xx is kept, a charge retried with its
Idempotency-Key is made once, and a delivery that was due is made after the recovery with its
``eventId`` unchanged.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Callable

import httpx
import pytest

from tests.store.process import running
from tests.store.test_durable import clients, retrying_delivery
from tests.support.postgres import Cluster, restartable_server

AUTH = {"Authorization": "Bearer sk_test_acme_owner"}
Refused = tuple[str, str, dict, int, str]  # path, Idempotency-Key, body, status, text


def load(base_url: str, stop: threading.Event, acked: list, refused: list[Refused]) -> None:
    """Write until stopped: products, and paid renders, each with an Idempotency-Key. A 2xx
    is noted in ``acked`` with what it made; any other answer in ``refused``."""
    n, writer = 0, uuid.uuid4().hex[:8]
    with httpx.Client(base_url=base_url, timeout=30) as http:
        while not stop.is_set():
            n += 1
            key = f"load-{writer}-{n}"
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
        made = restartable_server()
    except RuntimeError as exc:
        if os.environ.get("CI"):  # CI installs PostgreSQL: a missing server is a failure there
            raise
        pytest.skip(str(exc))
    yield made
    made.remove()


def through(base_url: str, outage: Callable[[], None]) -> tuple[list, list[Refused]]:
    """Two writers under way, then ``outage`` (the server going away and coming back), then
    ten more writes served by the same mock: what was acknowledged, and what was refused."""
    stop, acked, refused = threading.Event(), [], []
    threads = [threading.Thread(target=load, args=(base_url, stop, acked, refused)) for _ in "ab"]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + 60
        while len(acked) < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        outage()  # while the writers are still writing
        after = len(acked)
        deadline = time.monotonic() + 60
        while len(acked) < after + 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(acked) >= after + 10, "the mock served again after the server came back"
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    return acked, refused


def retried(api, refused: list[Refused], mock) -> list:
    """Only ``503 upstream_unavailable`` was refused; each refused write, retried with its
    key, applies (once: a commit whose answer was lost with the connection replays)."""
    odd = [(status, text) for *_, status, text in refused if status != 503]
    assert not odd, "\n".join(mock.lines[-60:])
    assert all(json.loads(text)["code"] == "upstream_unavailable" for *_, text in refused)
    made = []
    for path, key, body, *_ in refused:
        again = api.post(path, json=body, headers={"Idempotency-Key": key})
        assert again.is_success, again.text
        made.append((key, body, again.json()["product" if "name" in body else "job"]["id"]))
    return made


def test_a_database_restart_in_a_load_answers_503_then_recovers(cluster: Cluster, receiver):
    with running("--store", cluster.url, "--rate-limit", "100000") as mock:
        api, control, http = clients(mock.base_url)
        # A delivery that is due and retrying (its first attempt answered 503) when the
        # database goes away.
        retrying_delivery(api, control, receiver)
        first = [json.loads(d.body)["eventId"] for d in receiver.deliveries]
        control.credits(balance=1_000_000)  # the load never runs out
        start_balance = control.credits() + api.get("/v1/usage").json()["totalCredits"]

        def stopped_then_started() -> None:
            cluster.pg_ctl("stop", "-m", "fast")
            down = api.post("/v1/products", json={"name": "while down"})
            assert down.status_code == 503, down.text
            assert down.json()["code"] == "upstream_unavailable"
            assert "unreachable" in down.json()["error"]
            assert int(down.headers["Retry-After"]) >= 1
            assert api.get("/v1/products").status_code == 503, "reads too: the truth is not there"
            cluster.pg_ctl("start")

        acked, refused = through(mock.base_url, stopped_then_started)
        assert refused, "the load met the server down"
        acked += retried(api, refused, mock)
        # pg_ctl restart, as an operator does it: the writers may or may not meet it down.
        more, refused = through(mock.base_url, lambda: cluster.pg_ctl("restart", "-m", "fast"))
        acked += more + retried(api, refused, mock)
        assert mock.process is not None and mock.process.poll() is None, "no restart of the mock"

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
        retried_ids = {json.loads(d.body)["eventId"] for d in receiver.deliveries}
        assert retried_ids >= set(first)
        assert len(receiver.deliveries) > len(first), "delivered again after the recovery"
        http.close()
