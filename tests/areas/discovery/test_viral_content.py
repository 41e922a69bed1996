"""Viral content over HTTP: the ranked walk, its filters and cursors, one item's provenance."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FALLBACK = "needs-review"
FIXTURE_ITEMS = 40


def walk(api, **params: Any) -> list[dict[str, Any]]:
    return api.walk("/v1/viral-content", "content", **params)


def test_the_walk_is_highest_score_first_and_sees_every_item_once(api):
    items = walk(api, limit=7)
    ids = [item["id"] for item in items]
    assert len(ids) == FIXTURE_ITEMS == len(set(ids))
    scores = [item["score"] for item in items]
    assert scores == sorted(scores, reverse=True)
    assert walk(api, limit=100) == items
    assert items[0]["id"] == "vc_acme_039"  # the cat, 98.6


def test_min_score_and_theme_filters(api):
    everything = walk(api, limit=100)
    high = walk(api, limit=4, minScore=80)
    assert high == [item for item in everything if item["score"] >= 80]
    assert walk(api, limit=100, minScore=100) == []
    finance = walk(api, limit=3, themeId="personal-finance")
    assert finance and all(
        i["themeAssignments"][0]["themeId"] == "personal-finance" for i in finance
    )
    assert finance == [
        item for item in everything if item["themeAssignments"][0]["themeId"] == "personal-finance"
    ]
    both = walk(api, limit=2, themeId="personal-finance", minScore=85.2)
    assert both == [item for item in finance if item["score"] >= 85.2]
    review = walk(api, limit=100, themeId=FALLBACK)
    assert {item["id"] for item in review} == {
        "vc_acme_016",
        "vc_acme_023",
        "vc_acme_034",
        "vc_acme_040",
    }


def test_a_cursor_is_bound_to_the_filters(api):
    page = api.get("/v1/viral-content", params={"minScore": 80, "limit": 3}).json()
    cursor = page["nextCursor"]
    for changed in ({"minScore": 70}, {"minScore": 80, "themeId": "travel"}, {}):
        response = api.get("/v1/viral-content", params={**changed, "cursor": cursor})
        assert response.status_code == 400, changed
        assert response.json()["details"]["reason"] == "cursor_query_mismatch"
    same = api.get("/v1/viral-content", params={"minScore": 80, "cursor": cursor, "limit": 50})
    assert same.status_code == 200  # the limit may change between pages
    assert same.json()["content"] == walk(api, limit=100, minScore=80)[3:]


def test_a_tampered_cursor_is_refused(api):
    cursor = api.get("/v1/viral-content", params={"limit": 3}).json()["nextCursor"]
    response = api.get("/v1/viral-content", params={"cursor": cursor[:-2] + "xx"})
    assert response.status_code == 400


def test_an_unknown_theme_filter_answers_400(api):
    response = api.get("/v1/viral-content", params={"themeId": "basket-weaving"})
    assert response.status_code == 400
    body = response.json()
    assert body["details"]["reason"] == "unknown_theme"
    assert body["details"]["errors"][0]["location"] == "query"


def test_items_collected_during_a_walk_are_seen_once_at_its_end(api, control):
    first = api.get("/v1/viral-content", params={"limit": 10}).json()
    seen = list(first["content"])
    plan = api.post("/v1/discovery/configs/chn_lens_notes/plan", json={})
    assert plan.status_code == 200
    control.advance(300)  # the lens notes run collects new items (some of them score high)
    cursor = first["nextCursor"]
    while cursor:
        page = api.get("/v1/viral-content", params={"limit": 10, "cursor": cursor}).json()
        seen.extend(page["content"])
        cursor = page["nextCursor"]
    ids = [item["id"] for item in seen]
    assert len(ids) == len(set(ids))
    old, new = seen[:FIXTURE_ITEMS], seen[FIXTURE_ITEMS:]
    assert all(item["id"].startswith("vc_acme_") for item in old)
    assert [i["score"] for i in old] == sorted((i["score"] for i in old), reverse=True)
    assert new and all(item["channelId"] == "chn_lens_notes" for item in new)
    assert max(i["score"] for i in new) > min(i["score"] for i in old)  # yet they come last
    fresh = walk(api, limit=100)
    assert {i["id"] for i in fresh} == set(ids)
    assert [i["score"] for i in fresh] == sorted((i["score"] for i in fresh), reverse=True)


def test_one_item_with_theme_provenance_and_economics(api):
    item = api.get("/v1/viral-content/vc_acme_020", key="viewer").json()["content"]
    assert item["title"].startswith("Bitcoin just hit a new high")
    top = item["themeAssignments"][0]
    assert top["themeId"] == "crypto" and top["method"] == "keyword-rules"
    assert top["taxonomyVersion"] == "2026.11"
    assert "hashtag #bitcoin matches keyword 'bitcoin'" in top["provenance"]
    crypto = api.get("/v1/themes/crypto").json()["theme"]
    assert item["economics"] == crypto["economics"] and item["economicsThemeId"] == "crypto"
    assert item in walk(api, limit=100)


def test_an_item_that_needs_review_takes_the_economics_of_its_best_candidate(api):
    item = api.get("/v1/viral-content/vc_acme_023").json()["content"]
    assert item["themeAssignments"][0]["themeId"] == FALLBACK
    assert item["themeAssignments"][0]["provenance"][0].startswith("evidence is weak")
    assert item["economicsThemeId"] == item["themeAssignments"][1]["themeId"] == "food-cooking"
    nothing = api.get("/v1/viral-content/vc_acme_040").json()["content"]
    assert [a["themeId"] for a in nothing["themeAssignments"]] == [FALLBACK]
    assert nothing["economicsThemeId"] is None
    assert nothing["economics"]["competition"] in ("low", "medium", "high")


def test_unknown_and_foreign_items_are_404(api):
    assert api.get("/v1/viral-content/vc_nope").status_code == 404
    response = api.get("/v1/viral-content/vc_acme_001", key="globex")
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert api.get("/v1/viral-content", key="globex").json()["content"] == []


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    limit=st.integers(min_value=3, max_value=15),
    min_score=st.one_of(
        st.none(), st.floats(min_value=0, max_value=100).map(lambda x: round(x, 1))
    ),
    theme_id=st.one_of(
        st.none(), st.sampled_from(["personal-finance", "travel", "fitness", "crypto", FALLBACK])
    ),
)
def test_any_filtered_walk_matches_the_filtered_ranking(api, control, limit, min_score, theme_id):
    control.reset()
    everything = walk(api, limit=100)
    params: dict[str, Any] = {"limit": limit}
    if min_score is not None:
        params["minScore"] = min_score
    if theme_id is not None:
        params["themeId"] = theme_id
    expected = [
        item
        for item in everything
        if (min_score is None or item["score"] >= min_score)
        and (theme_id is None or item["themeAssignments"][0]["themeId"] == theme_id)
    ]
    assert walk(api, **params) == expected
