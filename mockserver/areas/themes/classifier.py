"""Deterministic, explainable theme classification: no model, no randomness, free.

Rules (the constants below hold every weight and threshold):

1. Category evidence. Each ``sourceCategories`` entry is looked up in the taxonomy's mappings:
   its ``system`` case-insensitively, then its ``id``, then (when the id is unknown) its
   case-insensitive ``label``. A specific category adds ``CATEGORY_WEIGHTS[method]`` to its
   theme (method ``iab-label`` for the ``iab`` system, ``platform-category`` for a platform's);
   a broad category (weighted candidates) adds that weight times each candidate's weight, and is
   marked broad. The same category sent twice counts once. Unknown systems, ids and labels add
   nothing and are reported in the result's reasons as ignored.
2. Keyword evidence (method ``keyword-rules``). ``niche``, ``hashtags``, ``title`` and
   ``description`` are normalised: lowercase, ``#`` stripped, camelCase hashtags split
   (``#PersonalFinance``), words split on anything not a letter or digit (``-``, ``_``, spaces),
   simple plural stemming (``recipes`` -> ``recipe``, ``stories`` -> ``story``). A theme keyword,
   normalised the same way, matches when its words occur consecutively in a field, or when a
   hashtag written as one word equals the keyword without spaces (``#stockmarket``); the
   longest match wins (``mental health`` does not also count ``health``). Each distinct
   keyword counts once per field (a hashtag reason names the alphabetically first hashtag):
   ``FIELD_WEIGHTS[field]``, times ``PHRASE_BONUS`` for a multi-word keyword, divided by the
   number of themes sharing the keyword. One field's total for one theme is capped at
   ``FIELD_CAP_MATCHES`` times the field's weight.
3. A theme's own score is the exact sum (``math.fsum``, so order never matters) of its
   evidence. A parent is not a rival of its child: a theme with evidence of its own also gets
   ``PARENT_SUPPORT`` times the own score of each ancestor with evidence (``sports`` category
   plus ``#nba`` is basketball). Candidates are ranked by score, ties broken by taxonomy
   order. A candidate's method is the method whose own evidence contributed most to it (ties:
   iab-label, platform-category, keyword-rules).
4. Confidence = strength x (1/2 + lead/2), where strength = 1 - exp(-score / CONFIDENCE_SCALE)
   and lead = (score - best other score) / score, 0 for a theme that does not lead; rounded to
   ``CONFIDENCE_DIGITS`` places.
5. The leader is answered unless the evidence is weak, in which case the answer is the fallback
   (``needs-review``, method ``fallback``, ``needsReview`` true, ``economics`` null, confidence
   = the leader's, or 0 without evidence), with reasons saying why and naming the best
   candidates. Weak means: no evidence at all; the leader rests only on broad categories; the
   runner-up scores at least ``NEAR_TIE_RATIO`` of the leader; or the confidence is under
   ``MIN_CONFIDENCE``. ``alternatives`` are the next ``MAX_ALTERNATIVES`` candidates (the best
   ones when the answer is the fallback).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from mockserver.areas.themes.taxonomy import CategoryMapping, Taxonomy, economics_view

CATEGORY_WEIGHTS = {"iab-label": 1.0, "platform-category": 0.9}
FIELD_WEIGHTS = {"niche": 1.0, "hashtag": 0.6, "title": 0.5, "description": 0.3}
PHRASE_BONUS = 1.25
FIELD_CAP_MATCHES = 3.0
CONFIDENCE_SCALE = 1.2
CONFIDENCE_DIGITS = 4
MIN_CONFIDENCE = 0.45
NEAR_TIE_RATIO = 0.8
PARENT_SUPPORT = 0.5
MAX_ALTERNATIVES = 2
METHOD_ORDER = ("iab-label", "platform-category", "keyword-rules")
KEYWORD_METHOD = "keyword-rules"
FALLBACK_METHOD = "fallback"
TEXT_FIELDS = ("niche", "title", "description")

UNSTEMMED_WORDS = frozenset({"news", "series", "species", "always", "perhaps"})
UNSTEMMED_ENDINGS = ("ss", "us", "is", "ics", "ous")

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+")


# Normalisation ---------------------------------------------------------------------------------


def stem(word: str) -> str:
    """Simple plural stemming; ``-ie`` endings fold with ``-ies`` (``cookie``, ``cookies``)."""
    if len(word) <= 3 or not word.isalpha() or word in UNSTEMMED_WORDS:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("ie"):
        return word[:-2] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(UNSTEMMED_ENDINGS):
        return word[:-1]
    return word


def tokens(text: str) -> list[str]:
    """Lowercase, stemmed words of a text."""
    return [stem(word) for word in _WORD.findall(text.lower())]


def hashtag_tokens(hashtag: str) -> list[str]:
    """Words of a hashtag: ``#`` stripped, camelCase split, then as :func:`tokens`."""
    return tokens(_CAMEL_BOUNDARY.sub(" ", hashtag.strip().lstrip("#")))


