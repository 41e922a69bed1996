"""Footage-edit proposals: the cuts a footage edit proposes, their approval and their re-cuts.

A proposal lives with its footage-edit job (``job["_meta"]["proposal"]``):
``status`` (``awaiting_review`` or ``approved``), ``generation``, ``renderJobId`` and what its cuts
are derived from. The rules:

- The edit job analyses its footage and holds at ``awaiting_approval`` (event
  ``job.awaiting_approval``); from then on its proposal is ``awaiting_review`` and
  ``GET /v1/jobs/{jobId}/proposal`` serves it. Before that the proposal is not ready: the read
  answers ``404 not_found`` with ``details.reason`` ``proposal_not_ready`` (inferred: the
  operation declares no 409). A job that is not a footage edit answers ``404 not_found``.
- ``generation`` is 0 from the start (inferred: the contract requires a number, and the
  interface document says the revision being re-cut is 0 after the first approval); the first
  approval leaves it at 0, each re-cut adds one.
- Cuts are derived from the footage urls, the target duration and the generation (the fixtures'
  ``generation.footageEdit``): taken from each url in turn, each 2 to 4 seconds long, placed
  inside the url's length (media.py), until they add up to ``targetDurationSeconds`` (180 when
  the request leaves it out); so the same edit always proposes the same cuts, and a re-cut
  proposes new ones. ``after`` counts the cuts already read; ``page.nextAfter`` is null at the end.
- ``POST /v1/video/edit/approve`` (all refusals come before any charge):

  - ``video-render`` unavailable: ``503 capability_unavailable``, before the edit job is looked
    up (a first approval and a re-cut both need it; credits.py), so never ``404``;
  - an unknown job, or one that is not a footage edit: ``404 not_found``;
  - the edit job cancelled, or the current render cancelled: ``400`` ``cut_cancelled``;
  - ``awaiting_review`` and ``expectedGeneration`` omitted: the first approval, when the job
    holds at ``awaiting_approval`` (still analysing: ``400`` ``proposal_not_ready``; the edit
    ended otherwise, through the control plane: ``400`` ``edit_not_awaiting_review``). The
    proposal becomes ``approved`` and the held edit job resumes with its ``afterApproval``
    steps: it is its own render (``renderJobId`` is the edit job), charged ``video-render``;
  - ``awaiting_review`` with ``expectedGeneration``: ``400`` ``proposal_not_approved``
    (inferred; send it only once the proposal is approved);
  - ``approved`` and ``expectedGeneration`` omitted: ``409 conflict`` ``already_approved`` with
    ``details.currentGeneration`` (inferred);
  - ``approved`` and a stale ``expectedGeneration``: ``409 conflict`` ``stale_generation`` with
    ``details.currentGeneration``;
  - ``approved``, matching ``expectedGeneration``, current render running or queued: ``400``
    ``render_not_ready``; failed or ``qa_failed``: ``400`` ``render_failed``;
  - ``approved``, matching, current render ``done``: a re-cut: a new ``edit-render`` job under the
    same project, charged ``video-render``; ``generation`` moves on and ``renderJobId`` names the
    new job. Re-cut jobs get no per-job callback (the edit's callback belongs to the edit job);
    they reach webhook subscriptions like every footage-edit job.
"""

from __future__ import annotations

import hashlib
from typing import Any

from mockserver.areas.generation import media
from mockserver.areas.jobs import engine
from mockserver.call import Call
from mockserver.platform.errors import ApiError, conflict, invalid_request
from mockserver.world import World

FIRST_APPROVAL = "first"
RECUT = "recut"


def new_proposal(world: World, footage_urls: list[str], target: int | None) -> dict[str, Any]:
    defaults = media.settings(world)["footageEdit"]
    return {
        "status": "awaiting_review",
        "generation": 0,
        "renderJobId": None,
        "footageUrls": list(footage_urls),
        "targetSeconds": target if target is not None else defaults["defaultTargetSeconds"],
    }


def _number(*parts: object) -> int:
    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def cuts(world: World, proposal: dict[str, Any]) -> list[dict[str, Any]]:
    """Every cut of the proposal's current generation, in order."""
    rules = media.settings(world)["footageEdit"]
    low, high = rules["cutSeconds"]["min"], rules["cutSeconds"]["max"]
    labels = rules["labels"]
    urls, generation = proposal["footageUrls"], proposal["generation"]
    lengths = [media.video_length(world, url) for url in urls]
    result: list[dict[str, Any]] = []
    total = 0
    while total < proposal["targetSeconds"]:
        index = len(result)
        source = index % len(urls)
        url, length = urls[source], lengths[source]
        seconds = min(low + _number(url, generation, index, "len") % (high - low + 1), length)
        room = max(0, length - seconds)
        start = _number(url, generation, index, "at") % (room + 1)
        label = labels[_number(url, generation, index, "label") % len(labels)]
        result.append(
            {
                "index": index,
                "sourceUrl": url,
                "start": start,
                "end": start + seconds,
                "label": f"{label} {index // len(urls) + 1} of source {source + 1}",
            }
        )
        total += max(seconds, 1)  # a zero-length source still moves the proposal on
    return result


