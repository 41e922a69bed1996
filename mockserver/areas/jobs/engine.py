"""Jobs: long work that moves through in-flight states to one terminal state on the mock clock.

The rules, in one place:

- Statuses come from the contract: in-flight ``queued``, ``running``, ``awaiting_approval``
  (inferred) and terminal ``done``, ``cancelled``, ``failed``, ``qa_failed``. ``phase`` is display
  text that changes as the job goes.
- Each kind's steps and durations come from the fixtures (``jobs.kinds``); the terminal status
  is ``done`` unless the fixtures set a mix for the kind (``jobs.outcomes``, chosen
  deterministically from the job id) or the control plane decides it
  (``POST /_mock/jobs/{jobId}/outcome``).
- A job may *hold*: a footage edit stops at ``awaiting_approval`` until its proposal is
  approved; :func:`resume` gives it the rest of its steps.
- Every transition appends to the job's ordered event stream (``sequence`` from 1) stamped with
  the moment it fell due: ``job.progressed`` for each step, ``job.awaiting_approval`` on a hold,
  ``job.completed`` and (for kinds that make files) ``artifact.ready`` on ``done``,
  ``job.failed`` on ``failed`` and ``qa_failed`` (blocked by a release check), and
  ``job.cancelled``.
- Only ``done`` carries artifacts (a render's carry ``download`` and its deprecated copy
  ``video``). A ``qa_failed`` job has none, so nothing can ever be published from it.
- Events reach webhook subscriptions only for the kinds that notify (footage edits and their
  renders, media analysis, publishing: ``jobs.kinds.<kind>.notify``, true or a list of event
  names), never renders from ``POST /v1/video/render`` nor 3D jobs; a kind may name its own
  terminal events (``terminalEvents``: a publish ends in ``publish.completed`` or
  ``publish.failed``). A job with a callback gets one ``job-event.v1`` delivery when it
  reaches its terminal state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from mockserver.call import Call
from mockserver.platform import delivery
from mockserver.platform.envelope import iso_z, public
from mockserver.platform.errors import not_found
from mockserver.platform.scheduler import ticker
from mockserver.runtime import Runtime
from mockserver.world import World

TERMINAL = ("done", "cancelled", "failed", "qa_failed")
TERMINAL_EVENTS = {
    "done": "job.completed",
    "failed": "job.failed",
    "qa_failed": "job.failed",
    "cancelled": "job.cancelled",
}
ERRORS = {
    "failed": "the job failed",
    "qa_failed": "blocked by a release check (quality assurance); nothing may be published from it",
    "cancelled": "the job was cancelled",
}
TERMINAL_PHASES = {
    "done": "complete",
    "failed": "failed",
    "qa_failed": "blocked by release check",
    "cancelled": "cancelled",
}
CALLBACK_SUFFIX = {
    "done": "completed",
    "failed": "failed",
    "qa_failed": "qa_failed",
    "cancelled": "cancelled",
}
MEDIA_BASE = "https://media.mock.example"


def event_id(*parts: object) -> str:
    """A stable event id: the same event always has the same id (retries and replays too)."""
    return "evt_" + hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:20]


def _at(moment: datetime) -> float:
    return moment.timestamp()


def _iso(epoch: float) -> str:
    return iso_z(datetime.fromtimestamp(epoch, UTC))


def kind_settings(world: World, kind: str) -> dict[str, Any]:
    kinds = world.fixture("jobs", {}).get("kinds", {})
    if kind not in kinds:
        raise ValueError(f"the fixtures define no job kind {kind!r} (jobs.kinds)")
    return kinds[kind]


def default_outcome(world: World, kind: str, job_id: str) -> str:
    """``done``, or a deterministic pick from the kind's mix in the fixtures."""
    mix = world.fixture("jobs", {}).get("outcomes", {}).get(kind)
    if not mix:
        return "done"
    point = int(hashlib.sha256(job_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    total = 0.0
    for status, share in mix.items():
        total += share
        if point <= total:
            return status
    return "done"


def plan(start: float, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Absolute times for a list of steps (``status``, ``phase``, ``seconds``)."""
    scheduled, at = [], start
    for step in steps:
        scheduled.append({"at": at, "status": step["status"], "phase": step["phase"]})
        at += step["seconds"]
    scheduled.append({"at": at, "status": "terminal", "phase": None})
    return scheduled


def create_job(
    rt: Runtime,
    workspace_id: str,
    now: datetime,
    *,
    kind: str,
    project_id: str | None,
    cost: int = 0,
    job_id: str | None = None,
    callback: dict[str, str] | None = None,
    hold: dict[str, str] | None = None,
    meta: dict[str, Any] | None = None,
    start_at: float | None = None,
) -> dict[str, Any]:
    """File a new job under a project of a workspace and schedule it from ``now``.

    A handler passes its call's runtime, workspace and time; a ticker passes the moment the
    work fell due. ``callback`` is ``{"url": ..., "secret": <plain>}`` (sealed here, never stored
    in clear). ``hold`` (``{"phase": ...}``, by default the kind's) stops the job at
    ``awaiting_approval`` after its steps, until :func:`resume`. ``start_at`` (epoch seconds)
    keeps the job in its first step (``queued``) until then.
    """
    world = rt.world
    settings = kind_settings(world, kind)
    hold = hold or settings.get("hold")
    job_id = job_id or world.ids.new("job")
    moment = _at(now)
    record: dict[str, Any] = {
        "id": job_id,
        "kind": kind,
        "projectId": project_id,
        "status": "queued",
        "phase": None,
        "artifacts": None,
        "progress": 0.0,
        "error": None,
        "cost": cost,
        "createdAt": iso_z(now),
        "updatedAt": iso_z(now),
        "completedAt": None,
        "_plan": plan(moment, settings["steps"])
        if start_at is None or start_at <= moment
        else plan(moment, settings["steps"][:1])[:1] + plan(start_at, settings["steps"][1:]),
        "_step": 0,
        "_hold": hold,
        "_outcome": default_outcome(world, kind, job_id),
        "_events": [],
        "_notify": settings.get("notify", False),
        "_callback": None,
        "_meta": meta or {},
    }
    if callback is not None:
        record["_callback"] = {
            "url": callback["url"],
            "secret": rt.secrets.seal(callback["secret"]),
        }
    world.insert(workspace_id, "jobs", record)
    advance_job(rt, workspace_id, record, now)
    rt.scheduler.due(record["_plan"][record["_step"]]["at"])
    return record


def view(job: dict[str, Any]) -> dict[str, Any]:
    """A job as the contract's ``Job``."""
    return public(job)


def get_job(call: Call, job_id: str) -> dict[str, Any]:
    job = call.world.get(call.workspace_id, "jobs", job_id)
    if job is None:
        raise not_found(f"job {job_id!r}")
    return job


def stream(job: dict[str, Any]) -> list[dict[str, Any]]:
    return job["_events"]


def all_jobs(world: World) -> Iterator[tuple[str, dict[str, Any]]]:
    for workspace_id in world.workspaces:
        for job in world.records(workspace_id, "jobs"):
            yield workspace_id, job


# -- moving on -------------------------------------------------------------------------------


def advance_job(rt: Runtime, workspace_id: str, job: dict[str, Any], now: datetime) -> float | None:
    """Apply every step of a job that fell due by ``now``; the next due time, or None."""
    moment = _at(now)
    while job["status"] not in TERMINAL:
        steps = job["_plan"]
        index = job["_step"]
        if index >= len(steps):
            if job["_hold"] is not None and job["status"] != "awaiting_approval":
                _set(
                    rt,
                    workspace_id,
                    job,
                    "awaiting_approval",
                    job["_hold"]["phase"],
                    steps[-1]["at"],
                )
            return None
        step = steps[index]
        if step["at"] > moment:
            return step["at"]
        job["_step"] = index + 1
        if step["status"] == "terminal":
            if job["_hold"] is not None:
                job["_step"] = len(steps)
                continue
            finish(rt, workspace_id, job, job["_outcome"], step["at"])
            return None
        job["progress"] = round(index / max(1, len(steps) - 1), 3)
        _set(rt, workspace_id, job, step["status"], step["phase"], step["at"])
    return None


def _set(
    rt: Runtime, workspace_id: str, job: dict[str, Any], status: str, phase: str | None, at: float
) -> None:
    job["status"], job["phase"] = status, phase
    job["updatedAt"] = _iso(at)
    event = "job.awaiting_approval" if status == "awaiting_approval" else "job.progressed"
    emit(rt, workspace_id, job, event, at)


def finish(rt: Runtime, workspace_id: str, job: dict[str, Any], status: str, at: float) -> None:
    """Put a job in a terminal state, with its artifacts (done only), events and deliveries."""
    job["status"] = status
    job["phase"] = TERMINAL_PHASES[status]
    job["progress"] = 1.0 if status == "done" else job["progress"]
    job["error"] = None if status == "done" else ERRORS[status]
    kept = rt.seams.carries_artifacts(status)  # only done: nothing is published from qa_failed
    job["artifacts"] = artifacts(rt, workspace_id, job) if kept else None
    job["updatedAt"] = job["completedAt"] = _iso(at)
    job["_hold"] = None
    settings = kind_settings(rt.world, job["kind"])
    emit(rt, workspace_id, job, settings.get("terminalEvents", TERMINAL_EVENTS)[status], at)
    if status == "done" and settings.get("files") == "video":
        emit(rt, workspace_id, job, "artifact.ready", at)
    if job["_callback"] is not None:
        delivery.enqueue_callback(rt, workspace_id, job, callback_body(rt, workspace_id, job))


def artifacts(rt: Runtime, workspace_id: str, job: dict[str, Any]) -> dict[str, str]:
    """A done job's files (by the kind's ``files`` in the fixtures)."""
    base = f"{MEDIA_BASE}/{workspace_id}/{job['id']}"
    files = kind_settings(rt.world, job["kind"]).get("files", "data")
    if files == "video":
        return {"download": f"{base}/video.mp4", "video": f"{base}/video.mp4"}
    if files == "model":
        return {
            "download": f"{base}/model.glb",
            "model": f"{base}/model.glb",
            "video": f"{base}/turntable.mp4",
        }
    if files == "script":
        return {"download": f"{base}/script.json", "script": f"{base}/script.json"}
    return {"download": f"{base}/result.json"}


def callback_body(rt: Runtime, workspace_id: str, job: dict[str, Any]) -> dict[str, Any]:
    """The ``job-event.v1`` body of a per-job callback."""
    callback_artifacts = None
    if job["status"] == "done":
        files = job["artifacts"] or {}
        video = files.get("video", files["download"])
        callback_artifacts = {"videoUrl": video, "downloadUrls": {"video": video}}
        if "model" in files:
            callback_artifacts["downloadUrls"]["model"] = files["model"]
    return {
        "schemaVersion": "job-event.v1",
        "eventId": event_id(job["id"], "terminal"),
        "event": f"{job['kind']}.{CALLBACK_SUFFIX[job['status']]}",
        "jobId": job["id"],
        "status": job["status"],
        "error": job["error"],
        "workspaceId": workspace_id,
        "artifacts": callback_artifacts,
    }


def emit(rt: Runtime, workspace_id: str, job: dict[str, Any], event: str, at: float) -> None:
    """Append an event to the job's stream and send it to subscriptions that want it."""
    record = {
        "sequence": len(job["_events"]) + 1,
        "event": event,
        "status": job["status"],
        "phase": job["phase"],
        "occurredAt": _iso(at),
    }
    job["_events"].append(record)
    if rt.seams.for_subscriptions(job, event):
        delivery.enqueue_subscriptions(
            rt,
            workspace_id,
            event,
            {
                "schemaVersion": "automation-event.v1",
                "eventId": event_id(job["id"], record["sequence"]),
                "event": event,
                "occurredAt": record["occurredAt"],
                "workspaceId": workspace_id,
                "data": {
                    "jobId": job["id"],
                    "projectId": job["projectId"] or "",
                    "status": job["status"],
                    "phase": job["phase"],
                    "sequence": record["sequence"],
                    "resourceUrl": f"/v1/jobs/{job['id']}",
                },
            },
        )


def resume(
    rt: Runtime, workspace_id: str, job: dict[str, Any], steps: list[dict[str, Any]], now: datetime
) -> None:
    """Release a held job and give it more steps, from now."""
    job["_hold"] = None
    job["_plan"] = job["_plan"][: job["_step"]] + plan(_at(now), steps)
    advance_job(rt, workspace_id, job, now)
    rt.scheduler.due(job["_plan"][min(job["_step"], len(job["_plan"]) - 1)]["at"])


def hurry(rt: Runtime, workspace_id: str, job: dict[str, Any], now: datetime) -> None:
    """Make every remaining step of an in-flight job fall due ``now`` and apply them: the job
    reaches its hold, or its terminal state, at once (``mockserver trigger``)."""
    moment = _at(now)
    for step in job["_plan"][job["_step"] :]:
        step["at"] = min(step["at"], moment)
    advance_job(rt, workspace_id, job, now)


def decide(
    rt: Runtime, workspace_id: str, job: dict[str, Any], status: str, immediately: bool
) -> None:
    """The control plane decides a job's terminal state (now, or when it would end)."""
    job["_outcome"] = status
    if immediately:
        finish(rt, workspace_id, job, status, _at(rt.clock.now()))


@ticker("jobs")
def tick(rt: Runtime, now: datetime) -> float | None:
    upcoming = [
        when
        for workspace_id, job in all_jobs(rt.world)
        if job["status"] not in TERMINAL
        and (when := advance_job(rt, workspace_id, job, now)) is not None
    ]
    return min(upcoming) if upcoming else None
