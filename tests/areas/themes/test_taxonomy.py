"""The taxonomy fixture: coverage, integrity, and Theme objects that match the contract."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from mockserver.areas.themes.taxonomy import (
    Taxonomy,
    default_taxonomy,
    default_taxonomy_path,
    normalise_label,
)
from tests.support.schemas import schema_validator as contract_validator

SLUG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
TAXONOMY = default_taxonomy()


def mapping_entries(taxonomy: Taxonomy, system: str) -> list[Any]:
    return list(taxonomy.systems[system].by_id.values())


def test_at_least_forty_themes_with_unique_slug_ids() -> None:
    ids = [theme["id"] for theme in TAXONOMY.themes()]
    assert len(ids) >= 40
    assert len(set(ids)) == len(ids)
    assert all(SLUG.match(theme_id) for theme_id in ids)


def test_version_is_a_string() -> None:
    assert isinstance(TAXONOMY.version, str) and TAXONOMY.version


def test_parents_exist_and_do_not_loop() -> None:
    parents = [t for t in TAXONOMY.themes() if t["parentId"] is not None]
    assert len(parents) >= 3
    for theme in TAXONOMY.themes():
        seen = {theme["id"]}
        parent = theme["parentId"]
        while parent is not None:
            assert TAXONOMY.theme(parent) is not None, parent
            assert parent not in seen, f"parent loop at {theme['id']}"
            seen.add(parent)
            parent = TAXONOMY.theme(parent)["parentId"]


@pytest.mark.parametrize("theme", TAXONOMY.themes(), ids=lambda t: t["id"])
def test_theme_has_priors_and_keywords(theme: dict[str, Any]) -> None:
    economics = theme["economics"]
    assert economics["cpmUsd"] > 0 and economics["rpmUsd"] > 0
    assert economics["rpmUsd"] < economics["cpmUsd"]
    assert 0 <= economics["affiliateFit"] <= 1
    assert economics["competition"] in ("low", "medium", "high")
    assert 0 <= theme["riskPrior"] <= 1
    assert theme["name"] and theme["description"]
    keywords = theme["keywords"]
    assert 10 <= len(keywords) <= 25
    assert all(k == k.lower().strip() and k for k in keywords)
    assert len(set(keywords)) == len(keywords)


def test_priors_vary_and_risky_themes_rank_high() -> None:
    cpms = {t["economics"]["cpmUsd"] for t in TAXONOMY.themes()}
    assert len(cpms) >= 10
    risk = {t["id"]: t["riskPrior"] for t in TAXONOMY.themes()}
    median = sorted(risk.values())[len(risk) // 2]
    for risky in ("crypto", "news-politics", "true-crime", "health-medicine"):
        assert risk[risky] > median


def test_fallback_is_not_a_canonical_theme() -> None:
    assert TAXONOMY.fallback["id"] == "needs-review"
    assert TAXONOMY.fallback["name"] == "Needs review"
    assert TAXONOMY.theme("needs-review") is None
    assert "economics" not in TAXONOMY.fallback


def test_mappings_cover_iab_and_two_platforms() -> None:
    methods = {name: system.method for name, system in TAXONOMY.systems.items()}
    assert methods["iab"] == "iab-label"
    platforms = [name for name, method in methods.items() if method == "platform-category"]
    assert {"longvideo", "shortvideo"} <= set(platforms)
    assert len(mapping_entries(TAXONOMY, "iab")) >= 40
    assert len(mapping_entries(TAXONOMY, "shortvideo")) >= 15
    longvideo_ids = {m.id for m in mapping_entries(TAXONOMY, "longvideo")}
    assert {
        "1",
        "2",
        "10",
        "15",
        "17",
        "19",
        "20",
        "22",
        "23",
        "24",
        "25",
        "26",
        "27",
        "28",
        "29",
    } <= (longvideo_ids)


def test_every_mapped_theme_exists_and_weights_are_fractions() -> None:
    for name, system in TAXONOMY.systems.items():
        for mapping in system.by_id.values():
            for theme_id, weight in mapping.candidates:
                assert TAXONOMY.theme(theme_id) is not None, (name, mapping.id, theme_id)
                assert 0 < weight <= 1
            if mapping.broad and mapping.candidates:
                assert sum(w for _, w in mapping.candidates) <= 1.0 + 1e-9
                assert max(w for _, w in mapping.candidates) < 1


def test_broad_categories_are_broad() -> None:
    longvideo = TAXONOMY.systems["longvideo"]
    assert longvideo.by_id["22"].broad and longvideo.by_id["26"].broad
    assert not longvideo.by_id["20"].broad
    assert TAXONOMY.systems["iab"].by_id["iab13"].candidates == (("personal-finance", 1.0),)


def test_labels_are_found_case_insensitively() -> None:
    iab = TAXONOMY.systems["iab"]
    assert iab.lookup("", "TECHNOLOGY & computing") is iab.lookup("IAB19", "")
    assert iab.lookup("IAB13", "Travel") is iab.lookup("", "personal finance")
    assert normalise_label("  Howto &  Style ") == "howto and style"


def test_lookups_follow_taxonomy_order() -> None:
    themes = TAXONOMY.themes()
    assert [TAXONOMY.theme(t["id"]) for t in themes] == themes
    assert TAXONOMY.theme("no-such-theme") is None
    assert [TAXONOMY.index[t["id"]] for t in themes] == list(range(len(themes)))


@pytest.mark.parametrize("theme", TAXONOMY.themes(), ids=lambda t: t["id"])
def test_theme_view_matches_the_contract(theme: dict[str, Any]) -> None:
    view = TAXONOMY.theme_view(theme)
    contract_validator("Theme").validate(view)
    assert list(view) == [
        "id",
        "name",
        "parentId",
        "description",
        "economics",
        "riskPrior",
        "taxonomyVersion",
        "keywords",
    ]
    assert view["taxonomyVersion"] == TAXONOMY.version


def test_theme_view_is_a_copy() -> None:
    theme = TAXONOMY.themes()[0]
    view = TAXONOMY.theme_view(theme)
    view["economics"]["cpmUsd"] = -1
    view["keywords"].append("changed")
    assert TAXONOMY.theme_view(theme) != view


def test_a_broken_taxonomy_is_refused() -> None:
    with open(default_taxonomy_path(), encoding="utf-8") as fh:
        document = yaml.safe_load(fh)
    document["themes"][1]["parentId"] = "no-such-parent"
    with pytest.raises(ValueError, match="unknown parent"):
        Taxonomy.from_document(document)
