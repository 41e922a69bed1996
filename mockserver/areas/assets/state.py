"""Imported media assets: import (paid, with a media-analysis job), list, transcript.

The rules, in one place:

- Import requires ``Idempotency-Key`` (the contract: else ``400 invalid_request``, before any
  charge). ``url`` is fetched by the service, so it is held to the fetch rules
  (callbacks.check_fetch_url: HTTPS, no literal private address; ``400``); then ``media-analysis``
  must be available (``503 capability_unavailable``, checked before the project, credits.py); a
  ``projectId`` that is not the workspace's answers ``404 not_found``. Then one ``media-analysis``
  charge (402/403 from credits.py, nothing created) and, in the same step, the asset (``status:
  analysing``) and its ``media-analysis`` job, whose events reach webhook subscriptions through the
  jobs engine. A retry with the same key replays the first answer: one asset, one charge.
- The asset's status follows its job on the mock clock: ``ready`` when the job is ``done``
  (with ``durationSeconds``), ``failed`` when it failed, was blocked or was cancelled. A ticker
  brings stored assets up to date after the jobs ticker, and every read syncs the asset it
  shows, so a read never disagrees with ``GET /v1/jobs/{jobId}``.
- Inferred: ``title`` defaults to the url's file name; ``mediaType`` comes from the file
  extension (audio, image, else video); the duration and the transcript are derived
  deterministically from the url (audio and video only; an image has neither).
- Transcript: ``after`` = segments already read (default 0), ``limit`` segments a page,
  ``nextAfter`` null at the end. Before analysis finishes (or when it failed) there are no
  segments yet: ``segmentCount`` 0.
- List: oldest first, ``cursor``/``nextCursor`` and the deprecated ``after``/``nextAfter``
  (review/paging.py: the cursor wins when both are sent).
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from mockserver.areas.jobs import engine
from mockserver.call import Call
from mockserver.platform.envelope import public
from mockserver.platform.errors import not_found
from mockserver.platform.scheduler import ticker
from mockserver.runtime import Runtime
from mockserver.world import World

COLLECTION = "assets"
CAPABILITY = "media-analysis"
AUDIO = frozenset({".mp3", ".wav", ".m4a", ".aac", ".flac", ".ogg", ".opus"})
IMAGE = frozenset({".jpg", ".jpeg", ".png", ".gif", ".webp", ".heic"})
SEGMENT_SECONDS = 6.0
DEFAULT_TITLE = "Imported asset"
PHRASES = (
    "so the idea here is simple",
    "let me show you what I mean",
    "this is the part people usually skip",
    "and that changes the whole result",
    "we tried it three different ways",
    "here is what actually worked",
    "take a look at the numbers",
    "the second take was better",
    "keep that in mind for later",
    "and that is where it gets interesting",
)


def _hash(*parts: object) -> int:
    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:12], 16)


def media_type(url: str) -> str:
    suffix = PurePosixPath(urlsplit(url).path).suffix.lower()
    return "audio" if suffix in AUDIO else "image" if suffix in IMAGE else "video"


def default_title(url: str) -> str:
    name = unquote(PurePosixPath(urlsplit(url).path).name).strip()
    return (name or DEFAULT_TITLE)[:200]


def derived_duration(url: str, kind: str) -> float | None:
    """How long an analysed asset plays (deterministic from its url); None for an image."""
    if kind == "image":
        return None
    return float(30 + _hash(url, "duration") % 571)


def get_asset(call: Call, asset_id: str) -> dict[str, Any]:
    asset = call.world.get(call.workspace_id, COLLECTION, asset_id)
    if asset is None:
        raise not_found(f"asset {asset_id!r}")
    return sync(call.world, call.workspace_id, asset)


def view(asset: dict[str, Any]) -> dict[str, Any]:
    return public(asset)


def create(
    call: Call, asset_id: str, body: dict[str, Any], project_id: str | None, job_id: str
) -> dict[str, Any]:
    url = body["url"]
    return call.world.insert(
        call.workspace_id,
        COLLECTION,
        {
            "id": asset_id,
            "title": body.get("title") or default_title(url),
            "sourceUrl": url,
            "mediaType": media_type(url),
            "status": "analysing",
            "analysisJobId": job_id,
            "durationSeconds": None,
            "projectId": project_id,
            "createdAt": call.now_iso,
            "updatedAt": call.now_iso,
        },
    )


def sync(world: World, workspace_id: str, asset: dict[str, Any]) -> dict[str, Any]:
    """Bring an analysing asset up to its job's state (ready or failed once it ends)."""
    if asset["status"] != "analysing" or not asset.get("analysisJobId"):
        return asset
    job = world.get(workspace_id, "jobs", asset["analysisJobId"])
    if job is None or job["status"] not in engine.TERMINAL:
        return asset
    if job["status"] == "done":
        asset["status"] = "ready"
        asset["durationSeconds"] = derived_duration(asset["sourceUrl"], asset["mediaType"])
    else:
        asset["status"] = "failed"
    asset["updatedAt"] = job["completedAt"] or job["updatedAt"]
    return asset


@ticker("assets")
def tick(rt: Runtime, now: datetime) -> float | None:
    """Assets follow their analysis jobs (runs after the jobs ticker; jobs set the due times)."""
    for workspace_id in rt.world.workspaces:
        for asset in rt.world.records(workspace_id, COLLECTION):
            sync(rt.world, workspace_id, asset)
    return None


# -- transcript -------------------------------------------------------------------------------


def segment_count(asset: dict[str, Any]) -> int:
    duration = asset.get("durationSeconds")
    if asset["status"] != "ready" or not duration:
        return 0
    return max(1, int(-(-duration // SEGMENT_SECONDS)))


def segments(asset: dict[str, Any], start: int, stop: int) -> list[dict[str, Any]]:
    duration = float(asset.get("durationSeconds") or 0.0)
    shown = []
    for index in range(start, min(stop, segment_count(asset))):
        words = [
            PHRASES[_hash(asset["sourceUrl"], index, part) % len(PHRASES)] for part in range(2)
        ]
        shown.append(
            {
                "index": index,
                "start": round(index * SEGMENT_SECONDS, 3),
                "end": round(min((index + 1) * SEGMENT_SECONDS, duration), 3),
                "text": f"{words[0].capitalize()}, {words[1]}.",
            }
        )
    return shown


def transcript_page(call: Call, asset: dict[str, Any]) -> dict[str, Any]:
    total = segment_count(asset)
    start = min(call.query["after"], total)
    page = segments(asset, start, start + call.query["limit"])
    end = start + len(page)
    return {
        "assetId": asset["id"],
        "status": asset["status"],
        "segmentCount": total,
        "segments": page,
        "nextAfter": end if end < total else None,
    }
