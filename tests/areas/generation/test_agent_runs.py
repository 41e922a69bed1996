"""Agent runs: each step checked and priced as its own operation, capped before anything runs."""

from __future__ import annotations

import pytest

from tests.support.generation import CATALOGUE_181, PROJECT, ledger, refused, usage

URL_A = "https://cdn.example.net/a.mp4?duration=30"
URL_B = "https://cdn.example.net/b.mp4?duration=90"
REMIX_TWO_URLS = {
    "operation": "remixVideo",
    "arguments": {"sources": [{"url": URL_A}, {"url": URL_B}]},
}
OUTLINE = {
    "operation": "createFilmOutline",
    "arguments": {"title": "Run", "logline": "An agent plans a film.", "genre": "comedy"},
}
RENDER = {"operation": "renderVideo", "arguments": {"story": "A short story."}}


def run(api, steps, **extra):
    body = {"projectId": PROJECT, "goal": "make a teaser", "steps": steps, **extra}
    return api.post("/v1/agent/runs", json=body)


def test_a_step_above_max_credits_answers_409_before_anything_runs(api):
    before = ledger(api)
    response = run(api, [OUTLINE, REMIX_TWO_URLS, RENDER], maxCredits=299)
    details = refused(response, 409, "conflict")
    assert details["reason"] == "step_price_above_max_credits"
    assert (details["step"], details["price"], details["maxCredits"]) == (1, 300, 299)
    assert ledger(api) == before


def test_max_credits_is_per_step_and_the_run_is_charged_the_sum(api):
    response = run(api, [OUTLINE, REMIX_TWO_URLS, RENDER, RENDER], maxCredits=400)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["job"]["kind"] == "agent-run"
    assert body["job"]["projectId"] == PROJECT
    lines = {line["capability"]: line["quantity"] for line in body["cost"]["lines"]}
    assert lines == {"film-outline": 1, "video-analysis": 2, "video-render": 2}
    assert body["cost"]["credits"] == 20 + 300 + 800 == body["job"]["cost"]
    assert sum(e["credits"] for e in usage(api)) == 1120


def test_a_step_is_priced_exactly_as_its_own_operation(api):
    direct = api.post(
        "/v1/video/remix", json={"projectId": PROJECT, **REMIX_TWO_URLS["arguments"]}
    ).json()["cost"]["credits"]
    as_step = run(api, [REMIX_TWO_URLS]).json()["cost"]["credits"]
    assert direct == as_step == 300


def test_a_footage_step_keeps_its_own_max_credits(api):
    step = {"operation": "createFootage",
            "arguments": {"prompt": "rain", "durationSeconds": 10, "maxCredits": 100}}  # fmt: skip
    before = ledger(api)
    details = refused(run(api, [step]), 409, "conflict")
    assert details["reason"] == "price_above_max_credits"
    assert details["field"] == "steps/0/arguments/maxCredits"
    assert ledger(api) == before


@pytest.mark.parametrize(
    ("step", "path"),
    [
        ({"operation": "createFilmOutline", "arguments": {"title": "x"}},
         "/steps/1/arguments/logline"),
        ({"operation": "renderVideo", "arguments": {"story": "s", "colour": "red"}},
         "/steps/1/arguments/colour"),
        ({"operation": "createFootage", "arguments": {"prompt": "p", "durationSeconds": 0}},
         "/steps/1/arguments/durationSeconds"),
    ],
)  # fmt: skip
def test_step_arguments_are_validated_as_their_operations_body(api, step, path):
    before = ledger(api)
    details = refused(run(api, [RENDER, step]), 400, "invalid_request")
    assert path in [error["path"] for error in details["errors"]]
    assert details["step"] == 1
    assert ledger(api) == before


@pytest.mark.parametrize("name", ["projectId", "callbackUrl"])
def test_a_step_may_not_name_its_own_project_or_callback(api, name):
    step = {"operation": "renderVideo", "arguments": {"story": "s", name: "https://a.example/x"}}
    details = refused(run(api, [step]), 400, "invalid_request")
    assert details["field"] == f"steps/0/arguments/{name}"


def test_a_step_breaking_its_operations_rules_is_refused_before_any_charge(api):
    before = ledger(api)
    long_video = {"operation": "remixVideo", "arguments": {"sources": [{"url": CATALOGUE_181}]}}
    details = refused(run(api, [RENDER, long_video]), 400, "invalid_request")
    assert details["reason"] == "video_too_long"
    assert details["field"] == "steps/1/arguments/sources/0/url"
    genre = {**OUTLINE, "arguments": {**OUTLINE["arguments"], "genre": "opera"}}
    assert refused(run(api, [genre]), 400, "invalid_request")["field"] == "steps/0/arguments/genre"
    assert ledger(api) == before


def test_an_unavailable_step_capability_answers_503_and_nothing_runs(api, control):
    control.capability("film-outline", available=False)
    before = ledger(api)
    refused(run(api, [RENDER, OUTLINE]), 503, "capability_unavailable")
    assert ledger(api) == before
