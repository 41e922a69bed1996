"""Discovery over HTTP: plans and configurations, health and freshness, runs on the clock."""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

SOURCES = ["longvideo", "shortvideo", "microblog", "community", "news"]
START = "2026-11-20T09:00:00Z"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def health(api, channel_id: str, **kwargs: Any) -> dict[str, Any]:
    response = api.get(f"/v1/discovery/configs/{channel_id}/health", **kwargs)
    assert response.status_code == 200, response.text
    return response.json()["health"]


def runs(api, **params: Any) -> list[dict[str, Any]]:
    return api.walk("/v1/discovery/runs", "runs", limit=100, **params)


def set_source(control, source: str, status: str) -> None:
    control.call("PUT", f"/discovery/sources/{source}", {"status": status})


def compile_plan(api, channel_id: str, body: dict[str, Any], **kwargs: Any):
    return api.post(f"/v1/discovery/configs/{channel_id}/plan", json=body, **kwargs)


# Health ------------------------------------------------------------------------------------


def test_health_at_the_clocks_start(api):
    money = health(api, "chn_money_minute")
    assert money["overall"] == "ready" and money["checkedAt"] == START
    assert [s["source"] for s in money["sources"]] == SOURCES
    for source in money["sources"]:
        assert source["status"] == "ready" and source["stale"] is False
        assert source["lastCollectedAt"] == "2026-11-20T06:05:00Z"
        assert source["freshnessSeconds"] == 2 * 3600 + 55 * 60

    kitchen = {s["source"]: s for s in health(api, "chn_weeknight_kitchen")["sources"]}
    assert kitchen["community"]["stale"] is True  # unavailable in the last run
    assert kitchen["longvideo"]["stale"] is False
    assert health(api, "chn_weeknight_kitchen")["overall"] == "degraded"

    carry = health(api, "chn_carry_on")  # its last run failed
    assert carry["overall"] == "degraded"
    assert all(
        s["stale"] and s["lastCollectedAt"] == "2026-11-18T10:05:00Z" for s in carry["sources"]
    )


def test_a_channel_without_a_configuration_is_not_configured(api):
    answer = health(api, "chn_code_daily", key="viewer")
    assert answer["overall"] == "not_configured"
    assert answer["sources"] == [] and answer["configId"] is None


def test_health_of_unknown_and_foreign_channels_is_404(api):
    for channel_id, key in [
        ("chn_nope", "owner"),
        ("chn_globex_main", "owner"),
        ("chn_money_minute", "globex"),
    ]:
        response = api.get(f"/v1/discovery/configs/{channel_id}/health", key=key)
        assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_freshness_ages_with_the_clock_and_resets_after_a_run(api, control):
    first = health(api, "chn_money_minute")["sources"][0]["freshnessSeconds"]
    control.advance(3600)
    assert health(api, "chn_money_minute")["sources"][0]["freshnessSeconds"] == first + 3600
    control.advance(2 * 3600 + 60)  # 12:01: the 12:00 run is still collecting
    during = health(api, "chn_money_minute")
    assert during["sources"][0]["freshnessSeconds"] == first + 3 * 3600 + 60
    assert runs(api, channelId="chn_money_minute")[-1]["status"] == "running"
    control.advance(4 * 60 + 30)  # 12:05:30: the run ended at 12:05
    after = health(api, "chn_money_minute")
    assert after["overall"] == "ready"
    for source in after["sources"]:
        assert source["lastCollectedAt"] == "2026-11-20T12:05:00Z"
        assert source["freshnessSeconds"] == 30
        assert source["itemsCollected"] >= 1
    assert after["nextRunAt"] == "2026-11-20T18:00:00Z"


def test_a_stale_source_is_fresh_again_after_the_next_run(api, control):
    control.advance(2 * 3600)  # the kitchen runs at 10:30
    kitchen = health(api, "chn_weeknight_kitchen")
    assert kitchen["overall"] == "ready"
    assert all(s["lastCollectedAt"] == "2026-11-20T10:34:00Z" for s in kitchen["sources"])


def test_source_status_from_the_control_plane(api, control):
    set_source(control, "news", "degraded")
    money = health(api, "chn_money_minute")
    assert money["overall"] == "degraded"
    assert {s["source"]: s["status"] for s in money["sources"]}["news"] == "degraded"
    for source in SOURCES:
        set_source(control, source, "unavailable")
    assert health(api, "chn_money_minute")["overall"] == "unavailable"
    listed = control.call("GET", "/discovery/sources")["sources"]
    assert {s["status"] for s in listed} == {"unavailable"}
    response = control.http.put("/_mock/discovery/sources/fax", json={"status": "ready"})
    assert response.status_code == 404
    control.reset()
    assert health(api, "chn_money_minute")["overall"] == "ready"


