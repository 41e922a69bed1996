"""Watch links for a project's finished render.

- The render shared is the project's latest render that is ``done``: jobs of kind ``render``
  (``POST /v1/video/render``) or ``edit-render`` (an approved footage edit) filed under the
  project, latest by completion time. A render that is still running, failed, was cancelled
  or was blocked by its release check (``qa_failed``) is never shared: media is never
  published from it. With no done render the call answers ``400 invalid_request`` with
  ``details.reason`` ``render_not_ready`` (inferred); ``details.latestRenderStatus`` says
  what the latest render is doing (null when there is none).
- Inferred: the link is deterministic for a render (sharing it again answers the same url),
  expires ``LINK_DAYS`` days after it is asked for on the mock clock, and each share is
  recorded (collection ``shares``).
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from mockserver.call import Call
from mockserver.platform.envelope import iso_z, public
from mockserver.platform.errors import invalid_request

RENDER_KINDS = ("render", "edit-render")
WATCH_BASE = "https://watch.mock.example/v"
LINK_DAYS = 30


def renders(call: Call, project_id: str) -> list[dict[str, Any]]:
    return [
        job
        for job in call.world.records(call.workspace_id, "jobs")
        if job.get("kind") in RENDER_KINDS and job.get("projectId") == project_id
    ]


def latest_done(call: Call, project_id: str) -> dict[str, Any] | None:
    done = [job for job in renders(call, project_id) if job["status"] == "done"]
    return max(done, key=lambda job: (job["completedAt"], job["_seq"])) if done else None


def share(call: Call, project_id: str) -> dict[str, Any]:
    job = latest_done(call, project_id)
    if job is None:
        jobs = renders(call, project_id)
        raise invalid_request(
            "the project has no finished render to share; render it and wait until the job is done",
            reason="render_not_ready",
            latestRenderStatus=jobs[-1]["status"] if jobs else None,
        )
    token = hashlib.sha256(f"{call.workspace_id}:{job['id']}".encode()).hexdigest()[:24]
    record = call.world.insert(
        call.workspace_id,
        "shares",
        {
            "id": call.new_id("shr"),
            "projectId": project_id,
            "jobId": job["id"],
            "url": f"{WATCH_BASE}/{token}",
            "expiresAt": iso_z(call.now + timedelta(days=LINK_DAYS)),
            "createdAt": call.now_iso,
        },
    )
    return public(record)
