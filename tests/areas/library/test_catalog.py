"""The video catalogue over HTTP: cursor paging, the deprecated offset, and cursor-wins."""

from __future__ import annotations

import pytest


def page(api, domain: str = "cooking", **params):
    response = api.get(f"/v1/video/catalog/{domain}", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_cursor_walk_of_a_domain(api):
    videos = api.walk("/v1/video/catalog/cooking", "videos", limit=6)
    assert [v["id"] for v in videos] == [f"vid_cooking_{n:02d}" for n in range(1, 21)]
    assert {v["domain"] for v in videos} == {"cooking"}
    assert videos[0] == {
        "id": "vid_cooking_01",
        "domain": "cooking",
        "title": "One-pan pasta",
        "url": "https://videos.example.com/cooking/one-pan-pasta",
        "durationSeconds": 150,
        "themeId": "food-cooking",
    }
    assert api.walk("/v1/video/catalog/cooking", "videos", limit=100) == videos
    first = page(api, limit=20)
    assert first["nextCursor"] is None and first["hasMore"] is False


def test_the_deprecated_offset_still_works(api):
    everything = page(api, "fitness", limit=100)["videos"]
    skipped = page(api, "fitness", offset=5, limit=4)
    assert skipped["videos"] == everything[5:9]
    assert skipped["hasMore"] is True
    rest = page(api, "fitness", cursor=skipped["nextCursor"], limit=100)["videos"]
    assert rest == everything[9:]
    assert page(api, "fitness", offset=20)["videos"] == []
    assert page(api, "fitness", offset=19)["nextCursor"] is None


def test_the_cursor_wins_when_both_are_sent(api):
    first = page(api, "travel", limit=5)
    second = page(api, "travel", limit=5, cursor=first["nextCursor"])
    for offset in (0, 3, 17, 100):
        both = page(api, "travel", limit=5, cursor=first["nextCursor"], offset=offset)
        assert both == second, offset
    assert second["videos"][0]["id"] == "vid_travel_06"


def test_a_cursor_belongs_to_its_domain(api):
    cursor = page(api, "travel", limit=5)["nextCursor"]
    response = api.get("/v1/video/catalog/gaming", params={"cursor": cursor})
    assert response.status_code == 400
    assert response.json()["details"]["reason"] == "cursor_query_mismatch"
    themes_cursor = api.get("/v1/themes", params={"limit": 2}).json()["nextCursor"]
    refused = api.get("/v1/video/catalog/travel", params={"cursor": themes_cursor})
    assert refused.status_code == 400


@pytest.mark.parametrize("domain", ["knitting", "nope-nope"])
def test_an_unknown_domain_is_404(api, domain):
    response = api.get(f"/v1/video/catalog/{domain}", key="viewer")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_a_malformed_domain_or_offset_is_400(api):
    assert api.get("/v1/video/catalog/Not_A_Domain").status_code == 400
    assert api.get("/v1/video/catalog/cooking", params={"offset": -1}).status_code == 400
