"""Film outlines: answered directly, deterministic, genres from the published set."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.generation import PROJECT, jobs, ledger, refused, request, usage


def outline(api, **changes):
    path, body = request("film-outline", **changes)
    return api.post(path, json=body)


def published_genres(api) -> list[str]:
    entries = api.get("/v1/capabilities").json()["capabilities"]
    return next(e for e in entries if e["name"] == "film-outline")["options"]["genres"]


def test_the_outline_is_answered_directly_in_three_acts_with_no_job(api):
    response = outline(api, themes=["grief", "the sea"], setting="a storm-bound island")
    assert response.status_code == 200, response.text
    body = response.json()["outline"]
    assert [act["act"] for act in body["acts"]] == [1, 2, 3]
    assert all(act["title"] and act["summary"] and act["beats"] for act in body["acts"])
    assert body["projectId"] == PROJECT
    assert body["format"] == "feature"  # the contract's default
    assert body["genre"] == "drama"
    assert "a storm-bound island" in body["acts"][0]["summary"]
    assert jobs(api) == []
    assert [e["capability"] for e in usage(api)] == ["film-outline"]


def test_the_same_premise_always_gives_the_same_outline(api):
    first = outline(api).json()["outline"]
    again = outline(api).json()["outline"]
    assert first == again
    other = outline(api, logline="A lighthouse keeper hears the sea singing back.").json()
    assert other["outline"] != first
    genre = outline(api, genre="horror").json()["outline"]
    assert genre["acts"] != first["acts"]
    assert len(usage(api)) == 4  # each call is charged, deterministic or not


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    title=st.text(min_size=1, max_size=40),
    logline=st.text(min_size=1, max_size=80),
    themes=st.lists(st.text(max_size=12), max_size=3),
)
def test_any_premise_gives_a_three_act_outline_deterministically(
    api, control, title, logline, themes
):
    control.reset()
    first = outline(api, title=title, logline=logline, themes=themes)
    assert first.status_code == 200, first.text
    assert len(first.json()["outline"]["acts"]) == 3
    again = outline(api, title=title, logline=logline, themes=themes)
    assert again.json()["outline"] == first.json()["outline"]


def test_every_published_genre_is_accepted(api):
    genres = published_genres(api)
    assert {"drama", "comedy", "horror", "science-fiction"} <= set(genres)
    for genre in genres:
        assert outline(api, genre=genre).status_code == 200, genre


def test_an_unknown_genre_is_refused_before_any_charge(api):
    before = ledger(api)
    details = refused(outline(api, genre="space opera"), 400, "invalid_request")
    assert details["reason"] == "unknown_genre"
    assert details["field"] == "genre"
    assert details["accepted"] == published_genres(api)
    refused(outline(api, genre="Drama"), 400, "invalid_request")  # the set is exact
    assert ledger(api) == before
