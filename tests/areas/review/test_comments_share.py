"""Review notes (list and add) and watch links for finished renders."""

from __future__ import annotations

import pytest

PROJECT = "prj_acme_01"  # fixture: 23 notes
COMMENTS = f"/v1/projects/{PROJECT}/comments"
SHARE = f"/v1/projects/{PROJECT}/share"


def test_notes_page_oldest_first_with_a_cursor(api):
    seen = api.walk(COMMENTS, "comments", limit=5)
    assert [c["id"] for c in seen] == [f"cmt_acme_{n:03d}" for n in range(1, 24)]
    stamps = [c["createdAt"] for c in seen]
    assert stamps == sorted(stamps)
    first = api.get(COMMENTS, params={"limit": 5}).json()
    assert len(first["comments"]) == 5 and first["hasMore"] is True


def test_a_project_without_notes_lists_none(api):
    body = api.get("/v1/projects/prj_acme_30/comments").json()
    assert body["comments"] == [] and body["nextCursor"] is None


def test_adding_a_note_records_its_author_and_lists_it_last(api, control):
    control.advance(60)
    added = api.post(COMMENTS, json={"text": "Tighten the intro.", "timecode": 3.5}, key="editor")
    assert added.status_code == 200, added.text
    note = added.json()["comment"]
    assert note["author"] == "erin" and note["timecode"] == 3.5
    assert note["text"] == "Tighten the intro." and note["createdAt"] == "2026-11-20T09:01:00Z"
    plain = api.post(COMMENTS, json={"text": "Looks good."}).json()["comment"]
    assert plain["author"] == "alice" and plain["timecode"] is None
    seen = api.walk(COMMENTS, "comments", limit=10)
    assert [c["id"] for c in seen[-2:]] == [note["id"], plain["id"]]
    transcript = api.get(f"/v1/projects/{PROJECT}/transcript", params={"wordLimit": 1}).json()
    assert transcript["transcript"]["notes"][-1]["id"] == plain["id"]


def test_a_note_added_during_a_walk_is_seen_once_at_its_end(api):
    first = api.get(COMMENTS, params={"limit": 20}).json()
    added = api.post(COMMENTS, json={"text": "Late note."}).json()["comment"]
    rest = api.get(COMMENTS, params={"limit": 20, "cursor": first["nextCursor"]}).json()
    assert [c["id"] for c in rest["comments"]][-1] == added["id"]
    assert rest["nextCursor"] is None


def test_an_idempotent_retry_adds_one_note(api):
    headers = {"Idempotency-Key": "note-1"}
    first = api.post(COMMENTS, json={"text": "Once."}, headers=headers)
    again = api.post(COMMENTS, json={"text": "Once."}, headers=headers)
    assert first.json() == again.json() and again.headers.get("Idempotent-Replayed") == "true"
    assert len(api.walk(COMMENTS, "comments", limit=100)) == 24


@pytest.mark.parametrize(
    "body", [{}, {"text": ""}, {"text": "x" * 2001}, {"text": "ok", "timecode": -1}, {"t": 1}]
)
def test_bad_notes_are_refused(api, body):
    assert api.post(COMMENTS, json=body).status_code == 400


def test_notes_of_other_workspaces_and_viewer_keys(api):
    assert api.get(COMMENTS, key="globex").status_code == 404
    assert api.post(COMMENTS, json={"text": "hi"}, key="globex").status_code == 404
    assert api.get(COMMENTS, key="viewer").status_code == 200
    assert api.post(COMMENTS, json={"text": "hi"}, key="viewer").status_code == 403
    assert api.get("/v1/projects/prj_nope/comments").status_code == 404


def test_a_comment_cursor_of_another_project_is_refused(api):
    cursor = api.get(COMMENTS, params={"limit": 2}).json()["nextCursor"]
    other = api.get("/v1/projects/prj_acme_02/comments", params={"limit": 2, "cursor": cursor})
    assert other.status_code == 400 and other.json()["code"] == "invalid_request"


# -- share ----------------------------------------------------------------------------------


def render(api, project: str = PROJECT) -> dict:
    response = api.post("/v1/video/render", json={"projectId": project, "story": "A harbour."})
    assert response.status_code == 200, response.text
    return response.json()["job"]


def refused(api, status: str | None) -> None:
    response = api.post(SHARE)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "invalid_request"
    assert body["details"]["reason"] == "render_not_ready"
    assert body["details"]["latestRenderStatus"] == status


def test_share_is_refused_without_any_render(api):
    refused(api, None)


def test_share_is_refused_while_the_render_runs(api, control):
    render(api)
    refused(api, "queued")
    control.advance(60)
    refused(api, "running")


@pytest.mark.parametrize("outcome", ["failed", "qa_failed", "cancelled"])
def test_share_is_refused_for_a_render_that_did_not_finish_well(api, control, outcome):
    job = render(api)
    control.call("POST", f"/jobs/{job['id']}/outcome", {"status": outcome})
    control.advance(3600)
    assert api.get(f"/v1/jobs/{job['id']}").json()["job"]["status"] == outcome
    refused(api, outcome)


def test_share_gives_a_watch_link_for_a_done_render(api, control):
    job = render(api)
    control.advance(3600)
    response = api.post(SHARE)
    assert response.status_code == 200, response.text
    share = response.json()["share"]
    assert share["jobId"] == job["id"] and share["url"].startswith("https://")
    assert share["createdAt"] == "2026-11-20T10:00:00Z"
    assert share["expiresAt"] == "2026-12-20T10:00:00Z"
    again = api.post(SHARE).json()["share"]
    assert again["url"] == share["url"], "the same render has the same link"
    assert api.post(SHARE, key="viewer").status_code == 403
    assert api.post(SHARE, key="globex").status_code == 404


def test_share_picks_the_latest_done_render_and_never_a_qa_failed_one(api, control):
    older = render(api)
    control.advance(3600)
    newer = render(api)
    control.call("POST", f"/jobs/{newer['id']}/outcome", {"status": "qa_failed"})
    control.advance(3600)
    assert api.post(SHARE).json()["share"]["jobId"] == older["id"]
    newest = render(api)
    control.advance(3600)
    assert api.post(SHARE).json()["share"]["jobId"] == newest["id"]


def test_a_render_of_another_project_is_not_shared(api, control):
    render(api, "prj_acme_02")
    control.advance(3600)
    refused(api, None)
    assert api.post("/v1/projects/prj_acme_02/share").status_code == 200
