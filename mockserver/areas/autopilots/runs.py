"""Autopilot runs: they move on the mock clock, wait at approval checkpoints, and publish.

A run (``autopilotRuns``) goes, stamped with the moment each step fell due:

- ``queued`` → ``generating`` 5 seconds later: one ``render`` job per video (jobs engine,
  ``fixtures/jobs.yaml``), filed under the autopilot's project. Runs are not charged: the
  contract declares no ``402`` for runs (*inferred*).
- When every render is terminal: a render that ended ``failed``, ``cancelled`` or ``qa_failed``
  is never published (its ``videos`` entry says why, and gets no post). No publishable video:
  the run ``failed``. Otherwise, with ``requireApproval`` (taken from the autopilot when the
  run starts) it waits at ``awaiting_approval`` with ``checkpoint`` ``publish_approval`` until
  approved; without it, it goes straight on to ``publishing``.
- ``publishing``: one post per publishable video, each with its own ``publish`` job, which emits
  ``publish.completed`` or ``publish.failed`` to webhook subscriptions. The first post is
  scheduled 60 seconds after publishing starts, the next ones 10 minutes apart, and no more
  than the autopilot's ``maxPostsPerDay`` (its current value) fall on one local day of its time
  zone: the others move to the next day (*inferred*). With ``maxPostsPerDay`` 0 nothing is
  posted. A post's publish job waits (``queued``) until ``scheduledFor``.
- When every post is settled: ``completed``, or ``failed`` when a post failed or was
  cancelled (``error`` says how many).
- A control-plane outcome decides a job's end: ``POST /_mock/jobs/{jobId}/outcome`` with
  ``{"status": "failed"}`` on a post's ``jobId`` makes that post fail (``publish.failed``); on a
  render's ``jobId`` with ``qa_failed`` blocks that video.

Refusals, checked in this order: ``404`` (channel or run of the workspace); governance
(``503 upstream_unavailable`` with ``Retry-After`` while the policy cannot be read,
``409 conflict`` ``governance_kill_switch`` while the kill switch is on); ``409 conflict``
``autopilot_paused`` while the channel's autopilot is paused (never saved counts as paused);
then the state: approve needs ``awaiting_approval`` (``run_not_awaiting_approval``), retry
needs ``failed`` (``run_not_failed``). Manual runs (*inferred*): an archived channel is
``409 channel_archived``; ``videos`` beyond what the day's ``maxVideosPerDay`` still allows is
``409 daily_video_cap_reached`` (``details.remainingToday``). Pausing leaves runs in flight
alone: renders finish, queued posts publish, a run waiting at its checkpoint keeps waiting (and
can be approved once the autopilot is enabled again).

Retry (failed runs only): ``trigger`` becomes ``retry`` and ``attempts`` grows by one. A run that
failed while generating makes its videos again (the day's video cap applies); one that failed
while publishing queues a new post for each video whose post failed. Earlier entries stay in
``videos`` and ``posts`` (each carries its ``attempt``).

Scheduled runs: an enabled autopilot starts one at ``nextScheduledRunAt`` (06:00 local) with
``trigger`` ``scheduled``, making the videos the day's cap still allows (none left: no run that
day). A scheduled run that falls due while the kill switch is on, the policy cannot be read, or
the channel is archived is skipped (*inferred*); the next one is the following day.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from mockserver.areas.autopilots import state, timing
from mockserver.areas.jobs import engine
from mockserver.call import Call
from mockserver.platform.envelope import public
from mockserver.platform.errors import ApiError, conflict, not_found
from mockserver.platform.governance import require_kill_switch_off
from mockserver.platform.scheduler import ticker
from mockserver.runtime import Runtime
from mockserver.world import World

COLLECTION = "autopilotRuns"
CHECKPOINT = "publish_approval"
QUEUE_SECONDS = 5
FIRST_POST_DELAY = 60
POST_SPACING = 600
TERMINAL = ("completed", "failed", "cancelled")
POST_STATUS = {"done": "published", "failed": "failed", "qa_failed": "failed"}
VIDEO_NOTES = {
    "failed": "the render failed: not published",
    "cancelled": "the render was cancelled: not published",
    "qa_failed": "blocked by a release check (qa_failed): never published",
}


# -- reading ---------------------------------------------------------------------------------


def view(run: dict[str, Any]) -> dict[str, Any]:
    return public(run)


def get_run(call: Call, run_id: str) -> dict[str, Any]:
    run = call.world.get(call.workspace_id, COLLECTION, run_id)
    if run is None:
        raise not_found(f"autopilot run {run_id!r}")
    return run


def runs_of(world: World, workspace_id: str, channel_id: str) -> list[dict[str, Any]]:
    return [r for r in world.records(workspace_id, COLLECTION) if r["channelId"] == channel_id]


def videos_on_day(world: World, workspace_id: str, channel_id: str, day: str, tz: Any) -> int:
    """Videos started on a local day, counting those of queued runs (about to start)."""
    count = 0
    for run in runs_of(world, workspace_id, channel_id):
        count += sum(
            1 for video in run["videos"] if timing.local_day_of(video["createdAt"], tz) == day
        )
        if run["status"] == "queued" and timing.local_day(run["_due"], tz) == day:
            count += run["videosRequested"]
    return count


def remaining_videos(world: World, workspace_id: str, autopilot: dict[str, Any], at: float) -> int:
    tz = timing.zone(autopilot["timezone"])
    used = videos_on_day(world, workspace_id, autopilot["channelId"], timing.local_day(at, tz), tz)
    return max(0, int(autopilot["maxVideosPerDay"]) - used)


# -- refusals --------------------------------------------------------------------------------


def check_may_act(call: Call, channel_id: str) -> dict[str, Any]:
    """Governance, then the autopilot's own state; the autopilot."""
    require_kill_switch_off(call.workspace)
    autopilot = state.config(call.world, call.workspace_id, channel_id)
    call.runtime.seams.refuse_paused_autopilot(autopilot)  # state.refuse_if_paused
    return autopilot


