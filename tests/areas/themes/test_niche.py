"""Niche profiles: business details to a canonical primary theme, shaped as the contract says."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mockserver.areas.themes.niche import build_niche_profile, classify_request, short_audience
from mockserver.areas.themes.taxonomy import default_taxonomy
from tests.support.schemas import schema_validator as contract_validator

TAXONOMY = default_taxonomy()


BUSINESSES: list[tuple[str, dict[str, Any], str]] = [
    (
        "budget-coaching",
        {
            "businessName": "Budget Bees",
            "description": "Coaching that helps couples build a budget, pay off debt and grow "
            "an emergency fund.",
            "products": ["Budgeting spreadsheet", "1:1 money coaching"],
            "audience": "Young professionals in their twenties. Mostly renters.",
            "keywords": ["budgeting", "debt payoff"],
        },
        "personal-finance",
    ),
    (
        "dog-food",
        {
            "businessName": "PawPrint Supply",
            "description": "Organic dog food and treats delivered monthly.",
            "products": ["Puppy starter box", "Grain-free kibble"],
            "audience": "New dog owners",
            "website": "https://pawprint.example",
        },
        "pets",
    ),
    (
        "gym-app",
        {
            "businessName": "Lift Lab",
            "description": "Online strength training programs and a gym app.",
            "keywords": ["workout", "strength training"],
        },
        "fitness",
    ),
    (
        "skincare",
        {
            "businessName": "Glow Studio",
            "description": "Clean skincare and makeup for sensitive skin.",
            "products": ["Vitamin C serum", "Tinted moisturizer"],
            "audience": "Women 25-40 who want a simple beauty routine",
        },
        "beauty",
    ),
    (
        "saas-devtools",
        {
            "businessName": "Shipfast",
            "description": "Code review and devops automation for software engineers.",
            "keywords": ["developer tools", "github"],
        },
        "software-development",
    ),
    ("vague", {"businessName": "Acme", "description": "We do things for people."}, "needs-review"),
    (
        "mixed",
        {"businessName": "Mixed Co", "description": "Crypto trading signals and a dog salon."},
        "needs-review",
    ),
]


@pytest.mark.parametrize(
    ("details", "expected"), [b[1:] for b in BUSINESSES], ids=[b[0] for b in BUSINESSES]
)
def test_primary_theme_and_contract_shape(details: dict[str, Any], expected: str) -> None:
    contract_validator("NicheProfileRequest").validate(details)
    profile = build_niche_profile(details, TAXONOMY)
    contract_validator("NicheProfile").validate(profile)
    assert profile["primaryTheme"]["themeId"] == expected
    assert profile["needsReview"] == (expected == "needs-review")
    assert profile["taxonomyVersion"] == TAXONOMY.version
    assert len(profile["secondaryThemes"]) <= 2
    assert all(not s["needsReview"] for s in profile["secondaryThemes"])
    assert profile["niche"]


def test_niche_names_the_theme_and_the_audience() -> None:
    profile = build_niche_profile(BUSINESSES[0][1], TAXONOMY)
    assert profile["niche"] == "Personal finance for young professionals in their twenties"
    assert profile["audience"] == "Young professionals in their twenties. Mostly renters."
    assert profile["keywords"][:2] == ["budgeting", "debt payoff"]
    assert "emergency fund" in profile["keywords"]


def test_without_audience_the_niche_is_the_theme_name() -> None:
    profile = build_niche_profile(BUSINESSES[2][1], TAXONOMY)
    assert profile["niche"] == "Fitness"
    assert profile["audience"] is None


def test_needs_review_niche_comes_from_keywords_or_name() -> None:
    vague = build_niche_profile(BUSINESSES[5][1], TAXONOMY)
    assert vague["niche"] == "Acme" and vague["keywords"] == []
    mixed = build_niche_profile(BUSINESSES[6][1], TAXONOMY)
    assert mixed["niche"] == ", ".join(mixed["keywords"][:3])
    assert {s["themeId"] for s in mixed["secondaryThemes"]} == {"crypto", "pets"}


def test_profile_is_deterministic() -> None:
    for _, details, _ in BUSINESSES:
        first = json.dumps(build_niche_profile(details, TAXONOMY))
        assert first == json.dumps(build_niche_profile(json.loads(json.dumps(details)), TAXONOMY))


def test_classify_request_is_a_valid_classify_request() -> None:
    for _, details, _ in BUSINESSES:
        contract_validator("ClassifyRequest").validate(classify_request(details))
    assert "renters" not in json.dumps(classify_request(BUSINESSES[0][1]))


def test_short_audience() -> None:
    assert short_audience("NYC founders; bootstrapped") == "NYC founders"
    long = "people " * 30
    assert len(short_audience(long)) <= 80
    assert short_audience(None) == ""