def hashtag_joined(hashtag: str) -> str:
    """A hashtag as one stemmed word (``#Stock_Markets`` -> ``stockmarket``)."""
    return stem("".join(_WORD.findall(hashtag.lower())))


# Compiled keyword rules ------------------------------------------------------------------------


@dataclass(frozen=True)
class KeywordRule:
    """One keyword, normalised, and the themes listing it (in taxonomy order).

    Spellings that differ only by spacing (``skincare``, ``skin care``) are one rule, its
    ``forms``; ``joined`` is the keyword written as one word.
    """

    order: int
    keyword: str
    joined: str
    forms: tuple[tuple[str, ...], ...]
    themes: tuple[str, ...]

    @property
    def phrase(self) -> bool:
        """True for a multi-word keyword (every spelling has several words)."""
        return all(len(form) > 1 for form in self.forms)


@dataclass(frozen=True)
class KeywordRules:
    """All keyword rules, indexed by first word and by the keyword written as one word."""

    by_first: dict[str, tuple[KeywordRule, ...]]
    by_joined: dict[str, tuple[KeywordRule, ...]]


@lru_cache(maxsize=8)
def keyword_rules(taxonomy: Taxonomy) -> KeywordRules:
    """The taxonomy's keywords compiled into rules (once per taxonomy)."""
    spelling: dict[str, str] = {}
    forms: dict[str, list[tuple[str, ...]]] = {}
    owners: dict[str, list[str]] = {}
    for theme in taxonomy.theme_list:
        for keyword in theme["keywords"]:
            form = tuple(tokens(keyword))
            if not form:
                continue
            joined = "".join(form)
            spelling.setdefault(joined, keyword)
            _append_new(forms.setdefault(joined, []), form)
            _append_new(owners.setdefault(joined, []), theme["id"])
    rules = [
        KeywordRule(order, spelling[joined], joined, tuple(forms[joined]), tuple(owners[joined]))
        for order, joined in enumerate(spelling)
    ]
    by_first: dict[str, list[KeywordRule]] = {}
    for rule in rules:
        for first in dict.fromkeys(form[0] for form in rule.forms):
            by_first.setdefault(first, []).append(rule)
    return KeywordRules(
        {first: tuple(members) for first, members in by_first.items()},
        {rule.joined: (rule,) for rule in rules},
    )


def _append_new(items: list[Any], item: Any) -> None:
    if item not in items:
        items.append(item)


def match_words(words: list[str], rules: KeywordRules) -> list[KeywordRule]:
    """Rules whose keyword occurs as consecutive words, in rule order.

    The longest match wins: an occurrence inside a longer keyword's occurrence (``health``
    inside ``mental health``) does not count.
    """
    spans: list[tuple[int, int, KeywordRule]] = []
    for position, word in enumerate(words):
        for rule in rules.by_first.get(word, ()):
            for form in rule.forms:
                if tuple(words[position : position + len(form)]) == form:
                    spans.append((position, position + len(form), rule))
    found = {
        rule.order: rule
        for start, end, rule in spans
        if not any(s <= start and end <= e and e - s > end - start for s, e, _ in spans)
    }
    return [found[order] for order in sorted(found)]


