"""The classifier: a table of expected themes, contract shapes, and determinism properties."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockserver.areas.themes import classifier
from mockserver.areas.themes.assign import theme_assignments
from mockserver.areas.themes.classifier import classify, hashtag_tokens, stem, tokens
from mockserver.areas.themes.taxonomy import Taxonomy, default_taxonomy
from tests.support.schemas import schema_validator as contract_validator

TAXONOMY = default_taxonomy()
FALLBACK = "needs-review"


def cat(system: str, category_id: str, label: str = "") -> dict[str, str]:
    return {"system": system, "id": category_id, "label": label}


def check_contract(response: dict[str, Any]) -> None:
    contract_validator("ClassifyResponse").validate(response)
    for item in [response["result"], *response["alternatives"]]:
        contract_validator("Classification").validate(item)
        assert item["needsReview"] == (item["themeId"] == FALLBACK)
        assert (item["economics"] is None) == (item["themeId"] == FALLBACK)
        assert (item["method"] == "fallback") == (item["themeId"] == FALLBACK)
        assert item["taxonomyVersion"] == TAXONOMY.version
        assert item["reasons"]


CASES: list[tuple[str, dict[str, Any], str]] = [
    # Keyword rules.
    (
        "finance-hashtags",
        {"title": "How I paid off $30k of debt", "hashtags": ["#PersonalFinance", "#DebtPayoff"]},
        "personal-finance",
    ),
    ("crypto-hashtags", {"hashtags": ["#bitcoin", "#crypto", "#ethereum"]}, "crypto"),
    (
        "real-estate",
        {"title": "First time home buyer mistakes", "hashtags": ["#realestate", "#mortgage"]},
        "real-estate",
    ),
    ("niche-alone", {"niche": "fitness"}, "fitness"),
    (
        "workout",
        {"title": "Full body home workout, no equipment", "hashtags": ["#gym", "#hiit"]},
        "fitness",
    ),
    ("outfits", {"title": "Fall outfit ideas", "hashtags": ["#ootd", "#streetwear"]}, "fashion"),
    (
        "language",
        {"title": "Learn Spanish in 30 days", "hashtags": ["#languagelearning", "#duolingo"]},
        "language-learning",
    ),
    (
        "coding",
        {"title": "Build a REST API with Python", "hashtags": ["#coding", "#programming"]},
        "software-development",
    ),
    (
        "ai",
        {"title": "ChatGPT prompt engineering tips", "hashtags": ["#AI", "#GenerativeAI"]},
        "artificial-intelligence",
    ),
    (
        "mental-health-phrase",
        {"title": "Anxiety and burnout: what therapy taught me", "hashtags": ["#mentalhealth"]},
        "mental-health",
    ),
    (
        "true-crime",
        {"title": "The unsolved mystery of a cold case", "hashtags": ["#truecrime"]},
        "true-crime",
    ),
    (
        "zero-waste",
        {"title": "Zero waste swaps", "hashtags": ["#sustainability", "#eco_friendly"]},
        "sustainability",
    ),
    (
        "remodel",
        {"title": "Kitchen remodel on a budget", "hashtags": ["#diy", "#home-improvement"]},
        "home-improvement",
    ),
    (
        "garden",
        {"title": "Raised bed vegetable garden tour", "hashtags": ["#gardening"]},
        "gardening",
    ),
    (
        "wedding",
        {"title": "Wedding planning checklist", "hashtags": ["#bride", "#WeddingDress"]},
        "weddings",
    ),
    (
        "ev",
        {"title": "Tesla Model 3 long-term review", "hashtags": ["#EV", "#electricvehicle"]},
        "automotive",
    ),
    (
        "tarot",
        {"title": "Daily tarot reading for your zodiac sign", "hashtags": ["#astrology"]},
        "spirituality",
    ),
    (
        "camera",
        {"title": "Mirrorless camera settings for portrait photography"},
        "photography",
    ),
    (
        "soccer",
        {"title": "Champions League final highlights", "hashtags": ["#soccer"]},
        "soccer",
    ),
    (
        "plural-stemming",
        {"title": "Five easy recipes", "hashtags": ["#cookies", "#Baking"]},
        "food-cooking",
    ),
    (
        "rich-description",
        {
            "description": "Weekly meal prep ideas with high protein, low carb macros and a "
            "keto friendly plan from a registered dietitian."
        },
        "nutrition",
    ),
    # IAB labels.
    ("iab-id", {"sourceCategories": [cat("iab", "IAB13", "Personal Finance")]}, "personal-finance"),
    ("iab-label-only", {"sourceCategories": [cat("iab", "", "travel")]}, "travel"),
    ("iab-case-insensitive", {"sourceCategories": [cat("IAB", "iab9-30", "whatever")]}, "gaming"),
    (
        "iab-and-title",
        {"sourceCategories": [cat("iab", "IAB13-11", "Stocks")], "title": "3 dividend stocks"},
        "investing",
    ),
    # Platform categories.
    (
        "longvideo-gaming",
        {"sourceCategories": [cat("longvideo", "20", "Gaming")], "title": "Minecraft speedrun"},
        "gaming",
    ),
    ("longvideo-pets", {"sourceCategories": [cat("longvideo", "15", "Pets & Animals")]}, "pets"),
    (
        "shortvideo-food",
        {"sourceCategories": [cat("shortvideo", "sv-food")], "title": "Easy pasta recipe"},
        "food-cooking",
    ),
    (
        "news",
        {"sourceCategories": [cat("longvideo", "25", "News & Politics")], "title": "Election"},
        "news-politics",
    ),
    (
        "broad-plus-keywords",
        {
            "sourceCategories": [cat("longvideo", "26", "Howto & Style")],
            "hashtags": ["#GRWM", "#makeuptutorial"],
        },
        "beauty",
    ),
    (
        "sports-and-nba",
        {"sourceCategories": [cat("longvideo", "17", "Sports")], "hashtags": ["#nba", "#dunk"]},
        "basketball",
    ),
    (
        "broad-plus-niche",
        {
            "niche": "software development",
            "sourceCategories": [cat("longvideo", "28", "Science & Technology")],
        },
        "software-development",
    ),
    # Fallbacks: weak or contradictory evidence.
    ("empty-title", {"title": ""}, FALLBACK),
    ("empty-lists", {"hashtags": [], "sourceCategories": []}, FALLBACK),
    ("broad-only", {"sourceCategories": [cat("longvideo", "22", "People & Blogs")]}, FALLBACK),
    (
        "two-broad-only",
        {
            "sourceCategories": [
                cat("longvideo", "26", "Howto & Style"),
                cat("iab", "IAB18", "Style & Fashion"),
            ]
        },
        FALLBACK,
    ),
    (
        "near-tie",
        {
            "sourceCategories": [
                cat("iab", "IAB13", "Personal Finance"),
                cat("longvideo", "20", "Gaming"),
            ]
        },
        FALLBACK,
    ),
    (
        "near-tie-keywords",
        {"title": "budgeting", "hashtags": ["#gaming"]},
        FALLBACK,
    ),
    ("unknown-system", {"sourceCategories": [cat("somethingelse", "42", "Finance")]}, FALLBACK),
    ("unknown-id", {"sourceCategories": [cat("longvideo", "99", "Unknown")]}, FALLBACK),
    ("uncategorized", {"sourceCategories": [cat("iab", "IAB24", "Uncategorized")]}, FALLBACK),
    ("gibberish", {"title": "zxqv blorp flimflam", "hashtags": ["#asdfgh"]}, FALLBACK),
    ("generic-hashtags", {"hashtags": ["#fyp", "#viral", "#foryou"]}, FALLBACK),
    ("single-weak-keyword", {"title": "budget"}, FALLBACK),
    (
        "single-description-mention",
        {"description": "we talked about the weather and also my dog for a second"},
        FALLBACK,
    ),
]


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 30
    assert sum(expected == FALLBACK for _, _, expected in CASES) >= 6
    assert len({name for name, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(
    ("request_body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_expected_theme(request_body: dict[str, Any], expected: str) -> None:
    response = classify(request_body, TAXONOMY)
    check_contract(response)
    result = response["result"]
    assert result["themeId"] == expected, result["reasons"]
    if expected == FALLBACK:
        assert result["confidence"] < classifier.MIN_CONFIDENCE or "tied" in result["reasons"][0]
    else:
        assert result["confidence"] >= classifier.MIN_CONFIDENCE
        assert result["economics"] == TAXONOMY.theme_view(TAXONOMY.theme(expected))["economics"]


@pytest.mark.parametrize("theme", TAXONOMY.themes(), ids=lambda t: t["id"])
def test_a_theme_name_as_niche_classifies_as_that_theme(theme: dict[str, Any]) -> None:
    assert classify({"niche": theme["name"]}, TAXONOMY)["result"]["themeId"] == theme["id"]


def test_reasons_name_the_evidence() -> None:
    response = classify(
        {
            "sourceCategories": [cat("iab", "IAB13", "Personal Finance")],
            "hashtags": ["#budgeting"],
        },
        TAXONOMY,
    )
    assert response["result"]["reasons"] == [
        "iab IAB13 'Personal Finance' maps to personal-finance",
        "hashtag #budgeting matches keyword 'budgeting'",
    ]
    assert response["result"]["method"] == "iab-label"


def test_method_follows_the_strongest_evidence() -> None:
    body = {"sourceCategories": [cat("longvideo", "20", "Gaming")]}
    assert classify(body, TAXONOMY)["result"]["method"] == "platform-category"
    body["hashtags"] = ["#minecraft", "#speedrun", "#fortnite"]
    assert classify(body, TAXONOMY)["result"]["method"] == "keyword-rules"


def test_fallback_explains_and_offers_candidates() -> None:
    response = classify({"sourceCategories": [cat("longvideo", "26", "Howto & Style")]}, TAXONOMY)
    result = response["result"]
    assert result["reasons"][0].startswith("evidence is weak")
    assert "beauty" in result["reasons"][1]
    assert [a["themeId"] for a in response["alternatives"]] == ["beauty", "fashion"]
    assert result["confidence"] == response["alternatives"][0]["confidence"]


def test_no_evidence_is_zero_confidence() -> None:
    result = classify({"title": "zxqv"}, TAXONOMY)["result"]
    assert result["confidence"] == 0
    assert result["reasons"] == ["evidence is weak: no category mapping or keyword rule matched"]


def test_unknown_inputs_are_ignored_with_a_reason() -> None:
    body = {
        "niche": "fitness",
        "sourceCategories": [cat("elsewhere", "1", "Fitness"), cat("iab", "IAB999", "Nope")],
    }
    reasons = classify(body, TAXONOMY)["result"]["reasons"]
    assert "ignored category system 'elsewhere': not in the taxonomy mappings" in reasons
    assert "ignored iab category 'IAB999' 'Nope': not mapped" in reasons


def test_id_wins_over_label_and_duplicates_count_once() -> None:
    once = classify({"sourceCategories": [cat("iab", "IAB13", "Video & Computer Games")]}, TAXONOMY)
    assert once["result"]["themeId"] == "personal-finance"
    twice = classify(
        {"sourceCategories": [cat("iab", "IAB13"), cat("iab", "", "personal finance")]}, TAXONOMY
    )
    assert twice["result"]["confidence"] == once["result"]["confidence"]


def test_a_keyword_counts_once_per_field() -> None:
    once = classify({"hashtags": ["#budgeting", "#savingmoney"]}, TAXONOMY)
    again = classify({"hashtags": ["#budgeting", "#Budgeting", "#savingmoney"]}, TAXONOMY)
    assert once["result"]["confidence"] == again["result"]["confidence"]


def test_alternatives_rank_below_the_result() -> None:
    body = {
        "sourceCategories": [cat("longvideo", "17", "Sports")],
        "hashtags": ["#nba", "#basketball"],
    }
    response = classify(body, TAXONOMY)
    check_contract(response)
    assert [a["themeId"] for a in response["alternatives"]] == ["sports"]
    assert response["alternatives"][0]["confidence"] < response["result"]["confidence"]


def test_shared_keywords_count_less() -> None:
    document = {
        "version": "t1",
        "fallback": {"id": "needs-review", "name": "Needs review"},
        "themes": [
            {"id": "a", "name": "A", "parentId": None, "keywords": ["alpha", "shared"]},
            {"id": "b", "name": "B", "parentId": None, "keywords": ["beta", "shared"]},
        ],
        "mappings": {"iab": {"method": "iab-label", "categories": []}},
    }
    taxonomy = Taxonomy.from_document(document)
    evidence, _ = classifier.collect_evidence({"niche": "shared alpha"}, taxonomy)
    weights = {(e.theme_id, e.keyword): e.weight for e in evidence}
    assert weights == {("a", "alpha"): 1.0, ("a", "shared"): 0.5, ("b", "shared"): 0.5}
    assert "(shared by 2 themes)" in evidence[-1].reason


def test_normalisation() -> None:
    assert hashtag_tokens("#PersonalFinanceTips") == ["personal", "finance", "tip"]
    assert hashtag_tokens("#ETFInvesting") == ["etf", "investing"]
    assert hashtag_tokens("#home_improvement-ideas") == ["home", "improvement", "idea"]
    assert tokens("Stories, Cookies & NEWS!") == ["story", "cooky", "news"]
    assert [stem(w) for w in ["dresses", "boxes", "bus", "physics", "gas"]] == [
        "dress",
        "box",
        "bus",
        "physics",
        "gas",
    ]


def test_theme_assignments_match_the_contract() -> None:
    item = {
        "id": "v1",
        "title": "Minecraft speedrun world record",
        "hashtags": ["#gaming"],
        "sourceCategories": [cat("longvideo", "20", "Gaming")],
        "description": None,
    }
    assignments = theme_assignments(item, TAXONOMY)
    assert assignments[0]["themeId"] == "gaming"
    assert (
        assignments[0]["provenance"]
        == classify({k: item[k] for k in ("title", "hashtags", "sourceCategories")}, TAXONOMY)[
            "result"
        ]["reasons"]
    )
    for assignment in assignments:
        contract_validator("ThemeAssignment").validate(assignment)
    weak = theme_assignments({"title": "zxqv"}, TAXONOMY)
    assert [(a["themeId"], a["method"]) for a in weak] == [(FALLBACK, "fallback")]


# Properties ------------------------------------------------------------------------------------

KEYWORDS = sorted({k for theme in TAXONOMY.themes() for k in theme["keywords"]})
NOISE = ["the", "best", "video", "today", "my", "new", "zxqv", "how", "to", "2026", "ünïcode"]
KNOWN_CATEGORIES = sorted(
    (system.name, mapping.id, mapping.label)
    for system in TAXONOMY.systems.values()
    for mapping in system.by_id.values()
)

words = st.sampled_from(KEYWORDS + NOISE)
texts = st.one_of(st.lists(words, max_size=8).map(" ".join), st.text(max_size=40))
hashtags = st.one_of(
    st.sampled_from(KEYWORDS).map(lambda k: "#" + k.title().replace(" ", "")),
    st.sampled_from(NOISE).map(lambda w: "#" + w),
    st.text(min_size=1, max_size=20),
)
known_categories = st.sampled_from(KNOWN_CATEGORIES).flatmap(
    lambda c: st.sampled_from(
        [cat(c[0], c[1], c[2]), cat(c[0], c[1]), cat(c[0].upper(), "", c[2].lower())]
    )
)
unknown_systems = st.text(min_size=1, max_size=40).filter(lambda s: TAXONOMY.system(s) is None)
unknown_categories = st.builds(cat, unknown_systems, st.text(max_size=10), st.text(max_size=20))
unmapped_categories = st.builds(
    cat, st.sampled_from(sorted(TAXONOMY.systems)), st.just("zz-unmapped"), st.just("Unmapped")
)
categories = st.one_of(known_categories, known_categories, unknown_categories, unmapped_categories)
requests = st.fixed_dictionaries(
    {},
    optional={
        "title": texts,
        "description": texts,
        "niche": texts,
        "hashtags": st.lists(hashtags, max_size=8),
        "sourceCategories": st.lists(categories, max_size=6),
    },
)
PROPERTY_SETTINGS = settings(max_examples=150, deadline=None)


def canonical(response: dict[str, Any]) -> str:
    return json.dumps(response, sort_keys=False, ensure_ascii=False)


@PROPERTY_SETTINGS
@given(requests)
def test_same_input_same_output(body: dict[str, Any]) -> None:
    first = classify(body, TAXONOMY)
    assert canonical(first) == canonical(classify(json.loads(json.dumps(body)), TAXONOMY))
    check_contract(first)


@PROPERTY_SETTINGS
@given(requests)
def test_confidence_and_review_flag(body: dict[str, Any]) -> None:
    response = classify(body, TAXONOMY)
    items = [response["result"], *response["alternatives"]]
    for item in items:
        assert 0 <= item["confidence"] <= 1
        assert item["needsReview"] is (item["themeId"] == FALLBACK)
    assert len(response["alternatives"]) <= 2
    assert all(a["themeId"] != FALLBACK for a in response["alternatives"])
    confidences = [a["confidence"] for a in response["alternatives"]]
    assert confidences == sorted(confidences, reverse=True)


@PROPERTY_SETTINGS
@given(requests, st.lists(unknown_categories, min_size=1, max_size=5), st.data())
def test_unknown_systems_never_change_the_result(
    body: dict[str, Any], extra: list[dict[str, str]], data: st.DataObject
) -> None:
    before = classify(body, TAXONOMY)
    mixed = list(body.get("sourceCategories", []))
    for category in extra:
        mixed.insert(data.draw(st.integers(0, len(mixed))), category)
    after = classify({**body, "sourceCategories": mixed}, TAXONOMY)
    strip = lambda c: {k: v for k, v in c.items() if k != "reasons"}  # noqa: E731
    assert strip(after["result"]) == strip(before["result"])
    assert after["alternatives"] == before["alternatives"]
    added = [r for r in after["result"]["reasons"] if r not in before["result"]["reasons"]]
    assert all(r.startswith("ignored category system") for r in added)


@PROPERTY_SETTINGS
@given(requests, st.data())
def test_order_of_categories_and_hashtags_does_not_matter(
    body: dict[str, Any], data: st.DataObject
) -> None:
    shuffled = dict(body)
    if "sourceCategories" in body:
        shuffled["sourceCategories"] = data.draw(st.permutations(body["sourceCategories"]))
    if "hashtags" in body:
        shuffled["hashtags"] = data.draw(st.permutations(body["hashtags"]))
    assert canonical(classify(shuffled, TAXONOMY)) == canonical(classify(body, TAXONOMY))
