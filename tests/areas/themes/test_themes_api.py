"""Themes over HTTP: the classifier table, determinism, the taxonomy list and niche profiles."""

from __future__ import annotations

from typing import Any

import pytest

FALLBACK = "needs-review"


def cat(system: str, category_id: str, label: str = "") -> dict[str, str]:
    return {"system": system, "id": category_id, "label": label}


# (name, request body, expected result theme). Every row goes through POST /v1/themes/classify.
TABLE: list[tuple[str, dict[str, Any], str]] = [
    # Category evidence: IAB labels and the two platform category systems.
    ("iab-specific-id", {"sourceCategories": [cat("iab", "IAB13-7", "Investing")]}, "investing"),
    ("iab-by-label-only", {"sourceCategories": [cat("iab", "", "Real Estate")]}, "real-estate"),
    ("iab-system-case", {"sourceCategories": [cat("IAB", "iab20", "Travel")]}, "travel"),
    ("longvideo-gaming", {"sourceCategories": [cat("longvideo", "20", "Gaming")]}, "gaming"),
    ("shortvideo-pets", {"sourceCategories": [cat("shortvideo", "sv-pets", "Pets")]}, "pets"),
    (
        "broad-category-decided-by-keywords",
        {
            "title": "Skincare routine for oily skin",
            "hashtags": ["#skincare"],
            "sourceCategories": [cat("longvideo", "26", "Howto & Style")],
        },
        "beauty",
    ),
    (
        "parent-category-and-child-hashtags",
        {"sourceCategories": [cat("iab", "IAB17", "Sports")], "hashtags": ["#nba", "#dunk"]},
        "basketball",
    ),
    (
        "category-and-keywords-agree",
        {
            "title": "Credit card debt payoff plan",
            "sourceCategories": [cat("iab", "IAB13", "Personal Finance")],
        },
        "personal-finance",
    ),
    # Keyword rules: niche, hashtags (camelCase too), title, description.
    ("niche-only", {"niche": "personal finance"}, "personal-finance"),
    ("crypto-hashtags", {"hashtags": ["#bitcoin", "#ethereum", "#defi"]}, "crypto"),
    ("camel-case-hashtags", {"hashtags": ["#StockMarket", "#IndexFunds"]}, "investing"),
    ("cooking-title", {"title": "Easy weeknight recipe: one-pan chicken dinner"}, "food-cooking"),
    ("gym", {"title": "Full body workout at the gym", "hashtags": ["#fitness"]}, "fitness"),
    (
        "gardening",
        {"title": "Vegetable garden tour", "hashtags": ["#gardening", "#houseplants"]},
        "gardening",
    ),
    (
        "coding",
        {"title": "Learn Python programming", "hashtags": ["#coding"]},
        "software-development",
    ),
    (
        "ai",
        {"title": "ChatGPT prompts for beginners", "hashtags": ["#ai", "#machinelearning"]},
        "artificial-intelligence",
    ),
    (
        "soccer",
        {"title": "Premier League goals of the week", "hashtags": ["#soccer"]},
        "soccer",
    ),
    (
        "backpacking",
        {"title": "Backpacking Europe on a budget", "hashtags": ["#travel", "#backpacking"]},
        "travel",
    ),
    ("puppy", {"title": "Puppy training tips: stop the biting", "hashtags": ["#dog"]}, "pets"),
    (
        "anxiety",
        {"title": "Coping with anxiety at work", "hashtags": ["#mentalhealth"]},
        "mental-health",
    ),
    (
        "portraits",
        {"title": "Portrait photography lighting", "hashtags": ["#photography", "#camera"]},
        "photography",
    ),
    ("wedding", {"title": "Wedding dress shopping vlog", "hashtags": ["#bride"]}, "weddings"),
    ("true-crime", {"title": "The unsolved case", "hashtags": ["#truecrime"]}, "true-crime"),
    # Weak or contradictory evidence falls back to needs-review instead of feigning certainty.
    (
        "iab-tier1-is-broad",
        {"sourceCategories": [cat("iab", "IAB7", "Health & Fitness")]},
        FALLBACK,
    ),
    ("iab-uncategorized", {"sourceCategories": [cat("iab", "IAB24", "Uncategorized")]}, FALLBACK),
    ("shortvideo-other", {"sourceCategories": [cat("shortvideo", "sv-other", "Other")]}, FALLBACK),
    ("unknown-system", {"sourceCategories": [cat("mystery", "42", "Whatever")]}, FALLBACK),
    (
        "unmapped-ids",
        {"sourceCategories": [cat("iab", "IAB99-99", "Nothing"), cat("longvideo", "999", "")]},
        FALLBACK,
    ),
    (
        "two-broad-categories",
        {
            "sourceCategories": [
                cat("iab", "IAB9", "Hobbies & Interests"),
                cat("shortvideo", "sv-daily-life", "Daily Life"),
            ]
        },
        FALLBACK,
    ),
    (
        "parent-and-one-child-hashtag-nearly-tied",
        {"sourceCategories": [cat("iab", "IAB17", "Sports")], "hashtags": ["#nba"]},
        FALLBACK,
    ),
    ("contradictory-hashtags", {"hashtags": ["#bitcoin", "#skincare"]}, FALLBACK),
    ("description-alone-is-weak", {"description": "Growing tomatoes and herbs"}, FALLBACK),
    ("empty-title", {"title": ""}, FALLBACK),
    ("clickbait", {"title": "You won't believe what happened next"}, FALLBACK),
    ("gibberish", {"title": "zxqv wplm", "niche": "qqq"}, FALLBACK),
]


