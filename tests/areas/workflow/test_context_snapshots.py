"""Workflow context snapshots: optional arrays default to empty; stored and returned."""

from __future__ import annotations

import pytest

PATH = "/v1/workflow/context-snapshots"


def test_retrieved_passages_and_exclusions_default_to_empty_arrays(api):
    response = api.post(PATH, json={})
    assert response.status_code == 200, response.text
    snapshot = response.json()["snapshot"]
    assert snapshot["retrievedPassages"] == [] and snapshot["exclusions"] == []
    assert snapshot["projectId"] is None and snapshot["query"] is None
    assert snapshot["id"] and snapshot["createdAt"] == "2026-11-20T09:00:00Z"


def test_a_full_snapshot_is_stored_and_returned(api, control):
    body = {
        "projectId": "prj_acme_05",
        "query": "how do I run requests concurrently?",
        "retrievedPassages": [
            {"sourceId": "src_acme_05_lesson", "text": "create tasks and gather", "score": 0.9},
            {"sourceId": "doc_asyncio", "text": "an event loop runs tasks"},
        ],
        "exclusions": ["doc_threads"],
    }
    snapshot = api.post(PATH, json=body).json()["snapshot"]
    assert {k: snapshot[k] for k in body} == body
    state = control.call("GET", "/snapshot")["snapshot"]
    stored = state["workspaces"]["ws_acme"]["collections"]
    assert stored["contextSnapshots"][snapshot["id"]]["exclusions"] == ["doc_threads"]


def test_one_default_does_not_depend_on_the_other(api):
    only = api.post(PATH, json={"exclusions": ["x"]}).json()["snapshot"]
    assert only["exclusions"] == ["x"] and only["retrievedPassages"] == []


def test_a_project_must_be_the_workspaces(api):
    assert api.post(PATH, json={"projectId": "prj_globex_01"}).status_code == 404
    assert api.post(PATH, json={"projectId": "prj_nope"}).status_code == 404


@pytest.mark.parametrize(
    "body",
    [
        {"retrievedPassages": [{"text": "no source"}]},
        {"retrievedPassages": [{"sourceId": "a", "text": "b", "extra": 1}]},
        {"exclusions": [""]},
        {"exclusions": "not-an-array"},
        {"unknown": True},
    ],
)
def test_bad_snapshots_are_refused(api, body):
    assert api.post(PATH, json=body).status_code == 400


def test_an_idempotent_retry_answers_the_first_snapshot(api):
    headers = {"Idempotency-Key": "ctx-1"}
    first = api.post(PATH, json={"query": "q"}, headers=headers).json()
    assert api.post(PATH, json={"query": "q"}, headers=headers).json() == first
    assert api.post(PATH, json={}, key="viewer").status_code == 403