def check_video_budget(call: Call, autopilot: dict[str, Any], videos: int) -> None:
    left = remaining_videos(call.world, call.workspace_id, autopilot, call.now.timestamp())
    if videos > left:
        raise ApiError(
            "conflict",
            f"this run needs {videos} videos but the autopilot may make {left} more today "
            f"(maxVideosPerDay {autopilot['maxVideosPerDay']})",
            details={
                "reason": "daily_video_cap_reached",
                "maxVideosPerDay": autopilot["maxVideosPerDay"],
                "remainingToday": left,
            },
        )


# -- starting --------------------------------------------------------------------------------


def new_run(
    world: World,
    workspace_id: str,
    autopilot: dict[str, Any],
    *,
    trigger: str,
    videos: int,
    at: float,
) -> dict[str, Any]:
    stamp = timing.iso(at)
    return world.insert(
        workspace_id,
        COLLECTION,
        {
            "id": world.ids.new("run"),
            "channelId": autopilot["channelId"],
            "trigger": trigger,
            "status": "queued",
            "checkpoint": None,
            "error": None,
            "attempts": 1,
            "videosRequested": videos,
            "requireApproval": autopilot["requireApproval"],
            "videos": [],
            "posts": [],
            "approvedAt": None,
            "completedAt": None,
            "createdAt": stamp,
            "updatedAt": stamp,
            "_due": at + QUEUE_SECONDS,
            "_stage": "generating",
            "_round": 1,
        },
    )


def start_manual(call: Call) -> dict[str, Any]:
    channel_id, videos = call.body["channelId"], call.body["videos"]
    channel = call.world.get(call.workspace_id, "channels", channel_id)
    if channel is None:
        raise not_found(f"channel {channel_id!r}")
    autopilot = check_may_act(call, channel_id)
    if not channel.get("enabled", True):
        raise conflict(f"channel {channel_id!r} is archived", reason="channel_archived")
    check_video_budget(call, autopilot, videos)
    run = new_run(
        call.world,
        call.workspace_id,
        autopilot,
        trigger="manual",
        videos=videos,
        at=call.now.timestamp(),
    )
    call.runtime.scheduler.due(run["_due"])
    return run


