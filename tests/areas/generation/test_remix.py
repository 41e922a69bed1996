"""Remix: priced by work exactly as stated, and url sources limited to 180 seconds."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.generation import (
    CATALOGUE_179,
    CATALOGUE_180,
    CATALOGUE_181,
    PROJECT,
    balance,
    jobs,
    ledger,
    price,
    refused,
    usage,
)

URL_A = "https://cdn.example.net/a.mp4?duration=60"
URL_B = "https://cdn.example.net/b.mp4?duration=120"
URL_C = "https://cdn.example.net/c.mp4#duration=179"
TRANSCRIPT = {"transcript": "We open on a kitchen at dawn."}


def remix(api, sources, **extra):
    return api.post("/v1/video/remix", json={"projectId": PROJECT, "sources": sources, **extra})


@pytest.mark.parametrize(
    ("sources", "extra", "expected"),
    [
        ([{"url": URL_A}], {}, [("video-analysis", 1)]),
        ([{"url": URL_A}, {"url": URL_B}, {"url": URL_C}], {}, [("video-analysis", 3)]),
        ([{"url": URL_A}, TRANSCRIPT, TRANSCRIPT], {}, [("video-analysis", 1)]),
        ([{"url": URL_A}, TRANSCRIPT], {"outputFormat": "scenes"}, [("video-analysis", 1)]),
        ([TRANSCRIPT], {}, [("script", 1)]),
        ([TRANSCRIPT, TRANSCRIPT], {"outputFormat": "script"}, [("script", 1)]),
        ([TRANSCRIPT, TRANSCRIPT], {"outputFormat": "scenes"}, [("scene-plan", 1)]),
    ],
)
def test_the_pricing_table(api, sources, extra, expected):
    unit = {name: price(api, name) for name in ("video-analysis", "script", "scene-plan")}
    assert unit == {"video-analysis": 150, "script": 100, "scene-plan": 50}  # stated prices
    before = balance(api)
    response = remix(api, sources, **extra)
    assert response.status_code == 200, response.text
    body = response.json()
    total = sum(unit[name] * quantity for name, quantity in expected)
    assert [(line["capability"], line["quantity"]) for line in body["cost"]["lines"]] == expected
    assert body["cost"]["credits"] == total == body["job"]["cost"]
    assert body["cost"]["balance"] == before - total == balance(api)
    charges = [(e["capability"], e["quantity"], e["credits"]) for e in usage(api)]
    assert charges == [(name, quantity, unit[name] * quantity) for name, quantity in expected]
    assert all(e["resourceId"] == body["job"]["id"] for e in usage(api))


@pytest.mark.parametrize(
    "url", [CATALOGUE_179, CATALOGUE_180, URL_C, "https://x.example/v?duration=180"]
)
def test_url_sources_up_to_180_seconds_are_accepted(api, url):
    assert remix(api, [{"url": url}]).status_code == 200


@pytest.mark.parametrize(
    ("url", "seconds"),
    [(CATALOGUE_181, 181), ("https://x.example/v?duration=181", 181),
     ("https://x.example/v#duration=3600", 3600)],
)  # fmt: skip
def test_a_url_source_longer_than_180_seconds_is_refused_before_any_charge(api, url, seconds):
    before = ledger(api)
    response = remix(api, [TRANSCRIPT, {"url": URL_A}, {"url": url}])
    details = refused(response, 400, "invalid_request")
    assert details["reason"] == "video_too_long"
    assert details["sourceIndex"] == 2
    assert details["field"] == "sources/2/url"
    assert details["durationSeconds"] == seconds
    assert details["maxSeconds"] == 180
    assert ledger(api) == before


def test_a_url_source_the_service_would_not_fetch_is_refused_before_any_charge(api):
    before = ledger(api)
    details = refused(
        remix(api, [{"url": "ftp://videos.example.com/a.mp4"}]), 400, "invalid_request"
    )
    assert details["reason"] == "url_not_allowed"
    assert details["field"] == "sources/0/url"
    assert ledger(api) == before


def documented_length(url: str) -> int:
    """The documented rule for a url neither in the catalogue nor naming its length."""
    return 10 + int(hashlib.sha256(url.encode()).hexdigest()[:8], 16) % 291


def test_other_urls_have_the_documented_deterministic_length(api, control):
    urls = [f"https://cdn.example.net/clip-{n}.mp4" for n in range(12)]
    lengths = [documented_length(url) for url in urls]
    assert any(s > 180 for s in lengths) and any(s <= 180 for s in lengths)
    for url, seconds in zip(urls, lengths, strict=True):
        response = remix(api, [{"url": url}])
        if seconds > 180:
            assert refused(response, 400, "invalid_request")["durationSeconds"] == seconds
        else:
            assert response.status_code == 200, response.text


def test_a_short_remix_is_refused_when_video_analysis_is_unavailable(api, control):
    control.capability("video-analysis", available=False)
    before = ledger(api)
    refused(remix(api, [{"url": URL_A}]), 503, "capability_unavailable")
    assert ledger(api) == before
    assert remix(api, [TRANSCRIPT]).status_code == 200  # a transcript remix needs no analysis


SOURCE = st.one_of(
    st.integers(1, 180).map(lambda s: {"url": f"https://cdn.example.net/v.mp4?duration={s}"}),
    st.sampled_from([CATALOGUE_179, CATALOGUE_180]).map(lambda url: {"url": url}),
    st.text(min_size=1, max_size=20).map(lambda text: {"transcript": text}),
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sources=st.lists(SOURCE, min_size=1, max_size=10), scenes=st.booleans())
def test_the_charge_always_follows_the_stated_rule(api, control, sources, scenes):
    control.reset()
    urls = sum("url" in source for source in sources)
    expected = 150 * urls if urls else (50 if scenes else 100)
    extra = {"outputFormat": "scenes"} if scenes else {}
    response = remix(api, sources, **extra)
    assert response.status_code == 200, response.text
    assert response.json()["cost"]["credits"] == expected
    assert balance(api) == 10_000 - expected
    assert sum(e["credits"] for e in usage(api)) == expected
    assert len(jobs(api)) == 1
