"""Theme ids sent by clients (filters, plan bodies) checked against the canonical taxonomy.

The contract types these ids as opaque strings; the taxonomy is the closed set they come from, so
an id outside it answers ``400 invalid_request`` (inferred) with the same field-level
``details.errors`` as a schema failure (rule ``theme``), rather than an empty result that hides a
typo.
"""

from __future__ import annotations

from mockserver.areas.themes.taxonomy import Taxonomy, default_taxonomy
from mockserver.platform.errors import ApiError


def check_theme_ids(
    sent: list[tuple[str, str]],
    *,
    location: str,
    allow_fallback: bool = False,
    taxonomy: Taxonomy | None = None,
) -> None:
    """Refuse every id that is not a canonical theme (nor, when allowed, the fallback).

    ``sent`` holds ``(pointer, theme id)`` pairs, the pointer locating the id in ``location``.
    """
    source = taxonomy or default_taxonomy()
    accepted = {source.fallback["id"]} if allow_fallback else set()
    errors = []
    for pointer, theme_id in sent:
        if source.theme(theme_id) is None and theme_id not in accepted:
            errors.append(
                {
                    "location": location,
                    "path": pointer,
                    "rule": "theme",
                    "message": f"{theme_id!r} is not a canonical theme of taxonomy "
                    f"{source.version} (see GET /v1/themes)",
                }
            )
    if errors:
        raise ApiError(
            "invalid_request",
            errors[0]["message"],
            details={"reason": "unknown_theme", "errors": errors},
        )
