"""The canonical theme taxonomy, read once from ``fixtures/taxonomy.yaml``.

The fixture holds the taxonomy ``version``, the canonical ``themes`` (in taxonomy order, which
also breaks every tie in the classifier), the needs-review ``fallback`` pseudo-theme and the
``mappings`` from category systems (IAB and platforms' own) to themes. A mapping entry names one
``theme`` (specific evidence) or weighted ``candidates`` (a broad category, weak evidence).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from mockserver.platform import yamlload
from mockserver.resources import fixtures_dir

THEME_VIEW_FIELDS = ("id", "name", "parentId", "description")
ECONOMICS_FIELDS = ("cpmUsd", "rpmUsd", "affiliateFit", "competition")


def default_taxonomy_path() -> Path:
    """Path of the bundled taxonomy, ``fixtures/taxonomy.yaml``."""
    return fixtures_dir() / "taxonomy.yaml"


def normalise_label(text: str) -> str:
    """A label as compared: lowercase, ``&`` read as ``and``, punctuation as space."""
    words = re.findall(r"[^\W_]+", text.lower().replace("&", " and "))
    return " ".join(words)


@dataclass(frozen=True)
class CategoryMapping:
    """One category of a category system and the themes it is evidence for."""

    system: str
    id: str
    label: str
    candidates: tuple[tuple[str, float], ...]  # (theme id, weight 0..1), in fixture order
    broad: bool  # weighted candidates rather than one theme: never decides alone


@dataclass(frozen=True)
class CategorySystem:
    """A category system (``iab``, ``longvideo``, ...) with its lookups by id and by label."""

    name: str
    method: str  # the Classification method its evidence yields
    by_id: dict[str, CategoryMapping]
    by_label: dict[str, CategoryMapping]

    def lookup(self, category_id: str, label: str) -> CategoryMapping | None:
        """The mapping of a category: by id first, then by case-insensitive label."""
        found = self.by_id.get(category_id.strip().lower())
        if found is None and label.strip():
            found = self.by_label.get(normalise_label(label))
        return found


@dataclass(frozen=True, eq=False)
class Taxonomy:
    """The loaded taxonomy. Read-only: callers must not mutate the dicts it hands out."""

    version: str
    theme_list: tuple[dict[str, Any], ...]
    fallback: dict[str, Any]
    systems: dict[str, CategorySystem]
    index: dict[str, int]  # theme id -> position in taxonomy order

    @classmethod
    def load(cls, path: Path | None = None) -> Taxonomy:
        """Read and check a taxonomy file (default: the bundled ``fixtures/taxonomy.yaml``)."""
        return cls.from_document(yamlload.load(path or default_taxonomy_path()))

    @classmethod
    def from_document(cls, document: dict[str, Any]) -> Taxonomy:
        """Build a taxonomy from the parsed YAML document."""
        themes = tuple(document["themes"])
        index = {theme["id"]: position for position, theme in enumerate(themes)}
        systems = {
            name: _category_system(name, spec) for name, spec in document["mappings"].items()
        }
        taxonomy = cls(str(document["version"]), themes, document["fallback"], systems, index)
        _check(taxonomy)
        return taxonomy

    def theme(self, theme_id: str) -> dict[str, Any] | None:
        """The canonical theme with this id, or None."""
        position = self.index.get(theme_id)
        return None if position is None else self.theme_list[position]

    def themes(self) -> list[dict[str, Any]]:
        """All canonical themes, in taxonomy order."""
        return list(self.theme_list)

    def system(self, name: str) -> CategorySystem | None:
        """A category system by its name, compared case-insensitively."""
        return self.systems.get(name.strip().lower())

    def theme_view(self, theme: dict[str, Any]) -> dict[str, Any]:
        """The contract's ``Theme`` object for a canonical theme (a fresh dict)."""
        view = {field: theme.get(field) for field in THEME_VIEW_FIELDS}
        view["economics"] = economics_view(theme)
        view["riskPrior"] = theme["riskPrior"]
        view["taxonomyVersion"] = self.version
        view["keywords"] = list(theme["keywords"])
        return view


def economics_view(theme: dict[str, Any]) -> dict[str, Any]:
    """The contract's ``ThemeEconomics`` object of a canonical theme (a fresh dict)."""
    return {field: theme["economics"][field] for field in ECONOMICS_FIELDS}


@lru_cache(maxsize=1)
def default_taxonomy() -> Taxonomy:
    """The bundled taxonomy, loaded once."""
    return Taxonomy.load()


def _category_system(name: str, spec: dict[str, Any]) -> CategorySystem:
    by_id: dict[str, CategoryMapping] = {}
    by_label: dict[str, CategoryMapping] = {}
    for entry in spec["categories"]:
        mapping = _category_mapping(name, entry)
        by_id.setdefault(mapping.id.strip().lower(), mapping)
        by_label.setdefault(normalise_label(mapping.label), mapping)
    return CategorySystem(name.lower(), spec["method"], by_id, by_label)


def _category_mapping(system: str, entry: dict[str, Any]) -> CategoryMapping:
    if "theme" in entry:
        candidates: tuple[tuple[str, float], ...] = ((entry["theme"], 1.0),)
        broad = False
    else:
        candidates = tuple((c["theme"], float(c["weight"])) for c in entry["candidates"])
        broad = True
    return CategoryMapping(system, str(entry["id"]), str(entry["label"]), candidates, broad)


def _check(taxonomy: Taxonomy) -> None:
    """Refuse a taxonomy whose references do not resolve."""
    if len(taxonomy.index) != len(taxonomy.theme_list):
        raise ValueError("taxonomy: duplicate theme ids")
    if taxonomy.fallback["id"] in taxonomy.index:
        raise ValueError("taxonomy: the fallback id is also a canonical theme")
    for theme in taxonomy.theme_list:
        parent = theme.get("parentId")
        if parent is not None and parent not in taxonomy.index:
            raise ValueError(f"taxonomy: {theme['id']} has unknown parent {parent}")
    for system in taxonomy.systems.values():
        for mapping in system.by_id.values():
            for theme_id, _ in mapping.candidates:
                if theme_id not in taxonomy.index:
                    raise ValueError(f"taxonomy: {system.name} {mapping.id} maps to {theme_id}")