def match_hashtag(hashtag: str, rules: KeywordRules) -> list[KeywordRule]:
    """Rules a hashtag matches, split into words or written as one word, in rule order."""
    found = {rule.order: rule for rule in match_words(hashtag_tokens(hashtag), rules)}
    for rule in rules.by_joined.get(hashtag_joined(hashtag), ()):
        found[rule.order] = rule
    return [found[order] for order in sorted(found)]


# Evidence --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence for one theme."""

    theme_id: str
    method: str
    source: str  # "category", "parent", or a keyword field: niche, hashtag, title, description
    weight: float
    broad: bool
    reason: str
    keyword: str | None = None


def collect_evidence(
    request: dict[str, Any], taxonomy: Taxonomy
) -> tuple[list[Evidence], list[str]]:
    """All evidence in a classify request, and the reasons for inputs that were ignored."""
    evidence, ignored = category_evidence(request.get("sourceCategories"), taxonomy)
    rules = keyword_rules(taxonomy)
    for field in TEXT_FIELDS:
        text = request.get(field)
        if isinstance(text, str):
            for rule in match_words(tokens(text), rules):
                evidence.extend(_keyword_evidence(rule, field, f"{field} matches"))
    evidence.extend(hashtag_evidence(request.get("hashtags"), rules))
    return evidence, ignored


def category_evidence(categories: Any, taxonomy: Taxonomy) -> tuple[list[Evidence], list[str]]:
    """Evidence from ``sourceCategories`` (each category once), and reasons for ignored ones."""
    found: dict[tuple[str, str], tuple[str, CategoryMapping]] = {}
    ignored: set[str] = set()
    for category in categories if isinstance(categories, list) else []:
        if not isinstance(category, dict):
            continue
        system_name = _text(category.get("system"))
        category_id, label = _text(category.get("id")), _text(category.get("label"))
        system = taxonomy.system(system_name)
        if system is None:
            ignored.add(f"ignored category system '{system_name}': not in the taxonomy mappings")
            continue
        mapping = system.lookup(category_id, label)
        if mapping is None:
            ignored.add(f"ignored {system.name} category '{category_id}' '{label}': not mapped")
            continue
        found[(system.name, mapping.id)] = (system.method, mapping)
    evidence: list[Evidence] = []
    for key in sorted(found):
        method, mapping = found[key]
        evidence.extend(_mapping_evidence(method, mapping))
        if not mapping.candidates:
            ignored.add(f"{_category_name(mapping)} carries no theme evidence")
    return evidence, sorted(ignored)


def _mapping_evidence(method: str, mapping: CategoryMapping) -> list[Evidence]:
    name = _category_name(mapping)
    weight = CATEGORY_WEIGHTS[method]
    evidence = []
    for theme_id, share in mapping.candidates:
        if mapping.broad:
            reason = f"{name} is a broad category: weak evidence ({share:g}) for {theme_id}"
        else:
            reason = f"{name} maps to {theme_id}"
        evidence.append(
            Evidence(theme_id, method, "category", weight * share, mapping.broad, reason)
        )
    return evidence


def hashtag_evidence(hashtags: Any, rules: KeywordRules) -> list[Evidence]:
    """Evidence from hashtags: each keyword once, credited to the alphabetically first hashtag."""
    credited: dict[int, tuple[KeywordRule, str]] = {}
    for hashtag in hashtags if isinstance(hashtags, list) else []:
        if not isinstance(hashtag, str) or not hashtag.strip().lstrip("#"):
            continue
        shown = "#" + hashtag.strip().lstrip("#")
        for rule in match_hashtag(hashtag, rules):
            if rule.order not in credited or shown < credited[rule.order][1]:
                credited[rule.order] = (rule, shown)
    evidence: list[Evidence] = []
    for order in sorted(credited):
        rule, shown = credited[order]
        evidence.extend(_keyword_evidence(rule, "hashtag", f"hashtag {shown} matches"))
    return evidence


