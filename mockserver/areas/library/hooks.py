"""Hooks: a bounded sample of opening lines that rotates with the mock clock.

- The pool is the top-level fixture section ``hooks`` (``fixtures/hooks.yaml``: 200 hooks, each
  with ``id``, ``text``, ``pattern``, ``themeId``, ``platform`` and ``views``), deployment-wide.
- The API never searches the whole pool, only the current *sample*: ``SAMPLE_SIZE`` hooks chosen
  deterministically for each ``SAMPLE_SECONDS`` window of the mock clock (a keyed hash of the
  window and each hook id orders the pool; the first ``SAMPLE_SIZE`` are the sample). Within one
  window every answer reads the same sample, so an offset walk done inside the hour is
  consistent; once the clock crosses into the next hour the sample changes (inferred: the
  interface document says only that the sample is bounded and changes).
- The sample is listed most viewed first (ties by id); ``sampledAt`` (on every hook and on the
  page) is the start of the window.
- ``GET /v1/hooks`` filters the sample by ``q`` (case-insensitive substring of the text) and
  ``themeId`` (a canonical theme; any other id answers ``400 invalid_request``), then pages with
  ``offset``/``limit``; ``nextOffset`` is the offset of the next page, null at the end (also
  when ``offset`` is past the end: the page is empty).
- ``GET /v1/hooks/stats`` groups the whole current sample by pattern: ``count``,
  ``medianViews`` and ``share`` (count / sample size, 4 places), most frequent first (ties by
  pattern name), paged the same way.
"""

from __future__ import annotations

import hashlib
import statistics
from datetime import UTC, datetime
from typing import Any

from mockserver.platform.envelope import iso_z
from mockserver.world import World

SAMPLE_SIZE = 60
SAMPLE_SECONDS = 3600
SHARE_DIGITS = 4
HOOK_FIELDS = ("id", "text", "pattern", "themeId", "platform", "views")


def pool(world: World) -> list[dict[str, Any]]:
    return list(world.fixture("hooks") or [])


def window_start(now: datetime) -> datetime:
    epoch = int(now.timestamp()) // SAMPLE_SECONDS * SAMPLE_SECONDS
    return datetime.fromtimestamp(epoch, UTC)


def _rank(window: int, hook_id: str) -> str:
    return hashlib.blake2b(f"hooks:{window}:{hook_id}".encode(), digest_size=8).hexdigest()


def sample(world: World, now: datetime) -> tuple[list[dict[str, Any]], str]:
    """The current sample (most viewed first) and when it was drawn."""
    start = window_start(now)
    window = int(start.timestamp()) // SAMPLE_SECONDS
    drawn = sorted(pool(world), key=lambda hook: _rank(window, hook["id"]))[:SAMPLE_SIZE]
    drawn.sort(key=lambda hook: (-hook["views"], hook["id"]))
    sampled_at = iso_z(start)
    return [view(hook, sampled_at) for hook in drawn], sampled_at


def view(hook: dict[str, Any], sampled_at: str) -> dict[str, Any]:
    shown = {field: hook[field] for field in HOOK_FIELDS if field in hook}
    return {**shown, "sampledAt": sampled_at}


def search(
    hooks: list[dict[str, Any]], q: str | None, theme_id: str | None
) -> list[dict[str, Any]]:
    needle = q.casefold() if q else None
    return [
        hook
        for hook in hooks
        if (needle is None or needle in hook["text"].casefold())
        and (theme_id is None or hook["themeId"] == theme_id)
    ]


def stats(hooks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_pattern: dict[str, list[int]] = {}
    for hook in hooks:
        by_pattern.setdefault(hook["pattern"], []).append(hook["views"])
    rows = [
        {
            "pattern": pattern,
            "count": len(views),
            "medianViews": statistics.median(views),
            "share": round(len(views) / len(hooks), SHARE_DIGITS),
        }
        for pattern, views in by_pattern.items()
    ]
    return sorted(rows, key=lambda row: (-row["count"], row["pattern"]))


def offset_page(items: list[Any], offset: int, limit: int) -> tuple[list[Any], int | None]:
    """A page of items and the next page's offset (null at the end)."""
    end = offset + limit
    return items[offset:end], end if end < len(items) else None
