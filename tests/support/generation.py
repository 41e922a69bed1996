"""Shared requests and readings for the generation and jobs tests (tests/areas/generation,
tests/areas/jobs)."""

from __future__ import annotations

import json
from typing import Any

PROJECT = "prj_acme_01"
GLOBEX_PROJECT = "prj_globex_01"
CALLBACK_URL = "https://127.0.0.1:9/callback"  # the test mock allows loopback callbacks
SECRET = "callback-secret-" + "x" * 24
FOOTAGE = ["https://cdn.example.net/beach.mp4", "https://cdn.example.net/pier.mp4?duration=40"]
CATALOGUE_179 = "https://videos.example.com/cooking/meal-prep-for-a-week"
CATALOGUE_180 = "https://videos.example.com/cooking/sheet-pan-chicken"
CATALOGUE_181 = "https://videos.example.com/cooking/breakfast-burritos"
HOUR = 3600

# A minimal valid request of each job-making generation operation, by job kind.
REQUESTS: dict[str, tuple[str, dict[str, Any]]] = {
    "render": ("/v1/video/render", {"projectId": PROJECT, "story": "A fox learns to fly."}),
    "footage-edit": ("/v1/video/edit", {"projectId": PROJECT, "footageUrls": FOOTAGE}),
    "footage": (
        "/v1/video/footage",
        {"projectId": PROJECT, "prompt": "waves at dusk", "durationSeconds": 4},
    ),
    "remix": ("/v1/video/remix", {"projectId": PROJECT, "sources": [{"url": CATALOGUE_179}]}),
    "3d-from-text": ("/v1/3d/from-text", {"projectId": PROJECT, "prompt": "a red chair"}),
    "3d-from-image": (
        "/v1/3d/from-image",
        {"projectId": PROJECT, "imageUrl": "https://images.example.com/chair.png"},
    ),
    "agent-run": (
        "/v1/agent/runs",
        {
            "projectId": PROJECT,
            "goal": "a teaser",
            "steps": [{"operation": "renderVideo", "arguments": {"story": "A teaser."}}],
        },
    ),
}
FILM = (
    "/v1/text/film",
    {"title": "Tidewater", "logline": "A lighthouse keeper hears the sea.", "genre": "drama",
     "projectId": PROJECT},
)  # fmt: skip
PAID = {**REQUESTS, "film-outline": FILM}


def request(kind: str, **changes: Any) -> tuple[str, dict[str, Any]]:
    path, body = PAID[kind]
    return path, {**json.loads(json.dumps(body)), **changes}


def start(api, kind: str, *, key: str = "owner", **changes: Any) -> dict[str, Any]:
    """Start a job of ``kind``; the response body (200 asserted)."""
    path, body = request(kind, **changes)
    response = api.post(path, json=body, key=key)
    assert response.status_code == 200, response.text
    return response.json()


def balance(api) -> int:
    return api.get("/v1/capabilities").json()["balance"]["credits"]


def price(api, capability: str) -> int:
    entries = api.get("/v1/capabilities").json()["capabilities"]
    return next(e["price"] for e in entries if e["name"] == capability)


def usage(api) -> list[dict[str, Any]]:
    return api.walk("/v1/usage", "usage", limit=100)


def jobs(api, key: str = "owner") -> list[dict[str, Any]]:
    seen, cursor = [], None
    while True:
        params = {"limit": 100, **({"cursor": cursor} if cursor else {})}
        body = api.get("/v1/jobs", params=params, key=key).json()
        seen.extend(body["jobs"])
        cursor = body["nextCursor"]
        if cursor is None:
            return seen


def ledger(api) -> tuple[int, int, int]:
    """(balance, charges recorded, jobs): equal before and after means nothing was done."""
    total = api.get("/v1/usage", params={"limit": 1}).json()["totalCredits"]
    return balance(api), total, len(jobs(api))


def job(api, job_id: str) -> dict[str, Any]:
    response = api.get(f"/v1/jobs/{job_id}")
    assert response.status_code == 200, response.text
    return response.json()["job"]


def events(api, job_id: str, limit: int = 2) -> list[dict[str, Any]]:
    """The whole stream, read ``limit`` at a time, checking the paging as it goes."""
    seen: list[dict[str, Any]] = []
    after = 0
    while True:
        response = api.get(f"/v1/jobs/{job_id}/events", params={"after": after, "limit": limit})
        assert response.status_code == 200, response.text
        page = response.json()
        assert len(page["events"]) <= limit
        assert page["nextAfter"] >= after  # never backwards
        if page["events"]:
            assert page["nextAfter"] == page["events"][-1]["sequence"]
        else:
            assert page["nextAfter"] == after
        seen.extend(page["events"])
        after = page["nextAfter"]
        if not page["hasMore"]:
            return seen


def assert_ordered(stream: list[dict[str, Any]]) -> None:
    assert [e["sequence"] for e in stream] == list(range(1, len(stream) + 1))
    moments = [e["occurredAt"] for e in stream]
    assert moments == sorted(moments)


def refused(response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code, body
    return body.get("details") or {}


def deliveries(control) -> list[dict[str, Any]]:
    """Every delivery the mock queued, with its body (from the snapshot)."""
    snapshot = control.call("GET", "/snapshot")["snapshot"]
    records = list(snapshot.get("deliveries", {}).values())
    return [{**record, "body": json.loads(record["body"])} for record in records]
