"""Rate-limit buckets shared by every process of a PostgreSQL store, seen and emptied through
the control plane of any of them (``GET /_mock/rate-limits``, ``DELETE
/_mock/rate-limits/{workspace}/{member}``), on a real PostgreSQL server
(tests/support/postgres.py; skipped without one, failed under CI)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

from mockserver.app import create_app
from tests.conftest import TEST_SETTINGS
from tests.store.test_together import store_url  # noqa: F401  (the fixture)
from tests.support.client import ApiClient
from tests.support.control_check import CheckedControl
from tests.support.inproc import InProcessClient


@contextlib.contextmanager
def two_processes(url: str) -> Iterator[tuple[list[ApiClient], list[CheckedControl]]]:
    """Two apps on one store (a limit of 3): the API and the control plane of each."""
    settings = dataclasses.replace(TEST_SETTINGS, store=url, rate_limit=3)
    apps = [create_app(settings), create_app(settings)]
    try:
        with (
            InProcessClient(apps[0], base_url="http://mock.test") as one,
            InProcessClient(apps[1], base_url="http://mock.test") as two,
        ):
            yield [ApiClient(one), ApiClient(two)], [CheckedControl(one), CheckedControl(two)]
    finally:
        for app in apps:
            app.close()


def test_two_processes_count_in_one_bucket_seen_and_emptied_from_either(store_url):  # noqa: F811
    with two_processes(store_url) as (api, control):
        statuses = [api[i % 2].get("/v1/products", key="owner").status_code for i in range(4)]
        assert statuses == [200, 200, 200, 429]
        for plane in control:
            buckets = plane.call("GET", "/rate-limits")["buckets"]
            assert [(b["workspace"], b["member"], b["used"]) for b in buckets] == [
                ("acme", "alice", 3)
            ], "refused requests are counted in the store, never shown past the limit"
        control[1].call("DELETE", "/rate-limits/acme/alice")
        assert control[0].call("GET", "/rate-limits")["buckets"] == []
        again = api[0].get("/v1/products", key="owner2")
        assert again.status_code == 200 and again.headers["x-ratelimit-remaining"] == "2"


def test_a_limit_set_through_one_process_holds_in_every_one_until_a_reset(store_url):  # noqa: F811
    with two_processes(store_url) as (api, control):
        control[0].call("PUT", "/rate-limits", {"limit": 2})
        assert control[1].call("GET", "/rate-limits")["limit"] == 2
        statuses = [api[i % 2].get("/v1/products", key="owner").status_code for i in range(3)]
        assert statuses == [200, 200, 429], "the other process counts to the new limit"
        sandbox = control[0].call("POST", "/sandboxes", {"workspace": "acme"})["sandbox"]
        key = next(k["key"] for k in sandbox["keys"] if k["member"] == "alice")
        control[1].call("PUT", "/rate-limits", {"limit": 1}, sandbox=sandbox["id"])
        assert [api[i % 2].get("/v1/products", key=key).status_code for i in range(2)] == [
            200,
            429,
        ], "a sandbox's limit holds in the process that did not set it"
        control[1].call("POST", "/reset")
        assert control[0].call("GET", "/rate-limits")["limit"] == 3
        again = api[0].get("/v1/products", key="owner")
        assert again.status_code == 200 and again.headers["x-ratelimit-limit"] == "3"
