"""The reference video catalogue, per domain (``GET /v1/video/catalog/{domain}``).

- Read from the top-level fixture section ``catalog`` (``fixtures/catalog.yaml``,
  ``domains.<domain>``: a list of videos), deployment-wide; it is shared with the generation
  area, which reads the same entries to know sample videos' lengths.
- An unknown domain answers ``404 not_found`` (inferred, as the contract says).
- Paged with the platform's cursor in catalogue order: each video's paging position is its place
  in its domain's list, so positions never move. A cursor is bound to its domain (another
  domain's cursor answers ``400 invalid_request``).
- The deprecated ``offset`` skips that many videos and still answers ``nextCursor`` to go on
  with. When ``cursor`` is also sent, the cursor wins and ``offset`` is ignored entirely: it is
  left out of the query the cursor is bound to, so sending or changing it beside a cursor is
  never refused.
"""

from __future__ import annotations

from typing import Any

from mockserver.platform.errors import not_found
from mockserver.world import World

VIDEO_FIELDS = ("id", "title", "url", "durationSeconds", "themeId")


def domains(world: World) -> dict[str, list[dict[str, Any]]]:
    return world.fixture("catalog", {}).get("domains") or {}


def records(world: World, domain: str) -> list[dict[str, Any]]:
    """The domain's videos as pageable records (``_seq`` = position), or ``404``."""
    videos = domains(world).get(domain)
    if videos is None:
        raise not_found(f"video catalogue domain {domain!r}")
    return [{"_seq": n, "_domain": domain, **video} for n, video in enumerate(videos, start=1)]


def view(record: dict[str, Any]) -> dict[str, Any]:
    video = {"id": record["id"], "domain": record["_domain"]}
    video.update({field: record.get(field) for field in VIDEO_FIELDS[1:]})
    return video