def _keyword_evidence(rule: KeywordRule, field: str, prefix: str) -> list[Evidence]:
    weight = FIELD_WEIGHTS[field] * (PHRASE_BONUS if rule.phrase else 1.0)
    weight /= len(rule.themes)
    shared = f" (shared by {len(rule.themes)} themes)" if len(rule.themes) > 1 else ""
    reason = f"{prefix} keyword '{rule.keyword}'{shared}"
    return [
        Evidence(theme_id, KEYWORD_METHOD, field, weight, False, reason, rule.keyword)
        for theme_id in rule.themes
    ]


def _category_name(mapping: CategoryMapping) -> str:
    return f"{mapping.system} {mapping.id} '{mapping.label}'"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


# Scoring ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """A theme with evidence: its score, dominant method and evidence, strongest first."""

    theme_id: str
    score: float
    method: str
    broad_only: bool
    evidence: tuple[Evidence, ...]


def rank(evidence: list[Evidence], taxonomy: Taxonomy) -> list[Candidate]:
    """Candidates by descending score, ties by taxonomy order; only themes scoring above 0."""
    grouped: dict[str, list[Evidence]] = {}
    for item in evidence:
        grouped.setdefault(item.theme_id, []).append(item)
    own = {theme_id: candidate(theme_id, items) for theme_id, items in grouped.items()}
    own = {theme_id: c for theme_id, c in own.items() if c.score > 0}
    candidates = [
        candidate(theme_id, grouped[theme_id] + parent_support(theme_id, own, taxonomy))
        for theme_id in own
    ]
    return sorted(candidates, key=lambda c: (-c.score, taxonomy.index[c.theme_id]))


def parent_support(theme_id: str, own: dict[str, Candidate], taxonomy: Taxonomy) -> list[Evidence]:
    """Evidence a theme draws from its ancestors' own scores (rule 3)."""
    support = []
    for ancestor in ancestors(theme_id, taxonomy):
        if ancestor in own:
            score = own[ancestor].score
            reason = f"parent theme {ancestor} ({score:.2f}) supports {theme_id}"
            support.append(
                Evidence(
                    theme_id, own[ancestor].method, "parent", PARENT_SUPPORT * score, True, reason
                )
            )
    return support


def ancestors(theme_id: str, taxonomy: Taxonomy) -> list[str]:
    """Parent, grandparent, ... of a theme."""
    chain: list[str] = []
    theme = taxonomy.theme(theme_id)
    while theme is not None and theme.get("parentId") and theme["parentId"] not in chain:
        chain.append(theme["parentId"])
        theme = taxonomy.theme(theme["parentId"])
    return chain


def candidate(theme_id: str, items: list[Evidence]) -> Candidate:
    """Score one theme's evidence (rules 2 and 3); parent support adds score, not method."""
    own = [e for e in items if e.source != "parent"]
    totals = method_totals(own)
    support = [e.weight for e in items if e.source == "parent"]
    score = math.fsum([*totals.values(), *support])
    method = max(METHOD_ORDER, key=lambda m: (totals[m], -METHOD_ORDER.index(m)))
    ordered = tuple(sorted(items, key=lambda e: (-e.weight, e.reason)))
    return Candidate(theme_id, score, method, all(e.broad for e in own), ordered)


def method_totals(items: list[Evidence]) -> dict[str, float]:
    """Contribution of each method; keyword fields capped per field."""
    totals = {method: 0.0 for method in METHOD_ORDER}
    for method in CATEGORY_WEIGHTS:
        totals[method] = math.fsum(e.weight for e in items if e.method == method)
    field_totals = [
        min(
            math.fsum(e.weight for e in items if e.source == field),
            FIELD_CAP_MATCHES * weight,
        )
        for field, weight in FIELD_WEIGHTS.items()
    ]
    totals[KEYWORD_METHOD] = math.fsum(field_totals)
    return totals