def test_the_table_is_big_enough_and_falls_back_often_enough():
    assert len(TABLE) >= 30
    assert sum(1 for *_, expected in TABLE if expected == FALLBACK) >= 8
    assert len({name for name, *_ in TABLE}) == len(TABLE)


@pytest.mark.parametrize(("name", "body", "expected"), TABLE, ids=[row[0] for row in TABLE])
def test_classify_table(api, name, body, expected):
    response = api.post("/v1/themes/classify", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    result = answer["result"]
    assert result["themeId"] == expected, result["reasons"]
    assert result["needsReview"] is (expected == FALLBACK)
    assert (result["economics"] is None) is (expected == FALLBACK)
    assert (result["method"] == "fallback") is (expected == FALLBACK)
    assert result["taxonomyVersion"] == "2026.11"
    assert result["reasons"], "every answer says why"
    assert 0 <= result["confidence"] <= 1
    assert len(answer["alternatives"]) <= 2
    assert FALLBACK not in [a["themeId"] for a in answer["alternatives"]]


def test_a_canonical_result_carries_the_themes_economics(api):
    body = {"hashtags": ["#bitcoin", "#ethereum", "#defi"]}
    result = api.post("/v1/themes/classify", json=body).json()["result"]
    theme = api.get("/v1/themes/crypto").json()["theme"]
    assert result["economics"] == theme["economics"]
    assert result["themeName"] == theme["name"]


def test_the_same_request_always_gives_the_same_body(api, control):
    body = {
        "title": "How I paid off $30k of debt",
        "hashtags": ["#PersonalFinance", "#DebtPayoff"],
        "sourceCategories": [cat("iab", "IAB13", "Personal Finance")],
    }
    first = api.post("/v1/themes/classify", json=body).json()
    control.advance(86400)
    assert api.post("/v1/themes/classify", json=body, key="admin").json() == first
    reordered = {key: body[key] for key in reversed(list(body))}
    assert api.post("/v1/themes/classify", json=reordered).json() == first


def test_classification_is_free_and_open_to_viewers(api, control):
    before = control.credits()
    response = api.post("/v1/themes/classify", json={"niche": "fitness"}, key="viewer")
    assert response.status_code == 200
    assert response.json()["result"]["themeId"] == "fitness"
    assert control.credits() == before


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"title": "x", "colour": "red"},
        {"hashtags": "#notalist"},
        {"sourceCategories": [{"system": "iab", "id": "IAB1"}]},
    ],
)
def test_bad_classify_bodies_answer_400(api, body):
    response = api.post("/v1/themes/classify", json=body)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_request"


def test_list_themes_walks_the_whole_taxonomy_in_order(api):
    themes = api.walk("/v1/themes", "themes", limit=7)
    assert len(themes) == 50
    assert len({t["id"] for t in themes}) == 50
    assert FALLBACK not in {t["id"] for t in themes}
    assert themes[0]["id"] == "personal-finance"
    assert themes == api.walk("/v1/themes", "themes", limit=100)
    for theme in themes:
        assert theme["taxonomyVersion"] == "2026.11"
        assert 0 <= theme["riskPrior"] <= 1
        assert set(theme["economics"]) >= {"cpmUsd", "rpmUsd", "affiliateFit", "competition"}
    page = api.get("/v1/themes", params={"limit": 5}).json()
    assert page["taxonomyVersion"] == "2026.11" and page["hasMore"] is True


def test_get_theme_and_unknown_ones(api):
    theme = api.get("/v1/themes/basketball", key="viewer").json()["theme"]
    assert theme["id"] == "basketball" and theme["parentId"] == "sports"
    for missing in ("no-such-theme", FALLBACK):
        response = api.get(f"/v1/themes/{missing}")
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"


def test_a_themes_cursor_is_bound_to_its_list(api):
    cursor = api.get("/v1/themes", params={"limit": 2}).json()["nextCursor"]
    response = api.get("/v1/channels", params={"cursor": cursor})
    assert response.status_code == 400


def test_niche_profile_from_business_details(api, control):
    before = control.credits()
    body = {
        "businessName": "Pocket Budget",
        "description": "We help young families with budgeting and saving money.",
        "products": ["Budget planner spreadsheet", "Debt payoff course"],
        "audience": "Young families. Mostly first-time parents.",
        "keywords": ["frugal living"],
    }
    response = api.post("/v1/themes/niche-profile", json=body, key="viewer")
    assert response.status_code == 200, response.text
    profile = response.json()["profile"]
    assert profile["primaryTheme"]["themeId"] == "personal-finance"
    assert profile["needsReview"] is False
    assert profile["niche"] == "Personal finance for young families"
    assert profile["keywords"][0] == "frugal living"
    assert profile["taxonomyVersion"] == "2026.11"
    assert api.post("/v1/themes/niche-profile", json=body).json()["profile"] == profile
    assert control.credits() == before


def test_niche_profile_without_evidence_needs_review(api):
    body = {"businessName": "Zzyx Ltd", "description": "Bespoke solutions for everyone."}
    profile = api.post("/v1/themes/niche-profile", json=body).json()["profile"]
    assert profile["needsReview"] is True
    assert profile["primaryTheme"]["themeId"] == FALLBACK


def test_niche_profile_requires_its_fields(api):
    response = api.post("/v1/themes/niche-profile", json={"businessName": "Only a name"})
    assert response.status_code == 400
    assert response.json()["details"]["errors"][0]["path"] == "/description"
