"""Canonical theme assignments of a viral-content item, with their provenance."""

from __future__ import annotations

from typing import Any

from mockserver.areas.themes.classifier import classify
from mockserver.areas.themes.taxonomy import Taxonomy

ITEM_FIELDS = ("title", "description", "hashtags", "sourceCategories")


def theme_assignments(item: dict[str, Any], taxonomy: Taxonomy) -> list[dict[str, Any]]:
    """The contract's ``ThemeAssignment`` list: the classification first, then alternatives."""
    request = {field: item[field] for field in ITEM_FIELDS if item.get(field) is not None}
    response = classify(request, taxonomy)
    return [assignment(c) for c in [response["result"], *response["alternatives"]]]


def assignment(classification: dict[str, Any]) -> dict[str, Any]:
    """One ``ThemeAssignment`` from a ``Classification``: its reasons are the provenance."""
    return {
        "themeId": classification["themeId"],
        "confidence": classification["confidence"],
        "method": classification["method"],
        "provenance": list(classification["reasons"]),
        "taxonomyVersion": classification["taxonomyVersion"],
    }
