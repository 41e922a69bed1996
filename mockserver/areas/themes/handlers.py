"""Themes: classify content, list and read the canonical taxonomy, build niche profiles.

- Everything here is free and deployment-wide: the taxonomy (``fixtures/taxonomy.yaml``,
  version 2026.11) is the same for every workspace, and no call is charged or recorded as usage.
- ``POST /v1/themes/classify`` and ``POST /v1/themes/niche-profile`` only compute (registered
  with ``writes=False``), so viewer keys may call them; the same body always gives the same
  answer (the rules are in ``classifier.py`` and ``niche.py``).
- ``GET /v1/themes`` pages the canonical themes in taxonomy order with the platform's cursor; each
  theme keeps a stable paging position (its place in the taxonomy), and the page carries
  ``taxonomyVersion``.
- ``GET /v1/themes/{themeId}`` answers ``404 not_found`` for an unknown id, and for
  ``needs-review``: the classifier's fallback is not a canonical theme (inferred).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from mockserver.areas.themes.classifier import classify
from mockserver.areas.themes.niche import build_niche_profile
from mockserver.areas.themes.taxonomy import Taxonomy, default_taxonomy
from mockserver.call import Call
from mockserver.platform.errors import not_found
from mockserver.registry import handler


def taxonomy() -> Taxonomy:
    return default_taxonomy()


@cache
def theme_records(source: Taxonomy) -> tuple[dict[str, Any], ...]:
    """The canonical themes as pageable records: ``_seq`` is the position in taxonomy order."""
    return tuple({"_seq": n, "id": t["id"]} for n, t in enumerate(source.theme_list, start=1))


def theme_or_404(theme_id: str) -> dict[str, Any]:
    theme = taxonomy().theme(theme_id)
    if theme is None:
        raise not_found(f"theme {theme_id!r}")
    return theme


@handler("classifyThemes", writes=False)
def classify_themes(call: Call) -> dict[str, Any]:
    return classify(call.body, taxonomy())


@handler("listThemes")
def list_themes(call: Call) -> dict[str, Any]:
    source = taxonomy()

    def view(record: dict[str, Any]) -> dict[str, Any]:
        theme = source.theme(record["id"])
        assert theme is not None
        return source.theme_view(theme)

    page = call.page("themes", theme_records(source), view=view)
    return {**page, "taxonomyVersion": source.version}


@handler("getTheme")
def get_theme(call: Call) -> dict[str, Any]:
    return {"theme": taxonomy().theme_view(theme_or_404(call.path["themeId"]))}


@handler("buildNicheProfile", writes=False)
def niche_profile(call: Call) -> dict[str, Any]:
    return {"profile": build_niche_profile(call.body, taxonomy())}
