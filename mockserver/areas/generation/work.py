"""What a generation call asks for, checked and priced: one function per operation.

Each ``*_work(call, body, at)`` takes a validated request body (the operation's own, or an agent
run step's arguments with the run's ``projectId``), refuses what the body alone makes
impossible (``400 invalid_request``: an unknown genre, a url the service would not fetch, a remix
url source longer than the limit) and answers the :class:`Work`: the capability items it costs
and what its job keeps. The operation's handler and the agent run call the same function, so a
step is priced exactly as the call itself would be. ``at`` prefixes the ``field`` named in error
details (``steps/2/arguments/`` inside an agent run).

Pricing, from the live capability table (credits.py):

- ``createFilmOutline``: one ``film-outline``; ``renderVideo``: one ``video-render``;
  ``editVideo``: one ``video-edit``; ``createModelFromText`` / ``createModelFromImage``: one
  ``3d-from-text`` / ``3d-from-image``; ``approveVideoEdit`` (:func:`approval_work`,
  ``APPROVAL_ITEMS``): one ``video-render``, for the first approval and for each re-cut alike.
- ``createFootage``: ``footage`` per second of ``durationSeconds``; a price above the call's
  ``maxCredits`` answers ``409 conflict`` (``price_above_max_credits``) and charges nothing.
- ``remixVideo`` (rules.py ``remix_items``, the ``remix_work_items`` seam): with any url
  source, one ``video-analysis`` per url source (transcripts then add nothing); from
  transcripts alone one ``script``, or one ``scene-plan`` when ``outputFormat`` is ``scenes``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mockserver.areas.generation import media, proposals
from mockserver.call import Call
from mockserver.platform import credits
from mockserver.platform.callbacks import check_fetch_url
from mockserver.platform.errors import conflict, invalid_request

Item = tuple[str, int]


@dataclass
class Work:
    items: list[Item]
    max_credits: int | None = None  # the call's own cap (footage), checked against its price
    meta: dict[str, Any] = field(default_factory=dict)


def priced(call: Call, work: Work, at: str = "") -> list[dict[str, Any]]:
    """The work's price lines from the live table (503 when a capability is unavailable); a
    price above the work's own ``maxCredits`` answers ``409 conflict``."""
    lines = credits.quote(call.world, work.items)
    price = credits.total(lines)
    if work.max_credits is not None and price > work.max_credits:
        raise conflict(
            f"the live price, {price} credits, is above maxCredits ({work.max_credits})",
            reason="price_above_max_credits",
            field=f"{at}maxCredits",
            price=price,
            maxCredits=work.max_credits,
        )
    return lines


# -- one function per operation ----------------------------------------------------------------


def film_outline_work(call: Call, body: dict[str, Any], at: str = "") -> Work:
    genres = credits.capability(call.world, "film-outline").get("options", {}).get("genres", [])
    if body["genre"] not in genres:
        raise invalid_request(
            f"{at}genre: {body['genre']!r} is not an accepted genre; GET /v1/capabilities lists "
            "them as the options.genres of film-outline",
            reason="unknown_genre",
            field=f"{at}genre",
            accepted=list(genres),
        )
    return Work([("film-outline", 1)])


def render_work(call: Call, body: dict[str, Any], at: str = "") -> Work:
    keep = ("story", "aspectRatio", "voicePreset")
    return Work([("video-render", 1)], meta={k: body[k] for k in keep if k in body})


def edit_work(call: Call, body: dict[str, Any], at: str = "") -> Work:
    for index, url in enumerate(body["footageUrls"]):
        check_fetch_url(call, url, field=f"{at}footageUrls/{index}")
    proposal = proposals.new_proposal(
        call.world, body["footageUrls"], body.get("targetDurationSeconds")
    )
    meta = {"instructions": body.get("instructions"), "proposal": proposal}
    return Work([("video-edit", 1)], meta=meta)


def footage_work(call: Call, body: dict[str, Any], at: str = "") -> Work:
    seconds = body["durationSeconds"]
    meta = {"prompt": body["prompt"], "durationSeconds": seconds}
    return Work([("footage", seconds)], max_credits=body.get("maxCredits"), meta=meta)


def remix_work(call: Call, body: dict[str, Any], at: str = "") -> Work:
    limit = media.settings(call.world)["remix"]["maxUrlSourceSeconds"]
    urls = []
    for index, source in enumerate(body["sources"]):
        if "url" not in source:
            continue
        where = f"{at}sources/{index}/url"
        check_fetch_url(call, source["url"], field=where)
        seconds = media.video_length(call.world, source["url"])
        if seconds > limit:
            raise invalid_request(
                f"{where}: the video is {seconds} seconds long; url sources are analysed up to "
                f"{limit} seconds",
                reason="video_too_long",
                field=where,
                sourceIndex=index,
                durationSeconds=seconds,
                maxSeconds=limit,
            )
        urls.append({"url": source["url"], "durationSeconds": seconds})
    transcripts = len(body["sources"]) - len(urls)
    meta = {
        "outputFormat": body["outputFormat"],
        "urlSources": urls,
        "transcriptSources": transcripts,
    }
    items = call.runtime.seams.remix_work_items(len(urls), transcripts, body["outputFormat"])
    return Work(items, meta=meta)


def model_from_text_work(call: Call, body: dict[str, Any], at: str = "") -> Work:
    return Work([("3d-from-text", 1)], meta={"prompt": body["prompt"]})


def model_from_image_work(call: Call, body: dict[str, Any], at: str = "") -> Work:
    check_fetch_url(call, body["imageUrl"], field=f"{at}imageUrl")
    return Work([("3d-from-image", 1)], meta={"imageUrl": body["imageUrl"]})


# What every approval costs, first or re-cut: known before the edit job is looked up.
APPROVAL_ITEMS: tuple[Item, ...] = (("video-render", 1),)


def approval_work(edit_job_id: str, generation: int) -> Work:
    """A footage edit's render: its first approval (generation 0) or a re-cut."""
    meta = {"editJobId": edit_job_id, "generation": generation}
    return Work(list(APPROVAL_ITEMS), meta=meta)


Prepare = Callable[[Call, dict[str, Any], str], Work]

WORK: dict[str, Prepare] = {
    "createFilmOutline": film_outline_work,
    "renderVideo": render_work,
    "editVideo": edit_work,
    "createFootage": footage_work,
    "remixVideo": remix_work,
    "createModelFromText": model_from_text_work,
    "createModelFromImage": model_from_image_work,
}