# Runs --------------------------------------------------------------------------------------


def test_runs_happen_on_the_clock(api, control):
    before = runs(api)
    assert len(before) == 10
    assert [r["status"] for r in before].count("failed") == 1
    content_before = len(api.walk("/v1/viral-content", "content", limit=100))
    control.advance(24 * 3600)
    after = runs(api)
    new = after[len(before) :]
    assert after[: len(before)] == before
    by_channel: dict[str, list[str]] = {}
    for run in new:
        by_channel.setdefault(run["channelId"], []).append(run["startedAt"])
    assert by_channel == {
        "chn_carry_on": ["2026-11-20T10:00:00Z"],
        "chn_weeknight_kitchen": ["2026-11-20T10:30:00Z", "2026-11-20T22:30:00Z"],
        "chn_money_minute": [
            "2026-11-20T12:00:00Z",
            "2026-11-20T18:00:00Z",
            "2026-11-21T00:00:00Z",
            "2026-11-21T06:00:00Z",
        ],
        "chn_home_strength": ["2026-11-20T14:00:00Z"],
    }
    assert [r["startedAt"] for r in new] == sorted(r["startedAt"] for r in new)
    for run in new:
        assert run["status"] == "succeeded" and run["error"] is None
        took = at(run["finishedAt"]) - at(run["startedAt"])
        assert took == timedelta(seconds=60 * len(run["sources"]))
        assert run["itemsFound"] == sum(s["itemsFound"] for s in run["sources"]) > 0
    content_after = api.walk("/v1/viral-content", "content", limit=100)
    assert len(content_after) == content_before + sum(r["itemsFound"] for r in new)


def test_runs_filtered_by_channel_and_the_cursor_bound_to_it(api, control):
    control.advance(24 * 3600)
    money = runs(api, channelId="chn_money_minute")
    assert len(money) == 7 and {r["channelId"] for r in money} == {"chn_money_minute"}
    assert runs(api, channelId="chn_nope") == []
    page = api.get("/v1/discovery/runs", params={"channelId": "chn_money_minute", "limit": 2})
    cursor = page.json()["nextCursor"]
    moved = api.get("/v1/discovery/runs", params={"channelId": "chn_carry_on", "cursor": cursor})
    assert moved.status_code == 400 and moved.json()["code"] == "invalid_request"


def test_a_run_fails_when_every_source_is_unavailable(api, control):
    for source in SOURCES:
        set_source(control, source, "unavailable")
    content_before = len(api.walk("/v1/viral-content", "content", limit=100))
    control.advance(3 * 3600 + 300)
    run = runs(api, channelId="chn_money_minute")[-1]
    assert run["status"] == "failed" and run["itemsFound"] == 0 and run["error"]
    assert {s["status"] for s in run["sources"]} == {"unavailable"}
    assert len(api.walk("/v1/viral-content", "content", limit=100)) == content_before
    assert (
        health(api, "chn_money_minute")["sources"][0]["lastCollectedAt"] == "2026-11-20T06:05:00Z"
    )


def test_a_degraded_source_collects_one_item_and_an_unavailable_one_none(api, control):
    set_source(control, "news", "degraded")
    set_source(control, "community", "unavailable")
    control.advance(3 * 3600 + 300)
    run = runs(api, channelId="chn_money_minute")[-1]
    outcomes = {s["source"]: s for s in run["sources"]}
    assert run["status"] == "succeeded"
    assert outcomes["news"] == {"source": "news", "status": "degraded", "itemsFound": 1}
    assert outcomes["community"] == {
        "source": "community",
        "status": "unavailable",
        "itemsFound": 0,
    }
    assert outcomes["longvideo"]["status"] == "collected"
    sources = {s["source"]: s for s in health(api, "chn_money_minute")["sources"]}
    assert sources["news"]["lastCollectedAt"] == "2026-11-20T12:05:00Z"
    assert sources["community"]["lastCollectedAt"] == "2026-11-20T06:05:00Z"


def test_an_archived_channel_does_not_run_until_enabled_again(api, control):
    assert api.patch("/v1/channels/chn_carry_on", json={"enabled": False}).status_code == 200
    control.advance(2 * 86400)
    assert [r["startedAt"] for r in runs(api, channelId="chn_carry_on")][-1] < START
    assert api.patch("/v1/channels/chn_carry_on", json={"enabled": True}).status_code == 200
    control.advance(86400)
    started = [
        r["startedAt"] for r in runs(api, channelId="chn_carry_on") if r["startedAt"] > START
    ]
    assert started == ["2026-11-22T10:00:00Z"]  # the first slot after it was enabled