def approve(call: Call, run: dict[str, Any]) -> dict[str, Any]:
    bring_up_to_date(call.runtime, call.workspace_id, run, call.now)
    check_may_act(call, run["channelId"])
    if run["status"] != "awaiting_approval":
        raise conflict(
            f"the run is {run['status']}, not waiting at a checkpoint",
            reason="run_not_awaiting_approval",
            status=run["status"],
        )
    at = call.now.timestamp()
    run["approvedAt"] = call.now_iso
    start_publishing(call.runtime, call.workspace_id, run, at)
    bring_up_to_date(call.runtime, call.workspace_id, run, call.now)
    return run


def retry(call: Call, run: dict[str, Any]) -> dict[str, Any]:
    bring_up_to_date(call.runtime, call.workspace_id, run, call.now)
    autopilot = check_may_act(call, run["channelId"])
    if run["status"] != "failed":
        raise conflict(
            f"only a failed run can be retried; this one is {run['status']}",
            reason="run_not_failed",
            status=run["status"],
        )
    at = call.now.timestamp()
    stage = run.get("_stage", "generating")
    if stage == "generating":
        check_video_budget(call, autopilot, run["videosRequested"])
    run.update(trigger="retry", attempts=run["attempts"] + 1, error=None, completedAt=None)
    run["updatedAt"] = call.now_iso
    if stage == "generating":
        run["status"], run["_due"] = "queued", at + QUEUE_SECONDS
        run["_round"] = run["attempts"]
        call.runtime.scheduler.due(run["_due"])
    else:
        start_publishing(call.runtime, call.workspace_id, run, at)
    bring_up_to_date(call.runtime, call.workspace_id, run, call.now)
    return run


# -- moving on -------------------------------------------------------------------------------


def _job(world: World, workspace_id: str, job_id: str | None) -> dict[str, Any] | None:
    return world.get(workspace_id, "jobs", job_id) if job_id else None


def _next_due(job: dict[str, Any]) -> float | None:
    if job["status"] in engine.TERMINAL or job["_step"] >= len(job["_plan"]):
        return None
    return float(job["_plan"][job["_step"]]["at"])


def _set(run: dict[str, Any], status: str, at: float) -> None:
    run["status"] = status
    run["updatedAt"] = timing.iso(at)


def _fail(run: dict[str, Any], at: float, stage: str, error: str) -> None:
    _set(run, "failed", at)
    run.update(error=error, checkpoint=None, completedAt=timing.iso(at), _stage=stage)


def start_generating(rt: Runtime, workspace_id: str, run: dict[str, Any], at: float) -> None:
    world = rt.world
    project_id = state.project_for(world, workspace_id, run["channelId"], at)
    for _ in range(run["videosRequested"]):
        job = engine.create_job(
            rt,
            workspace_id,
            timing.moment(at),
            kind="render",
            project_id=project_id,
            meta={"runId": run["id"], "channelId": run["channelId"], "autopilot": True},
        )
        run["videos"].append(
            {
                "id": world.ids.new("vid"),
                "jobId": job["id"],
                "status": job["status"],
                "download": None,
                "publishable": None,
                "note": None,
                "attempt": run.get("_round", 1),
                "createdAt": timing.iso(at),
            }
        )
    _set(run, "generating", at)
    run["_stage"] = "generating"


def _current_videos(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for v in run["videos"] if v["attempt"] == run.get("_round", 1)]


def _advance_generating(rt: Runtime, workspace_id: str, run: dict[str, Any], now: datetime) -> Any:
    """Follow the renders; the next due time while any is in flight, else the moment all ended."""
    pending: list[float] = []
    ended: list[float] = []
    for video in _current_videos(run):
        job = _job(rt.world, workspace_id, video["jobId"])
        if job is None:  # fixture videos made before the job history of the mock
            continue
        engine.advance_job(rt, workspace_id, job, now)
        video["status"] = job["status"]
        if job["status"] in engine.TERMINAL:
            ended.append(timing.parse(job["completedAt"]))
            video["publishable"] = job["status"] == "done"
            video["download"] = (job["artifacts"] or {}).get("download")
            video["note"] = VIDEO_NOTES.get(job["status"])
        elif (due := _next_due(job)) is not None:
            pending.append(due)
    if pending or any(v["status"] not in engine.TERMINAL for v in _current_videos(run)):
        return min(pending) if pending else None
    at = max(ended) if ended else timing.parse(run["updatedAt"])
    if not any(v["publishable"] for v in _current_videos(run)):
        _fail(run, at, "generating", "no video of this attempt passed its render and release check")
    elif run["requireApproval"] and run["approvedAt"] is None:
        _set(run, "awaiting_approval", at)
        run["checkpoint"] = CHECKPOINT
    else:
        start_publishing(rt, workspace_id, run, at)
    return "moved"


