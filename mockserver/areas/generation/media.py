"""How long a video url is: the mock fetches nothing, so a url's length comes from a rule.

In this order (the fixtures' ``generation.media`` section holds the numbers):

1. a url of the video catalogue (``catalog.domains``, compared exactly) has the catalogue's
   ``durationSeconds``;
2. a url that names its length with a ``duration=N`` query or fragment parameter (whole seconds,
   ``generation.media.lengthHint``) has that length, e.g. ``https://cdn.example.net/a.mp4?duration=181``;
3. any other url has ``min + int(sha256(url)[:8 hex], 16) % (max - min + 1)`` seconds
   (``generation.media.unknownLengthSeconds``): the same url always has the same length, and the
   range reaches past the 180-second remix limit, so unknown urls are refused now and then, as
   real videos would be.
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mockserver.world import World


def settings(world: World) -> dict[str, Any]:
    """The fixtures' ``generation`` section (media lengths, remix limit, footage-edit cuts)."""
    section = world.fixture("generation")
    if not section:
        raise ValueError("the fixtures have no 'generation' section (see fixtures/generation.yaml)")
    return section


def catalogue_lengths(world: World) -> dict[str, int]:
    domains = world.fixture("catalog", {}).get("domains", {})
    return {
        video["url"]: int(video["durationSeconds"])
        for videos in domains.values()
        for video in videos
        if "url" in video and "durationSeconds" in video
    }


def _hinted(url: str, name: str) -> int | None:
    parts = urlsplit(url)
    for text in (parts.query, parts.fragment):
        values = parse_qs(text).get(name)
        if values and values[-1].isdigit():
            return int(values[-1])
    return None


def video_length(world: World, url: str) -> int:
    """The length in seconds of the video at ``url`` (see the module docstring)."""
    known = catalogue_lengths(world).get(url)
    if known is not None:
        return known
    media = settings(world)["media"]
    hinted = _hinted(url, media["lengthHint"])
    if hinted is not None:
        return hinted
    low, high = media["unknownLengthSeconds"]["min"], media["unknownLengthSeconds"]["max"]
    return low + int(hashlib.sha256(url.encode()).hexdigest()[:8], 16) % (high - low + 1)