def test_what_runs_collect_is_deterministic(api, control):
    control.advance(24 * 3600)
    first = api.walk("/v1/viral-content", "content", limit=100)
    control.reset()
    control.advance(24 * 3600)
    assert api.walk("/v1/viral-content", "content", limit=100) == first


def test_a_long_jump_of_the_clock_makes_up_a_bounded_number_of_runs(api, control):
    control.advance(365 * 86400)
    money = [r for r in runs(api, channelId="chn_money_minute") if r["startedAt"] > START]
    assert len(money) == 24
    gaps = {at(b["startedAt"]) - at(a["startedAt"]) for a, b in pairwise(money)}
    assert gaps == {timedelta(hours=6)}
    assert health(api, "chn_money_minute")["overall"] == "ready"


# Plans and configurations --------------------------------------------------------------------


def configs(api) -> list[dict[str, Any]]:
    return api.walk("/v1/discovery/configs", "configs", limit=100)


def test_list_configurations_oldest_first(api):
    listed = configs(api)
    assert [c["channelId"] for c in listed] == [
        "chn_money_minute",
        "chn_home_strength",
        "chn_weeknight_kitchen",
        "chn_carry_on",
    ]
    assert api.walk("/v1/discovery/configs", "configs", limit=1) == listed
    assert api.get("/v1/discovery/configs", key="viewer").json()["configs"] == listed
    assert api.get("/v1/discovery/configs", key="globex").json()["configs"] == []


def test_compiling_a_plan_replaces_the_channels_configuration(api):
    before = configs(api)
    body = {
        "niche": "frugal living",
        "keywords": ["frugal living", "meal planning", "no-spend challenge"],
        "themeIds": ["personal-finance"],
        "sources": ["shortvideo", "news"],
        "cadenceHours": 12,
    }
    response = compile_plan(api, "chn_money_minute", body)
    assert response.status_code == 200, response.text
    config = response.json()["config"]
    assert config["id"] == before[0]["id"] and config["createdAt"] == before[0]["createdAt"]
    assert config["niche"] == "frugal living" and config["cadenceHours"] == 12
    assert config["themeIds"] == ["personal-finance"]
    assert config["sources"] == ["shortvideo", "news"]
    assert [q["source"] for q in config["plan"]["queries"]] == ["shortvideo", "news"]
    assert config["plan"]["compiledAt"] == config["updatedAt"] == START
    shortvideo, news = (q["query"] for q in config["plan"]["queries"])
    assert shortvideo == "#frugalliving #mealplanning #nospendchallenge"
    assert news == '("frugal living" OR "meal planning" OR "no-spend challenge") iab:IAB13 lang:en'
    after = configs(api)  # the new plan started collecting at once
    assert [c["id"] for c in after] == [c["id"] for c in before]
    assert after[0] == {**config, "nextRunAt": "2026-11-20T21:00:00Z"}
    assert after[1:] == before[1:]


def test_a_first_plan_creates_a_configuration_that_collects_at_once(api, control):
    response = compile_plan(api, "chn_lens_notes", {})
    assert response.status_code == 200, response.text
    config = response.json()["config"]
    assert config["niche"] == "photography" and config["themeIds"] == ["photography"]
    assert config["sources"] == SOURCES and config["cadenceHours"] == 24
    assert config["keywords"][0] == "photography" and len(config["keywords"]) > 1
    assert config["nextRunAt"] == START
    assert configs(api)[-1] == {**config, "nextRunAt": "2026-11-21T09:00:00Z"}
    fresh = health(api, "chn_lens_notes")
    assert fresh["overall"] == "ready"
    assert all(s["lastCollectedAt"] is None and s["stale"] is False for s in fresh["sources"])
    assert runs(api, channelId="chn_lens_notes")[0]["status"] == "running"
    control.advance(300)
    run = runs(api, channelId="chn_lens_notes")[0]
    assert run["status"] == "succeeded" and run["finishedAt"] == "2026-11-20T09:05:00Z"
    assert all(s["freshnessSeconds"] == 0 for s in health(api, "chn_lens_notes")["sources"])
    photography = api.walk(
        "/v1/viral-content", "content", limit=100, themeId="photography", minScore=0
    )
    assert {item["runId"] for item in photography} == {run["id"]}
    assert len(photography) >= 1


def test_a_niche_that_needs_review_gets_no_theme(api):
    config = compile_plan(api, "chn_deep_work", {"niche": "zzq wibble"}).json()["config"]
    assert config["themeIds"] == [] and config["keywords"] == ["zzq wibble"]
    assert config["plan"]["queries"][0]["query"] == '"zzq wibble"'


