"""Sandboxes: isolated worlds in one mock, each with its own keys, clock, money and events."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mockserver.app import create_app
from mockserver.settings import Settings
from tests.support.client import ApiClient, ControlClient
from tests.support.inproc import InProcessClient

DEFAULT_OWNER = "sk_test_acme_owner"
FILM = {"title": "T", "logline": "L", "genre": "drama", "projectId": "prj_acme_01"}


class Sandboxes:
    """A test's view of the control plane's sandboxes."""

    def __init__(self, control: ControlClient) -> None:
        self.control = control

    def create(self, **spec: Any) -> dict[str, Any]:
        return self.control.call("POST", "/sandboxes", spec or None)["sandbox"]

    def call(self, sandbox: dict[str, Any], method: str, path: str, body: Any = None) -> Any:
        joiner = "&" if "?" in path else "?"
        return self.control.call(method, f"{path}{joiner}sandbox={sandbox['id']}", body)


def owner(sandbox: dict[str, Any], workspace: str = "acme") -> str:
    return next(
        k["key"] for k in sandbox["keys"] if k["role"] == "owner" and k["workspace"] == workspace
    )


@pytest.fixture
def sandboxes(control: ControlClient) -> Iterator[Sandboxes]:
    made = Sandboxes(control)
    yield made
    for sandbox in control.call("GET", "/sandboxes")["sandboxes"]:
        control.call("DELETE", f"/sandboxes/{sandbox['id']}")


def count(api: ApiClient, key: str, path: str, items: str) -> int:
    return len(api.walk(path, items)) if key is None else len(_walk(api, key, path, items))


def _walk(api: ApiClient, key: str, path: str, items: str) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {"limit": 100, **({"cursor": cursor} if cursor else {})}
        body = api.get(path, key=key, params=params).json()
        seen += body[items]
        cursor = body["nextCursor"]
        if cursor is None:
            return seen


def test_a_sandbox_answers_its_keys_with_their_roles(api, sandboxes):
    sandbox = sandboxes.create()
    roles = {(k["workspace"], k["member"], k["role"]) for k in sandbox["keys"]}
    assert ("acme", "victor", "viewer") in roles and ("globex", "gina", "owner") in roles
    assert all(k["key"].startswith("sk_sbx_") for k in sandbox["keys"])
    assert sandbox["clock"] == {"now": "2026-11-20T09:00:00Z", "mode": "manual"}
    viewer = next(k["key"] for k in sandbox["keys"] if k["role"] == "viewer")
    refused = api.post("/v1/products", key=viewer, json={"name": "no"})
    assert refused.status_code == 403


def test_records_and_money_of_a_sandbox_stay_in_it(api, control, sandboxes):
    first, second = sandboxes.create(), sandboxes.create()
    before = count(api, DEFAULT_OWNER, "/v1/products", "products")
    made = api.post("/v1/products", key=owner(first), json={"name": "Only here"})
    assert made.status_code == 200
    assert count(api, owner(first), "/v1/products", "products") == before + 1
    assert count(api, owner(second), "/v1/products", "products") == before
    assert count(api, DEFAULT_OWNER, "/v1/products", "products") == before
    product = made.json()["product"]["id"]
    assert api.patch(
        "/v1/channels/chn_money_minute", key=owner(second), json={"products": [product]}
    ).status_code in (400, 404)

    balance = control.credits()
    charged = api.post("/v1/text/film", key=owner(first), json=FILM).json()["cost"]["credits"]
    assert sandboxes.call(first, "GET", "/workspaces/acme/credits")["balance"] == balance - charged
    assert sandboxes.call(second, "GET", "/workspaces/acme/credits")["balance"] == balance
    assert control.credits() == balance
    sandboxes.call(second, "PUT", "/workspaces/acme/credits", {"balance": 0})
    poor = api.post("/v1/text/film", key=owner(second), json=FILM)
    assert poor.status_code == 402 and poor.json()["code"] == "insufficient_credits"
    assert api.post("/v1/text/film", json=FILM).status_code == 200  # the default world pays


def test_each_sandbox_has_its_own_clock_and_jobs(api, control, sandboxes):
    # Same seed, same ids: the second sandbox has its own seed, so its own jobs differ in id.
    first = sandboxes.create()
    second = sandboxes.create(start="2030-01-01T00:00:00Z", seed=99)
    assert second["clock"]["now"] == "2030-01-01T00:00:00Z"
    job = api.post(
        "/v1/video/render", key=owner(first), json={"projectId": "prj_acme_01", "story": "A walk."}
    ).json()["job"]
    sandboxes.call(first, "POST", "/clock/advance", {"seconds": 7200})
    assert sandboxes.call(first, "GET", "/clock")["now"] == "2026-11-20T11:00:00Z"
    assert sandboxes.call(second, "GET", "/clock")["now"] == "2030-01-01T00:00:00Z"
    assert control.now() == "2026-11-20T09:00:00Z"
    read = api.get(f"/v1/jobs/{job['id']}", key=owner(first)).json()["job"]
    assert read["status"] in ("done", "failed", "qa_failed", "cancelled")
    assert api.get(f"/v1/jobs/{job['id']}", key=owner(second)).status_code == 404
    assert api.get(f"/v1/jobs/{job['id']}").status_code == 404


def test_idempotency_cursors_faults_and_rate_limits_are_per_sandbox(api, control, sandboxes):
    first, second = sandboxes.create(), sandboxes.create()
    headers = {"Idempotency-Key": "same-key"}
    a = api.post("/v1/projects", key=owner(first), json={"title": "A"}, headers=headers)
    b = api.post("/v1/projects", key=owner(second), json={"title": "B"}, headers=headers)
    assert a.status_code == b.status_code == 200
    assert "Idempotent-Replayed" not in b.headers and b.json()["project"]["title"] == "B"

    page = api.get("/v1/campaigns", key=owner(first), params={"limit": 2}).json()
    cursor = {"limit": 2, "cursor": page["nextCursor"]}
    assert api.get("/v1/campaigns", key=owner(second), params=cursor).status_code == 400
    assert api.get("/v1/campaigns", params=cursor).status_code == 400
    assert api.get("/v1/campaigns", key=owner(first), params=cursor).status_code == 200

    fault = {
        "match": {"operationId": "listProducts"},
        "status": 503,
        "code": "upstream_unavailable",
    }
    sandboxes.call(first, "POST", "/faults", fault)
    assert api.get("/v1/products", key=owner(first)).status_code == 503
    assert api.get("/v1/products", key=owner(second)).status_code == 200
    assert api.get("/v1/products").status_code == 200
    assert control.call("GET", "/faults")["faults"] == []

    limit = int(api.get("/v1/products", key=owner(second)).headers["x-ratelimit-limit"])
    for _ in range(limit):
        last = api.get("/v1/capabilities", key=owner(second))
    assert last.status_code == 429
    assert api.get("/v1/capabilities", key=owner(first)).status_code == 200
    assert api.get("/v1/capabilities").status_code == 200


def test_the_journal_and_deliveries_are_per_sandbox(api, control, sandboxes, receiver):
    sandbox = sandboxes.create()
    control.call("DELETE", "/faults")
    api.get("/v1/products", key=owner(sandbox))
    journal = sandboxes.call(sandbox, "GET", "/requests?limit=10")["requests"]
    assert [entry["operationId"] for entry in journal] == ["listProducts"]
    secret = "s" * 40
    api.post(
        "/v1/video/render",
        key=owner(sandbox),
        json={
            "projectId": "prj_acme_01",
            "story": "A walk.",
            "callbackUrl": receiver.url + "/cb",
            "callbackSecret": secret,
        },
    )
    sandboxes.call(sandbox, "POST", "/clock/advance", {"seconds": 7200})
    sandboxes.call(sandbox, "POST", "/deliveries/flush", {})
    delivered = sandboxes.call(sandbox, "GET", "/deliveries")["deliveries"]
    assert [d["state"] for d in delivered] == ["delivered"]
    assert control.call("GET", "/deliveries")["deliveries"] == []


def test_a_sandbox_of_one_workspace_holds_only_that_workspace(api, sandboxes):
    sandbox = sandboxes.create(workspace="globex")
    assert {k["workspace"] for k in sandbox["keys"]} == {"globex"}
    assert api.get("/v1/products", key=owner(sandbox, "globex")).status_code == 200
    missing = sandboxes.control.http.post("/_mock/sandboxes", json={"workspace": "nope"})
    assert missing.status_code == 404


def test_an_ended_sandbox_refuses_its_keys(api, sandboxes):
    sandbox = sandboxes.create()
    key = owner(sandbox)
    assert api.get("/v1/products", key=key).status_code == 200
    sandboxes.control.call("DELETE", f"/sandboxes/{sandbox['id']}")
    assert api.get("/v1/products", key=key).status_code == 401
    gone = sandboxes.control.http.get(f"/_mock/clock?sandbox={sandbox['id']}")
    assert gone.status_code == 404 and gone.json()["code"] == "not_found"
    assert sandboxes.control.http.get(f"/_mock/sandboxes/{sandbox['id']}").status_code == 404


def test_control_operations_document_the_sandbox_parameter(asgi_http):
    document = asgi_http.get("/_mock/openapi.json").json()
    for path, method in [
        ("/_mock/clock", "get"),
        ("/_mock/clock/advance", "post"),
        ("/_mock/faults", "post"),
        ("/_mock/workspaces/{workspace}/credits", "put"),
        ("/_mock/deliveries", "get"),
        ("/_mock/reset", "post"),
    ]:
        names = [
            p.get("$ref", p.get("name")) for p in document["paths"][path][method]["parameters"]
        ]
        assert "#/components/parameters/Sandbox" in names, (path, method)
    assert document["components"]["parameters"]["Sandbox"]["in"] == "query"
    index = asgi_http.get("/_mock/").json()
    assert {"method": "POST", "path": "/_mock/sandboxes"}.items() <= next(
        op for op in index["operations"] if op["operationId"] == "createSandbox"
    ).items()


@pytest.fixture
def small_mock() -> Iterator[tuple[Any, ApiClient, ControlClient]]:
    app = create_app(Settings(clock="manual", seed=3, sandbox_ttl=600, max_sandboxes=2))
    with InProcessClient(app, base_url="http://mock.test") as http:
        yield app, ApiClient(http), ControlClient(http)


def test_idle_sandboxes_expire_and_the_number_is_bounded(small_mock):
    app, api, control = small_mock
    wall = [1000.0]
    app.sandboxes.now = lambda: wall[0]
    first = control.call("POST", "/sandboxes")["sandbox"]
    second = control.call("POST", "/sandboxes")["sandbox"]
    full = control.http.post("/_mock/sandboxes")
    assert full.status_code == 409 and full.json()["details"]["reason"] == "sandbox_limit"
    wall[0] += 400
    assert api.get("/v1/products", key=owner(first)).status_code == 200  # first is used
    wall[0] += 400  # second has now been idle 800 s
    assert api.get("/v1/products", key=owner(second)).status_code == 401
    live = [s["id"] for s in control.call("GET", "/sandboxes")["sandboxes"]]
    assert live == [first["id"]]
    assert control.call("POST", "/sandboxes")["sandbox"]["id"] not in live