def is_ready(job: dict[str, Any]) -> bool:
    """The proposal exists once its job has held for review at least once."""
    return any(event["event"] == "job.awaiting_approval" for event in job["_events"])


def edit_job(call: Call, job_id: str) -> dict[str, Any]:
    """A footage-edit job of the workspace (404 for any other job or id)."""
    job = engine.get_job(call, job_id)
    if job["kind"] != "footage-edit" or "proposal" not in job["_meta"]:
        raise ApiError(
            "not_found",
            f"job {job_id!r} is not a footage edit, so it has no proposal",
            details={"reason": "not_a_footage_edit"},
        )
    return job


def summary(world: World, job: dict[str, Any]) -> dict[str, Any]:
    """The contract's ``ProposalSummary``."""
    proposal = job["_meta"]["proposal"]
    return {
        "status": proposal["status"],
        "generation": proposal["generation"],
        "jobId": job["id"],
        "renderJobId": proposal["renderJobId"],
        "cutCount": len(cuts(world, proposal)),
    }


def page(call: Call, job: dict[str, Any], after: int, limit: int) -> dict[str, Any]:
    """The contract's ``ProposalPage``: the proposal with the cuts after ``after``."""
    if not is_ready(job):
        raise ApiError(
            "not_found",
            f"job {job['id']!r} has not proposed its cuts yet; wait for job.awaiting_approval",
            details={"reason": "proposal_not_ready", "status": job["status"]},
        )
    proposal = job["_meta"]["proposal"]
    every = cuts(call.world, proposal)
    chunk = every[after : after + limit]
    read = after + len(chunk)
    return {
        "status": proposal["status"],
        "proposal": {**summary(call.world, job), "cuts": chunk},
        "page": {"nextAfter": read if read < len(every) else None, "limit": limit},
    }


def _current_render(call: Call, proposal: dict[str, Any]) -> dict[str, Any]:
    return engine.get_job(call, proposal["renderJobId"])


def check_approval(call: Call, job: dict[str, Any], expected: int | float | None) -> str:
    """What an approve request may do (module docstring); refusals before any charge."""
    proposal = job["_meta"]["proposal"]
    current = proposal["generation"]
    if job["status"] == "cancelled":
        raise invalid_request("this footage edit was cancelled", reason="cut_cancelled")
    if proposal["status"] == "awaiting_review":
        if expected is not None:
            raise invalid_request(
                "the proposal is not approved yet: omit expectedGeneration for the first approval",
                reason="proposal_not_approved",
                currentGeneration=current,
            )
        if job["status"] in ("queued", "running"):
            raise invalid_request(
                "the footage edit has not proposed its cuts yet; wait for job.awaiting_approval",
                reason="proposal_not_ready",
                status=job["status"],
            )
        if job["status"] != "awaiting_approval":
            raise invalid_request(
                f"the footage edit ended ({job['status']}) without an approval",
                reason="edit_not_awaiting_review",
                status=job["status"],
            )
        return FIRST_APPROVAL
    if expected is None:
        raise conflict(
            "the proposal is already approved; send expectedGeneration to re-cut it",
            reason="already_approved",
            currentGeneration=current,
        )
    call.runtime.seams.check_expected_generation(expected, current)  # rules.py: 409 if stale
    render = _current_render(call, proposal)
    status = render["status"]
    if status == "cancelled":
        raise invalid_request(
            "the current cut's render was cancelled",
            reason="cut_cancelled",
            renderJobId=render["id"],
        )
    if status not in engine.TERMINAL:
        raise invalid_request(
            "the current cut's render is not finished; wait for it before re-cutting",
            reason="render_not_ready",
            renderJobId=render["id"],
            status=status,
        )
    if status != "done":
        raise invalid_request(
            f"the current cut's render ended {status}; it cannot be re-cut",
            reason="render_failed",
            renderJobId=render["id"],
            status=status,
        )
    return RECUT


def approve_first(call: Call, job: dict[str, Any], cost: dict[str, Any]) -> dict[str, Any]:
    """The first approval: the held edit job resumes as its own render."""
    proposal = job["_meta"]["proposal"]
    proposal["status"] = "approved"
    proposal["renderJobId"] = job["id"]
    job["cost"] += cost["credits"]
    steps = engine.kind_settings(call.world, "footage-edit")["afterApproval"]
    engine.resume(call.runtime, call.workspace_id, job, steps, call.now)
    return job


def recut(job: dict[str, Any], render: dict[str, Any]) -> None:
    """A re-cut started: the generation moves on and the new job renders it."""
    proposal = job["_meta"]["proposal"]
    proposal["generation"] += 1
    proposal["renderJobId"] = render["id"]
