"""Discovery sources and the compilation of a niche-discovery plan into per-source queries.

Sources (inferred: the interface document names none). Discovery collects from five sources,
named after the platforms the fixtures use: ``longvideo`` and ``shortvideo`` (the taxonomy's two
platform category systems), ``microblog``, ``community`` (the forum) and ``news``. A plan names
any of them (``sources``; default all five, in this order); any other name answers
``400 invalid_request``.

Compilation is deterministic (the same channel and body always give the same plan):

- ``niche``: the body's, else the channel's ``niche``, else the channel's name.
- ``themeIds``: the body's (canonical themes only, else ``400``; duplicates dropped), else the
  classification of the niche and keywords (``POST /v1/themes/classify`` rules): its theme, or
  none when the classifier answers needs-review (a plan never feigns a theme).
- ``keywords``: the body's (duplicates dropped, case-insensitively), else the niche followed by
  the first ``KEYWORDS_PER_THEME`` keywords of each theme not already there, at most
  ``DERIVED_KEYWORDS`` in all.
- One query per source, from the niche and at most ``QUERY_TERMS`` other keywords (multi-word
  keywords quoted), in that source's own syntax; platform sources also filter by each theme's
  first specific category in their category system, ``news`` by the themes' IAB categories
  (a part with nothing to say is left out):

  ============  ================================================================
  longvideo     ``"<niche>" (k1 | k2 | ...) category:<longvideo ids>``
  shortvideo    ``#<niche> #k1 #k2 ... category:<shortvideo ids>`` (as hashtags; the niche
                as written when no word of it or of the keywords makes one)
  microblog     ``("<niche>" OR k1 OR k2 ...) min_engagement:100 -is:reply``
  community     ``title:(k1 OR k2 ...) OR "<niche>" sort:top``
  news          ``("<niche>" OR k1 OR k2 ...) iab:<IAB ids> lang:en``
  ============  ================================================================
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mockserver.areas.themes.classifier import classify
from mockserver.areas.themes.refs import check_theme_ids
from mockserver.areas.themes.taxonomy import Taxonomy
from mockserver.platform.errors import ApiError

QUERY_TERMS = 5
DERIVED_KEYWORDS = 6
KEYWORDS_PER_THEME = 3


@dataclass(frozen=True)
class Source:
    name: str
    system: str  # the category system its items are labelled in
    query: Callable[[str, list[str], list[str]], str]  # (niche, other terms, category ids)


def _term(keyword: str) -> str:
    return f'"{keyword}"' if " " in keyword.strip() else keyword


def tag(keyword: str) -> str:
    return "#" + "".join(re.findall(r"[^\W_]+", keyword.lower()))


def _categories(prefix: str, ids: list[str]) -> str:
    return f" {prefix}:{','.join(ids)}" if ids else ""


def _any(niche: str, terms: list[str], joiner: str) -> str:
    return "(" + joiner.join([f'"{niche}"', *(_term(k) for k in terms)]) + ")"


def _longvideo(niche: str, terms: list[str], ids: list[str]) -> str:
    alternatives = f" ({' | '.join(_term(k) for k in terms)})" if terms else ""
    return f'"{niche}"{alternatives}{_categories("category", ids)}'


def _shortvideo(niche: str, terms: list[str], ids: list[str]) -> str:
    tags = " ".join(dict.fromkeys(t for t in (tag(k) for k in [niche, *terms]) if t != "#"))
    return f"{tags or _term(niche)}{_categories('category', ids)}"


def _microblog(niche: str, terms: list[str], ids: list[str]) -> str:
    return f"{_any(niche, terms, ' OR ')} min_engagement:100 -is:reply"


def _community(niche: str, terms: list[str], ids: list[str]) -> str:
    titles = f"title:({' OR '.join(_term(k) for k in terms)}) OR " if terms else ""
    return f'{titles}"{niche}" sort:top'


def _news(niche: str, terms: list[str], ids: list[str]) -> str:
    return f"{_any(niche, terms, ' OR ')}{_categories('iab', ids)} lang:en"


SOURCES: dict[str, Source] = {
    source.name: source
    for source in (
        Source("longvideo", "longvideo", _longvideo),
        Source("shortvideo", "shortvideo", _shortvideo),
        Source("microblog", "iab", _microblog),
        Source("community", "iab", _community),
        Source("news", "iab", _news),
    )
}
DEFAULT_SOURCES = tuple(SOURCES)


def check_sources(sources: list[str]) -> None:
    errors = [
        {
            "location": "body",
            "path": f"/sources/{index}",
            "rule": "source",
            "message": f"{name!r} is not a discovery source; use one of "
            + ", ".join(DEFAULT_SOURCES),
        }
        for index, name in enumerate(sources)
        if name not in SOURCES
    ]
    if errors:
        raise ApiError(
            "invalid_request",
            errors[0]["message"],
            details={"reason": "unknown_source", "errors": errors},
        )


def specific_categories(taxonomy: Taxonomy, system: str, theme_id: str) -> list[dict[str, str]]:
    """The categories of a system that map to exactly this theme (not broad ones), in order."""
    found = taxonomy.system(system)
    if found is None:
        return []
    return [
        {"system": system, "id": mapping.id, "label": mapping.label}
        for mapping in found.by_id.values()
        if not mapping.broad and mapping.candidates == ((theme_id, 1.0),)
    ]


def _unique(items: list[str], *, fold: bool = False) -> list[str]:
    seen: dict[str, str] = {}
    for item in items:
        seen.setdefault(item.casefold() if fold else item, item)
    return list(seen.values())


def settle(channel: dict[str, Any], body: dict[str, Any], taxonomy: Taxonomy) -> dict[str, Any]:
    """The configuration a plan request asks for, every default applied; checks first.

    Answers ``niche``, ``themeIds``, ``keywords``, ``sources`` and ``cadenceHours``.
    """
    if "themeIds" in body:
        check_theme_ids(
            [(f"/themeIds/{i}", theme_id) for i, theme_id in enumerate(body["themeIds"])],
            location="body",
            taxonomy=taxonomy,
        )
    sources = list(body.get("sources") or DEFAULT_SOURCES)  # unique: the contract says so
    check_sources(sources)
    candidates = (body.get("niche"), channel.get("niche"), channel.get("name"), channel["id"])
    niche = next(text.strip() for text in candidates if isinstance(text, str) and text.strip())
    sent_keywords = _unique([k.strip() for k in body.get("keywords", []) if k.strip()], fold=True)
    if "themeIds" in body:
        theme_ids = _unique(body["themeIds"])
    else:
        request: dict[str, Any] = {"niche": niche}
        if sent_keywords:
            request["hashtags"] = sent_keywords
        result = classify(request, taxonomy)["result"]
        theme_ids = [] if result["needsReview"] else [result["themeId"]]
    keywords = sent_keywords or derived_keywords(niche, theme_ids, taxonomy)
    return {
        "niche": niche,
        "themeIds": theme_ids,
        "keywords": keywords,
        "sources": sources,
        "cadenceHours": body["cadenceHours"],
    }


def derived_keywords(niche: str, theme_ids: list[str], taxonomy: Taxonomy) -> list[str]:
    keywords = {niche.casefold(): niche.lower()}
    for theme_id in theme_ids:
        theme = taxonomy.theme(theme_id)
        assert theme is not None
        fresh = [k for k in theme["keywords"] if k.casefold() not in keywords]
        keywords.update((k.casefold(), k) for k in fresh[:KEYWORDS_PER_THEME])
    return list(keywords.values())[:DERIVED_KEYWORDS]


def queries(settled: dict[str, Any], taxonomy: Taxonomy) -> list[dict[str, str]]:
    """One query per source of a settled configuration."""
    niche = settled["niche"]
    terms = [k for k in settled["keywords"] if k.casefold() != niche.casefold()][:QUERY_TERMS]
    compiled = []
    for name in settled["sources"]:
        source = SOURCES[name]
        ids = [
            category["id"]
            for theme_id in settled["themeIds"]
            for category in specific_categories(taxonomy, source.system, theme_id)[:1]
        ]
        compiled.append({"source": name, "query": source.query(niche, terms, ids)})
    return compiled