def test_replanning_during_a_run_collects_again_when_it_ends(api, control):
    control.advance(3 * 3600 + 60)  # 12:01, the 12:00 run is collecting
    config = compile_plan(api, "chn_money_minute", {"sources": ["news"]}).json()["config"]
    assert config["nextRunAt"] == "2026-11-20T12:05:00Z"
    control.advance(300)
    latest = runs(api, channelId="chn_money_minute")[-2:]
    assert [r["startedAt"] for r in latest] == ["2026-11-20T12:00:00Z", "2026-11-20T12:05:00Z"]
    assert [s["source"] for s in latest[0]["sources"]] == SOURCES  # kept the plan it began with
    assert [s["source"] for s in latest[1]["sources"]] == ["news"]
    assert latest[1]["status"] == "succeeded"


def test_compile_refusals_change_nothing(api):
    before = configs(api)
    cases = [
        ("chn_nope", {}, "owner", 404, "not_found"),
        ("chn_globex_main", {}, "owner", 404, "not_found"),
        ("chn_retro_games", {}, "owner", 409, "conflict"),
        ("chn_lens_notes", {}, "viewer", 403, "forbidden"),
        ("chn_lens_notes", {"themeIds": ["photography", "selfies"]}, "owner", 400, None),
        ("chn_lens_notes", {"sources": ["fax"]}, "owner", 400, None),
        ("chn_lens_notes", {"cadenceHours": 0}, "owner", 400, None),
        ("chn_lens_notes", {"sources": []}, "owner", 400, None),
        ("chn_lens_notes", {"speed": "fast"}, "owner", 400, None),
    ]
    for channel_id, body, key, status, code in cases:
        response = compile_plan(api, channel_id, body, key=key)
        assert response.status_code == status, (channel_id, body, response.text)
        assert response.json()["code"] == (code or "invalid_request")
    archived = compile_plan(api, "chn_retro_games", {}).json()
    assert archived["details"]["reason"] == "channel_archived"
    unknown = compile_plan(api, "chn_lens_notes", {"themeIds": ["photography", "selfies"]}).json()
    assert unknown["details"]["reason"] == "unknown_theme"
    assert [e["path"] for e in unknown["details"]["errors"]] == ["/themeIds/1"]
    fax = compile_plan(api, "chn_lens_notes", {"sources": ["news", "fax"]}).json()
    assert [e["path"] for e in fax["details"]["errors"]] == ["/sources/1"]
    assert configs(api) == before
    assert runs(api, channelId="chn_lens_notes") == []


def test_compiling_with_an_idempotency_key_replays(api):
    headers = {"Idempotency-Key": "plan-lens-1"}
    first = compile_plan(api, "chn_lens_notes", {"niche": "street photography"}, headers=headers)
    again = compile_plan(api, "chn_lens_notes", {"niche": "street photography"}, headers=headers)
    assert again.json() == first.json()
    assert again.headers.get("Idempotent-Replayed") == "true"
    other = compile_plan(api, "chn_lens_notes", {"niche": "portraits"}, headers=headers)
    assert other.status_code == 409


THEMES = ["fitness", "nutrition", "travel", "gaming", "personal-finance", "beauty"]
words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz -", min_size=1, max_size=30).filter(
    lambda text: text.strip() != ""
)
plans = st.fixed_dictionaries(
    {},
    optional={
        "niche": words,
        "themeIds": st.lists(st.sampled_from(THEMES), max_size=4),
        "keywords": st.lists(words, max_size=6),
        "sources": st.lists(st.sampled_from(SOURCES), min_size=1, max_size=5, unique=True),
        "cadenceHours": st.integers(min_value=1, max_value=168),
    },
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=plans)
@example(body={"niche": "-"})  # no word to make a hashtag of: the shortvideo query is the niche
def test_any_valid_plan_compiles_deterministically(api, control, body):
    control.reset()
    response = compile_plan(api, "chn_balcony_garden", body)
    assert response.status_code == 200, response.text
    config = response.json()["config"]
    expected_sources = body.get("sources") or SOURCES
    assert config["sources"] == expected_sources
    assert [q["source"] for q in config["plan"]["queries"]] == expected_sources
    assert all(q["query"].strip() for q in config["plan"]["queries"])
    assert config["cadenceHours"] == body.get("cadenceHours", 24)
    if "themeIds" in body:
        assert config["themeIds"] == list(dict.fromkeys(body["themeIds"]))
    if "niche" in body:
        assert config["niche"] == body["niche"].strip()
    assert config["keywords"]
    control.reset()
    assert compile_plan(api, "chn_balcony_garden", body).json()["config"] == config