def confidence(score: float, best_other: float) -> float:
    """Rule 4: strength of the score, discounted unless it clearly leads."""
    if score <= 0:
        return 0.0
    strength = 1.0 - math.exp(-score / CONFIDENCE_SCALE)
    lead = max(0.0, (score - best_other) / score)
    return round(strength * (0.5 + 0.5 * lead), CONFIDENCE_DIGITS)


def confidences(ranked: list[Candidate]) -> list[float]:
    """Confidence of each ranked candidate against the best other candidate."""
    result = []
    for position, item in enumerate(ranked):
        others = [c.score for i, c in enumerate(ranked) if i != position]
        result.append(confidence(item.score, max(others, default=0.0)))
    return result


def weakness(ranked: list[Candidate], leader_confidence: float) -> str | None:
    """Rule 5: why the evidence is too weak to answer the leader, or None when it is not."""
    if not ranked:
        return "evidence is weak: no category mapping or keyword rule matched"
    leader = ranked[0]
    if leader.broad_only:
        return (
            f"evidence is weak: {leader.theme_id} rests only on broad categories, "
            "which never decide alone"
        )
    if len(ranked) > 1 and ranked[1].score >= NEAR_TIE_RATIO * leader.score:
        return (
            f"evidence is contradictory: {leader.theme_id} ({leader.score:.2f}) and "
            f"{ranked[1].theme_id} ({ranked[1].score:.2f}) are nearly tied"
        )
    if leader_confidence < MIN_CONFIDENCE:
        return (
            f"evidence is weak: confidence {leader_confidence:g} for {leader.theme_id} is under "
            f"the threshold {MIN_CONFIDENCE:g}"
        )
    return None


# Answer ----------------------------------------------------------------------------------------


def classify(request: dict[str, Any], taxonomy: Taxonomy) -> dict[str, Any]:
    """The contract's ``ClassifyResponse`` for a ``ClassifyRequest``: result and alternatives."""
    evidence, ignored = collect_evidence(request, taxonomy)
    ranked = rank(evidence, taxonomy)
    scores = confidences(ranked)
    leader_confidence = scores[0] if scores else 0.0
    why = weakness(ranked, leader_confidence)
    if why is None:
        result = classification(ranked[0], leader_confidence, taxonomy, ignored)
        rest = range(1, 1 + MAX_ALTERNATIVES)
    else:
        result = fallback(why, ranked, leader_confidence, taxonomy, ignored)
        rest = range(MAX_ALTERNATIVES)
    alternatives = [
        classification(ranked[i], scores[i], taxonomy, []) for i in rest if i < len(ranked)
    ]
    return {"result": result, "alternatives": alternatives}


def classification(
    item: Candidate, score: float, taxonomy: Taxonomy, extra_reasons: list[str]
) -> dict[str, Any]:
    """The contract's ``Classification`` of a canonical theme candidate."""
    theme = taxonomy.theme(item.theme_id)
    assert theme is not None
    return {
        "themeId": theme["id"],
        "themeName": theme["name"],
        "confidence": score,
        "method": item.method,
        "reasons": _unique([e.reason for e in item.evidence] + extra_reasons),
        "taxonomyVersion": taxonomy.version,
        "economics": economics_view(theme),
        "needsReview": False,
    }


def fallback(
    why: str,
    ranked: list[Candidate],
    leader_confidence: float,
    taxonomy: Taxonomy,
    ignored: list[str],
) -> dict[str, Any]:
    """The contract's ``Classification`` of the needs-review fallback."""
    reasons = [why]
    if ranked:
        best = ", ".join(f"{c.theme_id} ({c.score:.2f})" for c in ranked[: 1 + MAX_ALTERNATIVES])
        reasons.append(f"best candidates: {best}")
        reasons.extend(e.reason for e in ranked[0].evidence)
    return {
        "themeId": taxonomy.fallback["id"],
        "themeName": taxonomy.fallback["name"],
        "confidence": leader_confidence,
        "method": FALLBACK_METHOD,
        "reasons": _unique(reasons + ignored),
        "taxonomyVersion": taxonomy.version,
        "economics": None,
        "needsReview": True,
    }


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
