"""Niche profiles: customer business details summarised in the canonical taxonomy.

The business name and description are classified as a title (a business description says
what the business is, unlike a video's description), the products as the description and the
customer's keywords as hashtags; the audience is kept out (who buys is not what the business
is about). The primary theme is the classifier's result, the secondary
themes its alternatives. The niche reads "<theme name> for <audience>", or just the theme name
without an audience; when the primary theme is the needs-review fallback it is built from the
profile's top keywords (or the business name) and ``needsReview`` is true.
"""

from __future__ import annotations

import re
from typing import Any

from mockserver.areas.themes.classifier import classify, collect_evidence
from mockserver.areas.themes.taxonomy import Taxonomy

PROFILE_KEYWORD_LIMIT = 10
NICHE_KEYWORD_COUNT = 3
AUDIENCE_MAX_CHARS = 80


def build_niche_profile(details: dict[str, Any], taxonomy: Taxonomy) -> dict[str, Any]:
    """The contract's ``NicheProfile`` for a ``NicheProfileRequest``."""
    request = classify_request(details)
    response = classify(request, taxonomy)
    primary, secondary = response["result"], response["alternatives"]
    theme_ids = [c["themeId"] for c in [primary, *secondary]]
    keywords = profile_keywords(details, request, theme_ids, taxonomy)
    audience = _clean(details.get("audience")) or None
    return {
        "niche": niche_string(primary, audience, keywords, details),
        "primaryTheme": primary,
        "secondaryThemes": secondary,
        "keywords": keywords,
        "audience": audience,
        "needsReview": primary["needsReview"],
        "taxonomyVersion": taxonomy.version,
    }


def classify_request(details: dict[str, Any]) -> dict[str, Any]:
    """The ``ClassifyRequest`` the business details are classified as."""
    name, description = _clean(details.get("businessName")), _clean(details.get("description"))
    request: dict[str, Any] = {"title": ". ".join(t for t in (name, description) if t)}
    products = [_clean(p) for p in details.get("products") or [] if isinstance(p, str)]
    if any(products):
        request["description"] = ". ".join(p for p in products if p)
    hashtags = [k for k in details.get("keywords") or [] if isinstance(k, str) and k.strip()]
    if hashtags:
        request["hashtags"] = hashtags
    return request


def profile_keywords(
    details: dict[str, Any], request: dict[str, Any], theme_ids: list[str], taxonomy: Taxonomy
) -> list[str]:
    """The customer's keywords, then the taxonomy keywords matched for the profile's themes."""
    own = [_clean(k).lower() for k in details.get("keywords") or [] if isinstance(k, str)]
    evidence, _ = collect_evidence(request, taxonomy)
    matched = sorted(
        (e for e in evidence if e.keyword and e.theme_id in theme_ids),
        key=lambda e: (theme_ids.index(e.theme_id), -e.weight, e.keyword or ""),
    )
    merged = dict.fromkeys(k for k in [*own, *(e.keyword or "" for e in matched)] if k)
    return list(merged)[:PROFILE_KEYWORD_LIMIT]


def niche_string(
    primary: dict[str, Any], audience: str | None, keywords: list[str], details: dict[str, Any]
) -> str:
    """A concise niche: theme and audience, or the top keywords when review is needed."""
    if primary["needsReview"]:
        top = ", ".join(keywords[:NICHE_KEYWORD_COUNT])
        return top or _clean(details.get("businessName")) or primary["themeName"]
    short = short_audience(audience)
    return f"{primary['themeName']} for {short}" if short else primary["themeName"]


def short_audience(audience: str | None) -> str:
    """The audience's first clause, at most ``AUDIENCE_MAX_CHARS`` characters, cut at a word."""
    clause = re.split(r"[.;:\n]", audience or "", maxsplit=1)[0].strip()
    if len(clause) > AUDIENCE_MAX_CHARS:
        clause = clause[:AUDIENCE_MAX_CHARS].rsplit(" ", 1)[0].rstrip(" ,")
    if clause[1:2].islower():  # "Young professionals" -> "young professionals"; keep "NYC ..."
        clause = clause[0].lower() + clause[1:]
    return clause


def _clean(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""
