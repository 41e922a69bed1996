"""Hooks over HTTP: a bounded sample that rotates hourly, offset paging, stats per pattern."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SAMPLE_SIZE = 60


def walk(api, path: str, items: str, **params: Any) -> list[dict[str, Any]]:
    """Every item of an offset-paged list, following nextOffset until it is null."""
    seen: list[dict[str, Any]] = []
    offset = 0
    while True:
        response = api.get(path, params={**params, "offset": offset})
        assert response.status_code == 200, response.text
        body = response.json()
        seen.extend(body[items])
        if body["nextOffset"] is None:
            return seen
        assert body["nextOffset"] == offset + len(body[items])
        offset = body["nextOffset"]


def test_offset_paging_walks_the_sample_to_a_null_next_offset(api):
    first = api.get("/v1/hooks", params={"limit": 25}).json()
    assert first["nextOffset"] == 25 and len(first["hooks"]) == 25
    hooks = walk(api, "/v1/hooks", "hooks", limit=25)
    assert len(hooks) == SAMPLE_SIZE == len({h["id"] for h in hooks})
    views = [h["views"] for h in hooks]
    assert views == sorted(views, reverse=True)
    assert {h["sampledAt"] for h in hooks} == {"2026-11-20T09:00:00Z"}
    last = api.get("/v1/hooks", params={"limit": 10, "offset": 50}).json()
    assert len(last["hooks"]) == 10 and last["nextOffset"] is None
    beyond = api.get("/v1/hooks", params={"offset": 500}).json()
    assert beyond["hooks"] == [] and beyond["nextOffset"] is None


def test_the_sample_holds_within_the_hour_and_changes_after_it(api, control):
    hooks = walk(api, "/v1/hooks", "hooks", limit=50)
    control.advance(59 * 60 + 59)  # 09:59:59, still the same hour
    assert walk(api, "/v1/hooks", "hooks", limit=20) == hooks
    control.advance(1)  # 10:00:00
    later = walk(api, "/v1/hooks", "hooks", limit=50)
    assert len(later) == SAMPLE_SIZE
    assert {h["id"] for h in later} != {h["id"] for h in hooks}
    assert {h["sampledAt"] for h in later} == {"2026-11-20T10:00:00Z"}
    control.reset()
    assert walk(api, "/v1/hooks", "hooks", limit=50) == hooks  # deterministic per hour


def test_search_by_text_and_theme(api):
    sample = walk(api, "/v1/hooks", "hooks", limit=100)
    themed = walk(api, "/v1/hooks", "hooks", limit=3, themeId=sample[0]["themeId"])
    assert themed == [h for h in sample if h["themeId"] == sample[0]["themeId"]]
    found = walk(api, "/v1/hooks", "hooks", limit=5, q="YOU")
    assert found == [h for h in sample if "you" in h["text"].lower()]
    assert found and len(found) < len(sample)
    body = api.get("/v1/hooks", params={"q": "you", "limit": 1}).json()
    assert body["total"] == len(found) and body["sampleSize"] == SAMPLE_SIZE
    assert api.get("/v1/hooks", params={"q": "zzzz-nothing"}).json()["hooks"] == []


def test_an_unknown_theme_answers_400(api):
    response = api.get("/v1/hooks", params={"themeId": "needs-review"})
    assert response.status_code == 400
    assert response.json()["details"]["reason"] == "unknown_theme"
    assert api.get("/v1/hooks", params={"offset": -1}).status_code == 400


def test_stats_per_pattern_over_the_current_sample(api, control):
    stats = walk(api, "/v1/hooks/stats", "stats", limit=3)
    sample = walk(api, "/v1/hooks", "hooks", limit=100)
    assert sum(row["count"] for row in stats) == SAMPLE_SIZE
    assert abs(sum(row["share"] for row in stats) - 1) < 0.001
    counts = [row["count"] for row in stats]
    assert counts == sorted(counts, reverse=True)
    for row in stats:
        views = sorted(h["views"] for h in sample if h["pattern"] == row["pattern"])
        assert row["count"] == len(views)
        middle = len(views) // 2
        median = views[middle] if len(views) % 2 else (views[middle - 1] + views[middle]) / 2
        assert row["medianViews"] == median
    body = api.get("/v1/hooks/stats", key="viewer").json()
    assert body["sampleSize"] == SAMPLE_SIZE and body["sampledAt"] == "2026-11-20T09:00:00Z"
    control.advance(3600)
    assert walk(api, "/v1/hooks/stats", "stats", limit=100) != stats


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(limit=st.integers(min_value=4, max_value=100), hours=st.integers(min_value=0, max_value=500))
def test_any_page_size_walks_the_same_sample(api, control, limit, hours):
    control.reset()
    control.advance(hours * 3600)
    whole = api.get("/v1/hooks", params={"limit": 100}).json()
    assert whole["nextOffset"] is None
    assert walk(api, "/v1/hooks", "hooks", limit=limit) == whole["hooks"]