def _latest_posts(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    latest: dict[str, dict[str, Any]] = {}
    for post in run["posts"]:
        latest[post["videoId"]] = post
    return latest


def _slot(world: World, workspace_id: str, autopilot: dict[str, Any], earliest: float) -> float:
    """The first moment from ``earliest`` at least ``POST_SPACING`` away from the channel's
    other posts, on a local day that still has room under ``maxPostsPerDay`` (at least 1)."""
    tz = timing.zone(autopilot["timezone"])
    cap = int(autopilot["maxPostsPerDay"])
    posts = [
        timing.parse(post["scheduledFor"])
        for run in runs_of(world, workspace_id, autopilot["channelId"])
        for post in run["posts"]
        if post["status"] in ("queued", "published")
    ]
    at = earliest
    for _ in range(10_000):
        clash = [p for p in posts if abs(p - at) < POST_SPACING]
        if clash:
            at = max(clash) + POST_SPACING
            continue
        day = timing.local_day(at, tz)
        if sum(1 for p in posts if timing.local_day(p, tz) == day) >= cap:
            at = timing.next_local_midnight(at, tz)
            continue
        break
    return at


def start_publishing(rt: Runtime, workspace_id: str, run: dict[str, Any], at: float) -> None:
    """Queue a post for each publishable video without a live post (first time, or retry)."""
    world = rt.world
    autopilot = state.config(world, workspace_id, run["channelId"])
    _set(run, "publishing", at)
    run["checkpoint"] = None
    run["_stage"] = "publishing"
    latest = _latest_posts(run)
    project_id = state.project_for(world, workspace_id, run["channelId"], at)
    earliest = at + FIRST_POST_DELAY
    for video in run["videos"]:
        if not video["publishable"]:
            continue
        previous = latest.get(video["id"])
        if previous is not None and previous["status"] in ("queued", "published"):
            continue
        if int(autopilot["maxPostsPerDay"]) <= 0:
            video["note"] = "not posted: the autopilot's maxPostsPerDay is 0"
            continue
        when = _slot(world, workspace_id, autopilot, earliest)
        post_id = world.ids.new("pst")
        job = engine.create_job(
            rt,
            workspace_id,
            timing.moment(at),
            kind="publish",
            project_id=project_id,
            meta={"runId": run["id"], "postId": post_id, "videoJobId": video["jobId"]},
            start_at=when,  # the publish job waits, queued, until the post is due
        )
        run["posts"].append(
            {
                "id": post_id,
                "jobId": job["id"],
                "videoId": video["id"],
                "status": "queued",
                "scheduledFor": timing.iso(when),
                "publishedAt": None,
                "attempt": run["attempts"],
            }
        )
        earliest = when + POST_SPACING


def _advance_publishing(rt: Runtime, workspace_id: str, run: dict[str, Any], now: datetime) -> Any:
    pending: list[float] = []
    ended: list[float] = []
    for post in run["posts"]:
        if post["status"] != "queued":
            continue
        job = _job(rt.world, workspace_id, post["jobId"])
        if job is None:
            continue
        engine.advance_job(rt, workspace_id, job, now)
        if job["status"] in engine.TERMINAL:
            post["status"] = POST_STATUS.get(job["status"], "cancelled")
            ended.append(timing.parse(job["completedAt"]))
            if post["status"] == "published":
                post["publishedAt"] = job["completedAt"]
        elif (due := _next_due(job)) is not None:
            pending.append(due)
    if any(p["status"] == "queued" for p in run["posts"]):
        return min(pending) if pending else None
    at = max([timing.parse(run["updatedAt"]), *ended])
    failed = [p for p in _latest_posts(run).values() if p["status"] in ("failed", "cancelled")]
    if failed:
        total = len(_latest_posts(run))
        _fail(run, at, "publishing", f"{len(failed)} of {total} posts failed to publish")
    else:
        _set(run, "completed", at)
        run["completedAt"] = timing.iso(at)
    return "moved"


def bring_up_to_date(
    rt: Runtime, workspace_id: str, run: dict[str, Any], now: datetime
) -> float | None:
    """Apply every transition of a run that fell due by ``now``; the next due time, or None."""
    moment = now.timestamp()
    for _ in range(100):
        status = run["status"]
        if status == "queued":
            if run["_due"] > moment:
                return float(run["_due"])
            start_generating(rt, workspace_id, run, run["_due"])
            continue
        if status == "generating":
            result = _advance_generating(rt, workspace_id, run, now)
        elif status == "publishing":
            result = _advance_publishing(rt, workspace_id, run, now)
        else:
            return None
        if result != "moved":
            return cast(float | None, result)
    return None


# -- scheduled runs --------------------------------------------------------------------------


def _may_schedule(world: World, workspace_id: str, channel_id: str) -> bool:
    governance = world.workspace(workspace_id)["governance"]
    channel = world.get(workspace_id, "channels", channel_id)
    return (
        governance["policyReadable"]
        and not governance["killSwitch"]
        and channel is not None
        and channel.get("enabled", True)
    )


def _scheduled(rt: Runtime, workspace_id: str, autopilot: dict[str, Any], now: datetime) -> Any:
    """Start every scheduled run that fell due; the next one's time, or None."""
    world = rt.world
    while autopilot["enabled"] and autopilot["nextScheduledRunAt"] is not None:
        due = timing.parse(autopilot["nextScheduledRunAt"])
        if due > now.timestamp():
            return due
        if _may_schedule(world, workspace_id, autopilot["channelId"]):
            videos = remaining_videos(world, workspace_id, autopilot, due)
            if videos > 0:
                run = new_run(
                    world, workspace_id, autopilot, trigger="scheduled", videos=videos, at=due
                )
                bring_up_to_date(rt, workspace_id, run, now)
        tz = timing.zone(autopilot["timezone"])
        following = timing.next_local_time(due, state.SCHEDULED_AT, tz)
        autopilot["nextScheduledRunAt"] = timing.iso(following)
    return None


@ticker("autopilots")
def tick(rt: Runtime, now: datetime) -> float | None:
    """Start scheduled runs and move every run in flight up to ``now``."""
    world = rt.world
    upcoming: list[float] = []
    for workspace_id in world.workspaces:
        for autopilot in list(world.records(workspace_id, state.COLLECTION)):
            if (due := _scheduled(rt, workspace_id, autopilot, now)) is not None:
                upcoming.append(due)
        for run in list(world.records(workspace_id, COLLECTION)):
            if run["status"] in TERMINAL:
                continue
            if (due := bring_up_to_date(rt, workspace_id, run, now)) is not None:
                upcoming.append(due)
            upcoming.extend(_in_flight_jobs(world, workspace_id, run))
    return min(upcoming) if upcoming else None


def _in_flight_jobs(world: World, workspace_id: str, run: dict[str, Any]) -> list[float]:
    """Next due times of the run's jobs (jobs created during a tick are not seen by its jobs
    ticker, so the autopilot ticker answers for them)."""
    ids = [v["jobId"] for v in run["videos"]] + [p["jobId"] for p in run["posts"]]
    times = []
    for job_id in ids:
        job = _job(world, workspace_id, job_id)
        if job is not None and (due := _next_due(job)) is not None:
            times.append(due)
    return times


def sync_workspace(call: Call) -> None:
    """Bring the workspace's runs up to now before answering (a control-plane outcome may have
    ended a job since the last tick)."""
    for run in list(call.world.records(call.workspace_id, COLLECTION)):
        if run["status"] not in TERMINAL:
            bring_up_to_date(call.runtime, call.workspace_id, run, call.now)
