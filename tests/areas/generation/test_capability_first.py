"""Every paid operation checks the capabilities it needs before any lookup that could 404.

The interface document: anything ``GET /v1/capabilities`` reports unavailable answers ``503
capability_unavailable``, never ``404``. So a paid request naming a project, job or asset that
does not exist answers 503 while a capability it needs is unavailable (and charges nothing),
404 once the capability is back, and 404 while only capabilities it would not use are down.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.generation import FOOTAGE, GLOBEX_PROJECT, ledger, refused, start

UNKNOWN_PROJECT = "prj_nowhere"
URL = "https://cdn.example.net/a.mp4?duration=60"
TRANSCRIPT = {"transcript": "We open on a kitchen at dawn."}
RENDER_STEP = {"operation": "renderVideo", "arguments": {"story": "A short story."}}
OUTLINE_STEP = {
    "operation": "createFilmOutline",
    "arguments": {"title": "Run", "logline": "An agent plans a film.", "genre": "comedy"},
}
REMIX_TRANSCRIPT_STEP = {"operation": "remixVideo", "arguments": {"sources": [TRANSCRIPT]}}
_keys = itertools.count()


@dataclass(frozen=True)
class Case:
    """A paid request that names something that is not there, and the capabilities it needs."""

    path: str
    body: dict[str, Any]
    needs: tuple[str, ...]
    idempotent: bool = False  # the operation requires an Idempotency-Key
    setup: Callable[[Any], dict[str, Any]] | None = None  # returns body changes (e.g. a job id)


def _render_job(api) -> dict[str, Any]:
    """A job of the workspace that is not a footage edit (approve answers 404 for it)."""
    return {"jobId": start(api, "render")["job"]["id"]}


def _outline(project: str) -> dict[str, Any]:
    return {"title": "Tidewater", "logline": "A keeper hears the sea.", "genre": "drama",
            "projectId": project}  # fmt: skip


CASES: dict[str, Case] = {
    "film-outline": Case("/v1/text/film", _outline(UNKNOWN_PROJECT), ("film-outline",)),
    "film-outline-other-workspace": Case(
        "/v1/text/film", _outline(GLOBEX_PROJECT), ("film-outline",)
    ),
    "render": Case(
        "/v1/video/render", {"projectId": UNKNOWN_PROJECT, "story": "A fox."}, ("video-render",)
    ),
    "footage-edit": Case(
        "/v1/video/edit", {"projectId": UNKNOWN_PROJECT, "footageUrls": FOOTAGE}, ("video-edit",)
    ),
    "footage": Case(
        "/v1/video/footage",
        {"projectId": UNKNOWN_PROJECT, "prompt": "waves", "durationSeconds": 4},
        ("footage",),
    ),
    "remix-url": Case(
        "/v1/video/remix",
        {"projectId": UNKNOWN_PROJECT, "sources": [{"url": URL}, TRANSCRIPT]},
        ("video-analysis",),
    ),
    "remix-transcript-script": Case(
        "/v1/video/remix", {"projectId": UNKNOWN_PROJECT, "sources": [TRANSCRIPT]}, ("script",)
    ),
    "remix-transcript-scenes": Case(
        "/v1/video/remix",
        {"projectId": UNKNOWN_PROJECT, "sources": [TRANSCRIPT], "outputFormat": "scenes"},
        ("scene-plan",),
    ),
    "3d-from-text": Case(
        "/v1/3d/from-text", {"projectId": UNKNOWN_PROJECT, "prompt": "a chair"}, ("3d-from-text",)
    ),
    "3d-from-image": Case(
        "/v1/3d/from-image",
        {"projectId": UNKNOWN_PROJECT, "imageUrl": "https://images.example.com/chair.png"},
        ("3d-from-image",),
    ),
    "agent-run": Case(
        "/v1/agent/runs",
        {
            "projectId": UNKNOWN_PROJECT,
            "goal": "a teaser",
            "steps": [RENDER_STEP, OUTLINE_STEP, REMIX_TRANSCRIPT_STEP],
        },
        ("video-render", "film-outline", "script"),
    ),
    "approve-unknown-job": Case(
        "/v1/video/edit/approve", {"jobId": "job_nowhere"}, ("video-render",)
    ),
    "recut-unknown-job": Case(
        "/v1/video/edit/approve",
        {"jobId": "job_nowhere", "expectedGeneration": 0},
        ("video-render",),
    ),
    "approve-not-a-footage-edit": Case(
        "/v1/video/edit/approve", {}, ("video-render",), setup=_render_job
    ),
    "asset-import": Case(
        "/v1/assets/import",
        {"url": "https://cdn.example.com/raw/take.mp4", "projectId": UNKNOWN_PROJECT},
        ("media-analysis",),
        idempotent=True,
    ),
}
NEEDED = [(name, capability) for name, case in CASES.items() for capability in case.needs]


def prepare(api, name: str) -> dict[str, Any]:
    case = CASES[name]
    return {**case.body, **(case.setup(api) if case.setup else {})}


def send(api, name: str, body: dict[str, Any]):
    case = CASES[name]
    headers = {"Idempotency-Key": f"capability-first-{next(_keys)}"} if case.idempotent else None
    return api.post(case.path, json=body, headers=headers)


def capability_names(api) -> list[str]:
    return [entry["name"] for entry in api.get("/v1/capabilities").json()["capabilities"]]


@pytest.mark.parametrize(("name", "capability"), NEEDED, ids=[f"{n}-{c}" for n, c in NEEDED])
def test_an_unavailable_capability_answers_503_before_the_lookup_and_charges_nothing(
    api, control, name, capability
):
    body = prepare(api, name)
    before = ledger(api)
    control.capability(capability, available=False)
    details = refused(send(api, name, body), 503, "capability_unavailable")
    assert details["capability"] == capability
    assert ledger(api) == before
    control.capability(capability, available=True)
    refused(send(api, name, body), 404, "not_found")  # the capability check came first
    assert ledger(api) == before


@pytest.mark.parametrize("name", list(CASES))
def test_capabilities_the_request_would_not_use_do_not_refuse_it(api, control, name):
    body = prepare(api, name)
    before = ledger(api)
    others = [c for c in capability_names(api) if c not in CASES[name].needs]
    assert others
    for capability in others:
        control.capability(capability, available=False)
    refused(send(api, name, body), 404, "not_found")
    assert ledger(api) == before
