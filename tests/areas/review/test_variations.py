"""Variation batches: cursor paging, the deprecated after/nextAfter, and the cursor winning."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BATCH = "/v1/projects/prj_acme_01/variations/vb_acme_01"  # fixture: 36 variants
IDS = [f"vb_acme_01_v{n:02d}" for n in range(1, 37)]


def page(api, path: str = BATCH, **params) -> dict:
    response = api.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_batch_pages_by_cursor(api):
    body = page(api, limit=10)
    assert body["batch"] == {
        "id": "vb_acme_01",
        "projectId": "prj_acme_01",
        "variantCount": 36,
        "createdAt": "2026-11-12T10:00:00Z",
    }
    assert [v["id"] for v in body["variants"]] == IDS[:10]
    assert body["hasMore"] is True and body["nextAfter"] == 10
    seen = api.walk(BATCH, "variants", limit=10)
    assert [v["id"] for v in seen] == IDS


def test_the_deprecated_after_pages_too(api):
    seen, after = [], 0
    while after is not None:
        body = page(api, limit=8, after=after)
        seen.extend(v["id"] for v in body["variants"])
        assert (body["nextAfter"] is None) == (body["nextCursor"] is None)
        after = body["nextAfter"]
    assert seen == IDS
    assert page(api, after=36)["variants"] == [] and page(api, after=36)["nextAfter"] is None
    assert page(api, after=500)["variants"] == []
    assert page(api, limit=5, after=33)["nextAfter"] is None


def test_a_cursor_wins_over_after(api):
    first = page(api, limit=10)
    both = page(api, limit=10, cursor=first["nextCursor"], after=30)
    assert [v["id"] for v in both["variants"]] == IDS[10:20]
    assert both["nextAfter"] == 20
    from_after = page(api, limit=10, after=5)
    with_after_again = page(api, limit=10, after=5, cursor=from_after["nextCursor"])
    assert [v["id"] for v in with_after_again["variants"]] == IDS[15:25]


def test_a_negative_after_is_refused(api):
    assert api.get(BATCH, params={"after": -1}).status_code == 400


def test_unknown_batches_and_batches_of_other_projects_answer_404(api):
    assert api.get("/v1/projects/prj_acme_01/variations/vb_nope").status_code == 404
    assert api.get("/v1/projects/prj_acme_05/variations/vb_acme_01").status_code == 404
    assert api.get("/v1/projects/prj_acme_05/variations/vb_acme_03").status_code == 200
    assert api.get(BATCH, key="globex").status_code == 404
    assert api.get(BATCH, key="viewer").status_code == 200


def test_a_cursor_of_another_batch_is_refused(api):
    cursor = page(api, limit=5)["nextCursor"]
    other = api.get(
        "/v1/projects/prj_acme_01/variations/vb_acme_02", params={"limit": 5, "cursor": cursor}
    )
    assert other.status_code == 400


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(limit=st.integers(1, 100), after=st.integers(0, 50))
def test_after_and_cursor_agree(api, control, limit, after):
    control.reset()
    body = page(api, "/v1/projects/prj_acme_05/variations/vb_acme_03", limit=limit, after=after)
    ids = [f"vb_acme_03_v{n:02d}" for n in range(1, 46)]
    assert [v["id"] for v in body["variants"]] == ids[after : after + limit]
    expected_next = after + limit if after + limit < 45 else None
    assert body["nextAfter"] == expected_next
    assert (body["nextCursor"] is None) == (expected_next is None)
    if body["nextCursor"]:
        by_cursor = page(
            api, "/v1/projects/prj_acme_05/variations/vb_acme_03", limit=limit,
            cursor=body["nextCursor"],
        )  # fmt: skip
        by_after = page(
            api, "/v1/projects/prj_acme_05/variations/vb_acme_03", limit=limit,
            after=expected_next,
        )  # fmt: skip
        assert by_cursor["variants"] == by_after["variants"]
        assert by_cursor["nextAfter"] == by_after["nextAfter"]


def test_unreadable_cursors_answer_400_on_every_list_of_the_area(api):
    for path, name in [
        (BATCH, "cursor"),
        ("/v1/assets", "cursor"),
        ("/v1/projects/prj_acme_01/comments", "cursor"),
        ("/v1/projects/prj_acme_01/transcript", "wordCursor"),
    ]:
        for token in ("c1.x.\u00e9", "w1.e30.c1..\u0080", "\u00e9"):
            response = api.get(path, params={name: token})
            assert response.status_code == 400, (path, token, response.text)
