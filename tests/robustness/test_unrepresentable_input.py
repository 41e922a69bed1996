"""Input JSON allows but the mock does not represent is a clean 400, and changes nothing.

Each case here was seen answering 500 (some after writing state or spending credits) before
the request transaction and the body reader (mockserver/platform/jsonbody.py) existed.
"""

from __future__ import annotations

import json

import pytest

from mockserver.contract import default_contract
from tests.robustness.support import api_state, refused_with

LIMITS = default_contract().limits
DEPTH = int(LIMITS["maxJsonNestingDepth"])
LOW, HIGH = (int(v) for v in LIMITS["integerRange"])
JSON = {"Content-Type": "application/json"}
LONE = '"t \\ud800"'  # a JSON string holding an unpaired surrogate escape


def raw(text: str) -> dict:
    return {"content": text.encode(), "headers": JSON}


def test_a_film_outline_with_a_lone_surrogate_is_refused_and_charges_nothing(api, control):
    before = control.credits()
    body = (
        '{"title": ' + LONE + ', "logline": "A premise.", "genre": "drama", '
        '"projectId": "prj_acme_01"}'
    )
    response = api.post("/v1/text/film", **raw(body))
    refused_with(response, "lone_surrogate")
    assert response.json()["details"]["path"] == "/title"
    assert control.credits() == before


@pytest.mark.parametrize(
    ("method", "path", "body", "listing"),
    [
        ("POST", "/v1/products", '{"name": ' + LONE + "}", ("/v1/products", "products")),
        (
            "PATCH",
            "/v1/campaigns/cmp_acme_002",
            '{"description": ' + LONE + "}",
            ("/v1/campaigns", "campaigns"),
        ),
        (
            "POST",
            "/v1/projects/prj_acme_01/comments",
            '{"text": ' + LONE + "}",
            ("/v1/projects/prj_acme_01/comments", "comments"),
        ),
        (
            "POST",
            "/v1/projects",
            '{"title": "ok", "tags": {"\\udfff": 1}}',
            ("/v1/projects", "projects"),
        ),
    ],
    ids=["product", "campaign-update", "project-comment", "surrogate-in-a-key"],
)
def test_a_lone_surrogate_stores_nothing_and_reads_still_work(
    api, control, method, path, body, listing
):
    before = api_state(api, control)
    response = api.request(method, path, headers={**JSON, "Idempotency-Key": "k1"}, content=body)
    refused_with(response, "lone_surrogate")
    assert api_state(api, control) == before
    page = api.get(listing[0], params={"limit": 100})
    assert page.status_code == 200 and page.json()[listing[1]]
    assert control.call("GET", "/snapshot")["snapshot"]


def nested(levels: int, inner: str = "1") -> str:
    return "[" * levels + inner + "]" * levels


@pytest.mark.parametrize("levels", [DEPTH, 255, 1_000, 100_000])
def test_deep_nesting_is_refused_on_the_api(api, control, levels):
    before = api_state(api, control)
    body = '{"name": "deep", "extra": ' + nested(levels - 1) + "}"
    response = api.post("/v1/products", **raw(body))
    if levels <= DEPTH:  # within the limit: refused by the schema, not by the reader
        assert response.status_code == 400
        assert response.json()["details"]["reason"] == "schema"
    else:
        refused_with(response, "nesting_too_deep")
        assert response.json()["details"]["maxDepth"] == DEPTH
    assert api_state(api, control) == before


@pytest.mark.parametrize("levels", [DEPTH + 1, 255, 1_000, 100_000])
def test_deep_nesting_is_refused_on_the_control_plane(asgi_http, control, levels):
    now = control.now()
    response = asgi_http.post(
        "/_mock/clock/advance", content=('{"seconds": ' + nested(levels - 1) + "}"), headers=JSON
    )
    assert response.status_code == 400, response.text
    assert response.headers["x-request-id"]
    assert response.json()["details"]["reason"] == "nesting_too_deep"
    assert control.now() == now


@pytest.mark.parametrize(
    "number",
    [str(HIGH + 1), str(LOW - 1), "1" * 5000, "1e400", "-1e400", "1" * 400 + ".5"],
    ids=["above-int64", "below-int64", "5000-digits", "1e400", "-1e400", "huge-decimal"],
)
def test_numbers_out_of_range_are_refused(api, control, number):
    before = api_state(api, control)
    body = '{"text": "ok", "timecode": ' + number + "}"
    response = api.post("/v1/projects/prj_acme_01/comments", **raw(body))
    refused_with(response, "number_out_of_range")
    assert response.json()["details"]["path"] == "/timecode"
    assert api_state(api, control) == before
    advance = control.http.post(
        "/_mock/clock/advance", content=f'{{"seconds": {number}}}', headers=JSON
    )
    assert advance.status_code == 400
    assert advance.json()["details"]["reason"] == "number_out_of_range"


@pytest.mark.parametrize("number", [str(HIGH), str(LOW), "1e308", "1e-400"])
def test_numbers_in_range_reach_validation(api, number):
    body = '{"text": "ok", "timecode": ' + number + "}"
    response = api.post("/v1/projects/prj_acme_01/comments", **raw(body))
    details = response.json().get("details") or {}
    assert details.get("reason") != "number_out_of_range", response.text


def test_duplicate_keys_take_the_last_value(api):
    response = api.post("/v1/products", **raw('{"name": "first", "name": "last"}'))
    assert response.status_code == 200, response.text
    assert response.json()["product"]["name"] == "last"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"name": "\xff\xfe"}', "malformed_json"),
        (b'{"name": NaN}', "malformed_json"),
        (b'{"name": Infinity}', "malformed_json"),
        (json.dumps({"name": "utf16"}).encode("utf-16"), "malformed_json"),
        (b'{"name": "unterminated', "malformed_json"),
    ],
    ids=["invalid-utf8", "nan", "infinity", "utf-16", "unterminated"],
)
def test_bodies_that_are_not_json_are_refused(api, control, content, reason):
    before = api_state(api, control)
    response = api.post("/v1/products", content=content, headers=JSON)
    refused_with(response, reason)
    assert api_state(api, control) == before


def test_a_leading_byte_order_mark_is_ignored(api):
    content = b"\xef\xbb\xbf" + json.dumps({"name": "bom"}).encode()
    response = api.post("/v1/products", content=content, headers=JSON)
    assert response.status_code == 200, response.text
