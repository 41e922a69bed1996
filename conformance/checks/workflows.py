"""Workflows: stated rules that take several calls to reach (states, generations, prices, caps).

Each check drives the deployment into the state its rule speaks of, through the public interface
where it can: pause an autopilot, approve and re-cut a footage edit, remix priced sources, cap a
call with ``maxCredits``, edit a composition under a word cursor. What only the bundled mock's
control plane can bring about (the governance kill switch, an unreadable policy, a cancelled
render, a cursor issued before the projects store switch) is judged against ``--mock`` only and
skipped, with the reason, elsewhere. Against the mock, time is moved with its clock; against a
real deployment jobs are polled at the recommended interval for at most ``--job-wait`` seconds
(conformance/polling.py), and the footage edit an approval needs is started in the prepare
phase, so that it runs while the other checks do.

Charges are judged by the balance ``GET /v1/capabilities`` answers before and after a call;
prices are read from the same live catalogue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.checks import check, prepares, steps
from conformance.checks.steps import NO_BALANCE, Catalogue, Refusal
from conformance.context import Context
from conformance.contract import Operation
from conformance.idpool import missing, own_ids
from conformance.polling import beyond
from conformance.refusals import payment_refused
from conformance.skips import NEEDS_CONTROL, Skip
from conformance.target import Exchange

FAMILY = "workflows"

# Capability names the interface document states for the remix's pricing rule.
VIDEO_ANALYSIS, SCRIPT, SCENE_PLAN = "video-analysis", "script", "scene-plan"
FOOTAGE = "footage"  # the footage capability (an inferred name: skipped when not listed)
WORD_LIMIT = 5  # words per source on a transcript page: small, so a source has a next page
NEEDS_VIDEO_URLS = (
    "needs video urls of known length (the bundled mock's catalogue; --mock): url sources "
    "not judged"
)
NEEDS_LONG_VIDEO = "needs --long-video-url (a video longer than the url source limit)"
LEGACY_NEEDS_MOCK = (
    "needs a GET /v1/projects cursor issued before the 2026-10-10 store switch: the bundled "
    "mock's fixtures publish one (--mock)"
)

PAUSED = (
    "PUT autopilot with `enabled: false` … paused: scheduled runs stop; manual runs, approvals "
    "and retries now answer 409 `conflict`"
)
ENABLED = "PUT autopilot with `enabled: true` … enabled: manual runs allowed again"
DAILY_LIMIT = (
    "the autopilot of {channel} may make no more videos today (409 with details.remainingToday "
    "0: its daily cap, maxVideosPerDay, not a pause)"
)
GOVERNANCE = (
    "An autopilot is also refused for manual runs, approvals and retries with 409 `conflict` "
    "while the workspace governance kill switch is on, and with 503 `upstream_unavailable` "
    "while the governance policy cannot be read (retry the same request)."
)
FIRST_APPROVAL = (
    "proposal `awaiting_review` | POST /v1/video/edit/approve | expectedGeneration omitted | "
    "approved; render starts"
)
RECUT = (
    "proposal `approved` with finished render | POST /v1/video/edit/approve with "
    "`expectedGeneration` equal to `proposal.generation` | generation matches | re-cut"
)
STALE_GENERATION = (
    "A stale value answers 409 `conflict` with `details.currentGeneration` and is not charged."
)
NOT_READY = (
    "A cancelled cut, or one whose render is not ready (running or failed), answers 400 before "
    "any charge."
)
REMIX_PRICE = (
    "Priced by work: with any url source, one video analysis (`video-analysis`, 150 credits) per "
    "url source; from transcripts alone one script (`script`, 100 credits), or one scene plan "
    "(`scene-plan`, 50 credits) when `outputFormat` is `scenes`."
)
REMIX_LENGTH = (
    "Each url source is analysed up to 180 seconds; a longer video is refused with an error "
    "before any charge."
)
FOOTAGE_CAP = "`POST /v1/video/footage`: a live price above `maxCredits` answers 409 `conflict`."
AGENT_CAP = (
    "`POST /v1/agent/runs`: checks `maxCredits` against each step's price for its planned "
    "arguments, so a remix with several url sources is capped before it runs."
)
WORD_CURSOR = (
    "A `wordCursor` is bound to the transcript it paged; if the composition changed, the next "
    "page answers 409 `conflict` with `details.reason` equal to `stale_cursor`, and the client "
    "restarts from the first page."
)
LEGACY_CURSOR = (
    "Cursors issued for `GET /v1/projects` before the 2026-10-10 switch of its data store are "
    "refused with `invalid_request`; list again from the first page."
)


# -- shared helpers ------------------------------------------------------------------------------


def _generated(
    ctx: Context, op: Operation, values: dict[str, Any], *, drop: tuple[str, ...] = ()
) -> Exchange:
    """A generated valid request to ``op`` (real project) with ``values`` set, ``drop`` left out;
    :class:`Skip` when the workspace has no project to file it under and none can be created."""
    body_fields = ctx.held.flatten(op.body_schema)["properties"] if op.body_schema else {}
    if "projectId" in body_fields and not own_ids(ctx, "projectId"):
        raise Skip(missing(ctx, "projectId"))

    def update(body: dict[str, Any]) -> dict[str, Any]:
        for name in drop:
            body.pop(name, None)
        body.update(values)
        return body

    prepared = ctx.sample(op, salt="workflows", idempotency_key=ctx.new_key(), body_update=update)
    if prepared is None:
        raise Skip("no request could be generated")
    return steps.answered(ctx, ctx.send(prepared, op))


def _mock_videos(ctx: Context) -> tuple[list[str], str | None]:
    """Video urls of known length: those of at most the url source limit (the longest first,
    so the first is at the limit where the catalogue has one), and one just over it.

    Known only for the bundled mock (its default fixtures' video catalogue); a deployment's
    long video is ``--long-video-url``.
    """
    long_url = ctx.session.long_video_url
    if ctx.session.mock is None:
        return [], long_url
    from mockserver.fixtures import load_fixtures
    from mockserver.resources import default_fixtures_path

    fixtures = load_fixtures(default_fixtures_path())
    limit = fixtures["generation"]["remix"]["maxUrlSourceSeconds"]
    videos = [
        (int(video["durationSeconds"]), video["url"])
        for domain in fixtures["catalog"]["domains"].values()
        for video in domain
    ]
    short = [url for seconds, url in sorted(videos, reverse=True) if seconds <= limit]
    longer = sorted(v for v in videos if v[0] > limit)
    return short, long_url or (longer[0][1] if longer else None)


# -- autopilots --------------------------------------------------------------------------------


def _autopilot(ctx: Context, channel_id: str) -> dict[str, Any] | None:
    exchange = ctx.call(ctx.operation("getAutopilot"), path_parameters={"channelId": channel_id})
    autopilot = exchange.body.get("autopilot")
    return autopilot if exchange.ok and isinstance(autopilot, dict) else None


def _save_autopilot(
    ctx: Context, channel_id: str, settings: dict[str, Any], enabled: bool
) -> Exchange:
    """PUT the autopilot with ``settings`` (the saved fields the contract names) and ``enabled``."""
    op = ctx.operation("saveAutopilot")
    names = ctx.held.flatten(op.body_schema)["properties"] if op.body_schema else {}
    body = {name: settings[name] for name in names if name in settings}
    body["enabled"] = enabled
    return steps.send(ctx, op, body, path={"channelId": channel_id})


def _start_run(ctx: Context, channel_id: str, **kwargs: Any) -> Exchange:
    return steps.send(
        ctx, ctx.operation("createAutopilotRun"), {"channelId": channel_id, "videos": 1}, **kwargs
    )


def _runs(ctx: Context) -> list[dict[str, Any]]:
    op = ctx.operation("listAutopilotRuns")
    params = {"limit": 100} if op.parameter("limit", "query") else {}
    runs = ctx.call(op, params=params).body.get("runs")
    return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []


class _Autopilots:
    """Pauses and enables autopilots, remembering each one's settings to restore them."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.original: Catalogue = {}

    def settings(self, channel_id: str) -> dict[str, Any]:
        if channel_id not in self.original:
            autopilot = _autopilot(self.ctx, channel_id)
            if autopilot is None:
                raise Skip(f"the autopilot of channel {channel_id} could not be read")
            self.original[channel_id] = autopilot
        return self.original[channel_id]

    def set(self, channel_id: str, enabled: bool, **change: Any) -> Exchange:
        settings = self.settings(channel_id) | change
        return _save_autopilot(self.ctx, channel_id, settings, enabled)

    def restore(self) -> None:
        for channel_id, settings in self.original.items():
            _save_autopilot(self.ctx, channel_id, settings, bool(settings.get("enabled")))


@check(
    "workflows-autopilot-paused",
    FAMILY,
    "a paused autopilot refuses manual runs, approvals and retries with 409 conflict, nothing "
    "charged; enabled again it accepts a manual run; the governance kill switch answers 409 and "
    "an unreadable policy 503 upstream_unavailable (mock)",
    creates=True,
)
def autopilot_paused(ctx: Context) -> None:
    for name in ("getAutopilot", "saveAutopilot", "createAutopilotRun", "listAutopilotRuns"):
        steps.operation(ctx, name)
    runs = _runs(ctx)
    waiting = next((r for r in runs if r.get("status") == "awaiting_approval"), None)
    failed = next((r for r in runs if r.get("status") == "failed"), None)
    channels = [
        r["channelId"] for r in (waiting, failed) if r and isinstance(r.get("channelId"), str)
    ]
    channel = (channels or own_ids(ctx, "channelId") or [None])[0]
    if channel is None:
        raise Skip(missing(ctx, "channelId"))
    autopilots = _Autopilots(ctx)
    try:
        _judge_paused(ctx, autopilots, channel, waiting, failed)
        enabled = autopilots.set(channel, True)
        if not enabled.ok:
            raise Skip(f"the autopilot of {channel} could not be enabled ({enabled.answered})")
        _judge_enabled(ctx, autopilots, channel)
        mine = waiting if waiting and waiting.get("channelId") == channel else None
        _judge_governance(ctx, channel, mine)
    finally:
        autopilots.restore()


def _judge_paused(
    ctx: Context,
    autopilots: _Autopilots,
    channel: str,
    waiting: dict[str, Any] | None,
    failed: dict[str, Any] | None,
) -> None:
    paused = autopilots.set(channel, False)
    if not paused.ok:
        raise Skip(f"the autopilot of {channel} could not be paused ({paused.answered})")
    steps.refused_without_charge(
        ctx,
        lambda: _start_run(ctx, channel),
        Refusal(409, "conflict", "paused-manual-run", "paused-not-charged", PAUSED),
        lambda run: f"a manual run of a paused autopilot answered {run.answered}",
        waive=lambda run: (
            f"{DAILY_LIMIT.format(channel=channel)}: paused-manual-run not judged"
            if _daily_limit(run)
            else None
        ),
    )
    for operation_id, subject, status in (
        ("approveAutopilotRun", waiting, "awaiting_approval"),
        ("retryAutopilotRun", failed, "failed"),
    ):
        op = ctx.held.operations.get(operation_id)
        if op is None or ctx.why_not_send(op):
            ctx.skip(f"{operation_id} may not be sent")
            continue
        if subject is None or not isinstance(subject.get("id"), str):
            ctx.skip(f"no autopilot run is {status}: {op.label} not judged")
            continue
        if subject.get("channelId") != channel:
            refused = autopilots.set(subject["channelId"], False)
            if not refused.ok:
                ctx.skip(f"the autopilot of {subject['channelId']} could not be paused")
                continue
        exchange = steps.send(ctx, op, path={"runId": subject["id"]})
        ctx.expect(
            exchange.answers(409, "conflict"),
            f"paused-{operation_id.removesuffix('AutopilotRun')}",
            f"{op.label} of a run {status} while its autopilot is paused answered "
            f"{exchange.answered}",
            exchange=exchange,
            quote=PAUSED,
        )


def _judge_enabled(ctx: Context, autopilots: _Autopilots, channel: str) -> None:
    """Enabled again, the autopilot accepts a manual run. A 409 that says the day's video cap
    is used up is a daily limit, not a pause: the cap is raised for one more try (to the
    contract's maximum), and where that cannot be done the rule is not judged."""
    run = _start_run(ctx, channel)
    if _daily_limit(run):
        ceiling = _daily_cap_ceiling(ctx)
        raised = autopilots.set(channel, True, maxVideosPerDay=ceiling) if ceiling else None
        if raised is not None and raised.ok:
            run = _start_run(ctx, channel)
        if _daily_limit(run):
            ctx.skip(f"{DAILY_LIMIT.format(channel=channel)}: enabled-manual-run not judged")
            return
    ctx.expect(
        run.ok,
        "enabled-manual-run",
        f"a manual run of the autopilot enabled again answered {run.answered}",
        exchange=run,
        quote=ENABLED,
    )


def _daily_limit(exchange: Exchange) -> bool:
    """A 409 that states the day's video cap (``maxVideosPerDay``) is used up: its details say
    ``remainingToday`` 0, or name the contract's ``daily_video_cap_reached``."""
    details = exchange.details
    return exchange.status == 409 and (
        details.get("remainingToday") == 0 or details.get("reason") == "daily_video_cap_reached"
    )


def _daily_cap_ceiling(ctx: Context) -> int | None:
    """The highest ``maxVideosPerDay`` the contract allows (None: it states none)."""
    op = ctx.contract.full.operations.get("saveAutopilot")
    if op is None or op.body_schema is None:
        return None
    field = ctx.contract.full.flatten(op.body_schema)["properties"].get("maxVideosPerDay", {})
    field = ctx.contract.full.resolve(field)
    parts = [field, *[p for p in field.get("allOf", []) if isinstance(p, dict)]]
    return next((p["maximum"] for p in parts if isinstance(p.get("maximum"), int)), None)


def _governance(ctx: Context, change: dict[str, bool] | None = None) -> dict[str, Any]:
    """The workspace's governance settings (after ``change``), through the control plane."""
    mock = ctx.session.mock
    assert mock is not None
    if change:
        return dict(ctx.control.set_governance(mock.workspace, **change))
    response = ctx.control.call("GET", f"/workspaces/{mock.workspace}/governance")
    response.raise_for_status()
    return dict(response.json()["governance"])


def _judge_governance(ctx: Context, channel: str, waiting: dict[str, Any] | None) -> None:
    """Mock only: the kill switch answers 409, an unreadable policy 503 (autopilot enabled)."""
    if ctx.control is None or ctx.session.mock is None:
        ctx.skip(NEEDS_CONTROL + ": the governance kill switch and policy not judged")
        return
    original = _governance(ctx)
    approve = ctx.held.operations.get("approveAutopilotRun")
    cases = (
        ({"killSwitch": True}, 409, "conflict", "kill-switch"),
        ({"killSwitch": False, "policyReadable": False}, 503, "upstream_unavailable", "policy"),
    )
    try:
        for change, status, code, rule in cases:
            _governance(ctx, change)
            exchanges = [_start_run(ctx, channel, retry=False)]
            if waiting is not None and approve is not None:
                exchanges.append(
                    steps.send(ctx, approve, path={"runId": waiting["id"]}, retry=False)
                )
            for exchange in exchanges:
                ctx.expect(
                    exchange.answers(status, code),
                    f"governance-{rule}",
                    f"with governance {change} {exchange.method} {exchange.path} answered "
                    f"{exchange.answered} (expected {status} {code})",
                    exchange=exchange,
                    quote=GOVERNANCE,
                )
    finally:
        _governance(ctx, {k: original[k] for k in ("killSwitch", "policyReadable")})


# -- footage-edit approvals -----------------------------------------------------------------------


def _job_id(exchange: Exchange) -> str | None:
    job = exchange.body.get("job")
    return job.get("id") if isinstance(job, dict) and isinstance(job.get("id"), str) else None


def _proposal(ctx: Context, job_id: str) -> Exchange:
    return ctx.call(ctx.operation("getJobProposal"), path_parameters={"jobId": job_id})


def _generation(exchange: Exchange) -> Any:
    proposal = exchange.body.get("proposal")
    return proposal.get("generation") if isinstance(proposal, dict) else None


def _job_status(ctx: Context, job_id: str) -> str | None:
    exchange = ctx.call(ctx.operation("getJob"), path_parameters={"jobId": job_id})
    job = exchange.body.get("job")
    return job.get("status") if isinstance(job, dict) else None


def _terminal(ctx: Context) -> tuple[str, ...]:
    schema = ctx.held.document.get("components", {}).get("schemas", {}).get("JobTerminalStatus")
    return tuple(ctx.held.resolve(schema or {}).get("enum", ()))


def _affordable(exchange: Exchange, what: str) -> Exchange:
    """The answer to a paid approval, or :class:`Skip` when it was refused with 402 (against a
    deployment the approvals come last, when the run may have spent the credits)."""
    if reason := payment_refused(exchange):
        raise Skip(f"{reason}: {what} not judged")
    return exchange


def _approve(ctx: Context, job_id: str, expected: Any = None) -> Exchange:
    body: dict[str, Any] = {"jobId": job_id}
    if expected is not None:
        body["expectedGeneration"] = expected
    return steps.send(ctx, ctx.operation("approveVideoEdit"), body)


@check(
    "workflows-approve-generation",
    FAMILY,
    "POST /v1/video/edit/approve: the first approval succeeds; a render not ready and a "
    "cancelled cut answer 400 (mock), a stale expectedGeneration 409 conflict with "
    "details.currentGeneration, each before any charge",
    spends=True,
)
def approve_generation(ctx: Context) -> None:
    job_id: str = ctx.prepared
    page = steps.poll(
        ctx,
        lambda: _proposal(ctx, job_id),
        lambda e: e.ok and e.body.get("status") == "awaiting_review",
        f"footage edit {job_id} to propose its cuts (awaiting_review)",
    )
    if page is None:
        raise Skip(beyond(ctx, "the footage edit did not reach awaiting_review"))
    first = _affordable(_approve(ctx, job_id), "the first approval")
    if not ctx.expect(
        first.ok,
        "first-approval",
        f"the first approval (expectedGeneration omitted) answered {first.answered}",
        exchange=first,
        quote=FIRST_APPROVAL,
    ):
        return
    render_id = _job_id(first) or job_id
    approved = _proposal(ctx, job_id)
    ctx.expect(
        approved.body.get("status") == "approved",
        "approved",
        f"after the first approval the proposal is {approved.body.get('status')!r}",
        exchange=approved,
        quote=FIRST_APPROVAL,
    )
    generation = _generation(approved)
    if not isinstance(generation, int | float):
        raise Skip("the proposal answers no generation")
    _judge_render_not_ready(ctx, job_id, render_id, generation)
    _judge_stale(ctx, job_id, render_id, generation)


@prepares("workflows-approve-generation")
def _start_footage_edit(ctx: Context) -> str:
    """A footage edit, to be approved once it proposes its cuts: its job id."""
    for name in ("approveVideoEdit", "getJobProposal", "getJob"):
        steps.operation(ctx, name)
    edit_op = steps.operation(ctx, "editVideo")
    if steps.balance(ctx) is None:
        raise Skip(NO_BALANCE)
    short, _ = _mock_videos(ctx)
    edit = _generated(ctx, edit_op, {"footageUrls": short[:2]} if short else {})
    job_id = _job_id(edit)
    if not edit.ok or job_id is None:
        raise Skip(f"no footage edit could be started ({edit.answered})")
    return job_id


def _judge_render_not_ready(ctx: Context, job_id: str, render_id: str, generation: Any) -> None:
    if _job_status(ctx, render_id) in _terminal(ctx):
        ctx.skip("the render finished before a re-cut could be asked for early")
        return
    steps.refused_without_charge(
        ctx,
        lambda: _approve(ctx, job_id, generation),
        Refusal(
            400, "invalid_request", "render-not-ready", "render-not-ready-not-charged", NOT_READY
        ),
        lambda early: f"a re-cut while the current render is running answered {early.answered}",
    )


def _judge_stale(ctx: Context, job_id: str, render_id: str, generation: Any) -> None:
    terminal = _terminal(ctx)
    ended = steps.poll(
        ctx,
        lambda: ctx.call(ctx.operation("getJob"), path_parameters={"jobId": render_id}),
        lambda e: (e.body.get("job") or {}).get("status") in terminal,
        f"render {render_id} of the approved cut to end",
    )
    if ended is None:
        raise Skip(beyond(ctx, "the approved render did not end"))
    status = (ended.body.get("job") or {}).get("status")
    if status != "done":
        raise Skip(f"the approved render ended {status}: no re-cut possible")
    recut = _affordable(_approve(ctx, job_id, generation), "a re-cut")
    if not ctx.expect(
        recut.ok,
        "re-cut",
        f"a re-cut with expectedGeneration {generation} (the current one, render finished) "
        f"answered {recut.answered}",
        exchange=recut,
        quote=RECUT,
    ):
        return
    current = _generation(_proposal(ctx, job_id))
    if not ctx.expect(
        current != generation,
        "generation-moves-on",
        f"after a re-cut the proposal's generation is still {current}",
        exchange=recut,
        quote=ctx.held.quote("#/paths/~1v1~1video~1edit~1approve/post", RECUT),
    ):
        return
    steps.refused_without_charge(
        ctx,
        lambda: _approve(ctx, job_id, generation),
        Refusal(409, "conflict", "stale-generation", "stale-not-charged", STALE_GENERATION),
        lambda stale: (
            f"expectedGeneration {generation} (the proposal is at {current}) answered "
            f"{stale.answered} with details.currentGeneration "
            f"{stale.details.get('currentGeneration')!r}"
        ),
        also=lambda stale: stale.details.get("currentGeneration") == current,
    )
    _judge_cancelled(ctx, job_id, _job_id(recut), current)


def _judge_cancelled(ctx: Context, job_id: str, render_id: str | None, current: Any) -> None:
    """Mock only: the re-cut's render cancelled through the control plane, then re-cut."""
    if ctx.control is None or ctx.session.mock is None:
        ctx.skip(NEEDS_CONTROL + ": a cancelled cut not judged")
        return
    if render_id is None:
        ctx.skip("the re-cut answered no render job: a cancelled cut not judged")
        return
    outcome = {"status": "cancelled", "immediately": True}
    if ctx.control.call("POST", f"/jobs/{render_id}/outcome", outcome).status_code >= 400:
        ctx.skip("the mock could not cancel the render: a cancelled cut not judged")
        return
    steps.refused_without_charge(
        ctx,
        lambda: _approve(ctx, job_id, current),
        Refusal(400, "invalid_request", "cancelled-cut", "cancelled-not-charged", NOT_READY),
        lambda cancelled: f"a re-cut of a cancelled cut answered {cancelled.answered}",
    )


# -- remix pricing -----------------------------------------------------------------------------


def _transcript(n: int) -> dict[str, str]:
    return {"transcript": f"Transcript {n}: a short talk about keeping a weekly budget."}


@check(
    "workflows-remix-pricing",
    FAMILY,
    "a remix is charged by work at the live prices (video-analysis per url source, else one "
    "script or scene plan); a url source over the length limit is refused before any charge",
    spends=True,
)
def remix_pricing(ctx: Context) -> None:
    op = steps.operation(ctx, "remixVideo")
    catalogue = steps.catalogue(ctx)
    missing = [n for n in (VIDEO_ANALYSIS, SCRIPT, SCENE_PLAN) if steps.price(catalogue, n) is None]
    if missing:
        raise Skip(f"GET /v1/capabilities quotes no price for {', '.join(missing)}")
    if steps.balance(ctx) is None:
        raise Skip(NO_BALANCE)
    short, long_url = _mock_videos(ctx)
    cases: list[tuple[str, list[dict[str, str]], str | None, dict[str, int]]] = [
        ("two transcripts", [_transcript(1), _transcript(2)], None, {SCRIPT: 1}),
        ("two transcripts as scenes", [_transcript(1), _transcript(2)], "scenes", {SCENE_PLAN: 1}),
    ]
    if len(short) >= 3:
        urls = [{"url": url} for url in short[:3]]
        cases += [
            ("two url sources and a transcript", [*urls[:2], _transcript(1)], None,
             {VIDEO_ANALYSIS: 2}),
            ("three url sources as scenes", urls, "scenes", {VIDEO_ANALYSIS: 3}),
        ]  # fmt: skip
    else:
        ctx.skip(NEEDS_VIDEO_URLS)
    for label, sources, output_format, work in cases:
        _judge_price(ctx, op, catalogue, label, sources, output_format, work)
    if long_url is None:
        ctx.skip(NEEDS_LONG_VIDEO)
        return
    steps.refused_without_charge(
        ctx,
        lambda: _remix(ctx, op, [{"url": long_url}], None),
        Refusal(
            400, "invalid_request", "long-video-refused", "long-video-not-charged", REMIX_LENGTH
        ),
        lambda refused: (
            f"a url source longer than the limit ({long_url}) answered {refused.answered}"
        ),
    )


def _remix(
    ctx: Context, op: Operation, sources: list[dict[str, str]], output_format: str | None
) -> Exchange:
    values: dict[str, Any] = {"sources": sources}
    if output_format is not None:
        values["outputFormat"] = output_format
    return _generated(ctx, op, values, drop=("outputFormat",))


def _judge_price(
    ctx: Context,
    op: Operation,
    catalogue: Catalogue,
    label: str,
    sources: list[dict[str, str]],
    output_format: str | None,
    work: dict[str, int],
) -> None:
    expected = sum(int(steps.price(catalogue, name) or 0) * count for name, count in work.items())
    before = steps.balance(ctx)
    exchange = _remix(ctx, op, sources, output_format)
    if not exchange.ok:
        ctx.skip(f"a remix of {label} was refused ({exchange.answered})")
        return
    after = steps.balance(ctx)
    charged = None if before is None or after is None else before - after
    priced = " + ".join(f"{count} × {name}" for name, count in work.items())
    ctx.expect(
        charged == expected,
        "priced-by-work",
        f"a remix of {label} was charged {charged} credits; {priced} at the live price is "
        f"{expected}",
        exchange=exchange,
        quote=REMIX_PRICE,
    )


# -- maxCredits --------------------------------------------------------------------------------


@check(
    "workflows-max-credits",
    FAMILY,
    "maxCredits below the live price: POST /v1/video/footage and an agent run whose remix step "
    "of several url sources costs more answer 409 conflict, nothing charged",
    spends=True,
)
def max_credits(ctx: Context) -> None:
    if steps.balance(ctx) is None:
        raise Skip(NO_BALANCE)
    catalogue = steps.catalogue(ctx)
    judged = [_judge_footage_cap(ctx, catalogue), _judge_agent_cap(ctx, catalogue)]
    if not any(judged):
        raise Skip("neither maxCredits rule could be judged")


def _judge_footage_cap(ctx: Context, catalogue: Catalogue) -> bool:
    op = ctx.held.operations.get("createFootage")
    if op is None or (reason := ctx.why_not_send(op)):
        ctx.skip(reason or "the contract has no createFootage")
        return False
    unit_price = steps.price(catalogue, FOOTAGE)
    if not unit_price:
        ctx.skip(f"GET /v1/capabilities quotes no positive price for {FOOTAGE}")
        return False
    seconds = 2
    per_second = catalogue[FOOTAGE].get("unit") == "second"
    price = unit_price * (seconds if per_second else 1)
    _judge_cap(
        ctx,
        op,
        {"durationSeconds": seconds},
        price,
        Cap(
            ("footage-capped", "footage-capped-not-charged", "footage-at-cap"),
            f"maxCredits {price - 1} under the live price {price}",
            f"maxCredits equal to the live price {price}",
            FOOTAGE_CAP,
        ),
    )
    return True


def _judge_agent_cap(ctx: Context, catalogue: Catalogue) -> bool:
    op = ctx.held.operations.get("createAgentRun")
    remix = ctx.held.operations.get("remixVideo")
    if op is None or remix is None or (reason := ctx.why_not_send(op)):
        ctx.skip(reason or "the contract has no createAgentRun")
        return False
    analysis = steps.price(catalogue, VIDEO_ANALYSIS)
    short, _ = _mock_videos(ctx)
    if len(short) < 3:
        ctx.skip(NEEDS_VIDEO_URLS)
        return False
    if not analysis:
        ctx.skip(f"GET /v1/capabilities quotes no positive price for {VIDEO_ANALYSIS}")
        return False
    urls = short[:3]
    step_price = analysis * len(urls)
    step = {"operation": remix.operation_id, "arguments": {"sources": [{"url": u} for u in urls]}}
    _judge_cap(
        ctx,
        op,
        {"steps": [step]},
        step_price,
        Cap(
            ("agent-step-capped", "agent-capped-not-charged", "agent-step-at-cap"),
            f"a remix step of {len(urls)} url sources ({len(urls)} × {VIDEO_ANALYSIS} = "
            f"{step_price} credits) under maxCredits {step_price - 1}",
            f"the same run with maxCredits {step_price} (the step's price)",
            AGENT_CAP,
        ),
    )
    return True


@dataclass(frozen=True)
class Cap:
    """How one `maxCredits` rule is reported: its three rule names (capped, not charged,
    accepted at the cap), what was sent under and at the cap, and the contract's words."""

    rules: tuple[str, str, str]
    under: str
    at: str
    quote: str


def _judge_cap(ctx: Context, op: Operation, values: dict[str, Any], price: int, cap: Cap) -> None:
    """``maxCredits`` one under ``price`` answers 409 conflict and is not charged; equal to
    it, the call is accepted."""
    capped_rule, not_charged_rule, at_cap_rule = cap.rules

    def paid_refused(exchange: Exchange) -> str | None:
        # Which comes first, the cap's 409 or a 402, is not stated: a 402 judges neither.
        reason = payment_refused(exchange)
        return f"{reason}: {capped_rule} and {not_charged_rule} not judged" if reason else None

    steps.refused_without_charge(
        ctx,
        lambda: _generated(ctx, op, {**values, "maxCredits": price - 1}),
        Refusal(409, "conflict", capped_rule, not_charged_rule, cap.quote),
        lambda capped: f"{cap.under} answered {capped.answered}",
        waive_both=paid_refused,
    )
    allowed = _generated(ctx, op, {**values, "maxCredits": price})
    if reason := payment_refused(allowed):
        ctx.skip(f"{reason}: {at_cap_rule} not judged")
        return
    ctx.expect(
        allowed.ok,
        at_cap_rule,
        f"{cap.at} answered {allowed.answered}",
        exchange=allowed,
        quote=cap.quote,
    )


# -- word cursors ------------------------------------------------------------------------------


def _transcript_page(ctx: Context, project_id: str, cursor: str | None = None) -> Exchange:
    params: dict[str, Any] = {"wordLimit": WORD_LIMIT}
    if cursor is not None:
        params["wordCursor"] = cursor
    op = ctx.operation("getProjectTranscript")
    return ctx.call(op, path_parameters={"projectId": project_id}, params=params)


def _paged_source(exchange: Exchange) -> dict[str, Any] | None:
    """A source of the page with a next cursor, a source id and a first word with an id."""
    transcript = exchange.body.get("transcript")
    sources = transcript.get("sources") if isinstance(transcript, dict) else None
    for source in sources if isinstance(sources, list) else []:
        words = source.get("words") if isinstance(source, dict) else None
        if (
            isinstance(source.get("wordsNextCursor"), str)
            and isinstance(source.get("id"), str)
            and isinstance(words, list)
            and words
            and isinstance(words[0], dict)
            and isinstance(words[0].get("id"), str)
        ):
            return source
    return None


@check(
    "workflows-stale-word-cursor",
    FAMILY,
    "a wordCursor issued before the composition changed answers 409 conflict with "
    "details.reason stale_cursor",
    creates=True,
)
def stale_word_cursor(ctx: Context) -> None:
    steps.operation(ctx, "getProjectTranscript")
    edit_op = steps.operation(ctx, "editProjectTranscript")
    found = None
    for project_id in ctx.session.ids.ids_for("projectId")[:5]:
        source = _paged_source(_transcript_page(ctx, project_id))
        if source is not None:
            found = project_id, source
            break
    if found is None:
        raise Skip(f"no project's transcript has a source longer than {WORD_LIMIT} words")
    project_id, source = found
    cursor = source["wordsNextCursor"]
    fresh = _transcript_page(ctx, project_id, cursor)
    if not fresh.ok:
        raise Skip(f"the wordCursor was not accepted before any edit ({fresh.status})")
    word = source["words"][0]
    action, undo = ("restore", "cut") if word.get("cut") is True else ("cut", "restore")
    edit = {"action": action, "sourceId": source["id"], "wordIds": [word["id"]]}
    path = {"projectId": project_id}
    changed = steps.send(ctx, edit_op, edit, path=path)
    if not changed.ok:
        raise Skip(f"the composition could not be changed ({changed.answered})")
    try:
        stale = _transcript_page(ctx, project_id, cursor)
        ctx.expect(
            stale.answers(409, "conflict") and stale.details.get("reason") == "stale_cursor",
            "stale-cursor",
            f"a wordCursor issued before the composition changed answered {stale.answered}"
            f" with details.reason {stale.details.get('reason')!r}",
            exchange=stale,
            quote=WORD_CURSOR,
        )
        restart = _transcript_page(ctx, project_id)
        ctx.expect(
            restart.ok,
            "restart-first-page",
            f"the first page after the change answered {restart.answered}",
            exchange=restart,
            quote=WORD_CURSOR,
        )
    finally:
        steps.send(ctx, edit_op, {**edit, "action": undo}, path=path)


# -- legacy cursors ------------------------------------------------------------------------------


def _legacy_cursor(ctx: Context, operation_id: str) -> str | None:
    """A cursor issued before the store switch: the bundled mock's fixtures publish one."""
    if ctx.session.mock is None:
        return None
    from mockserver.fixtures import load_fixtures
    from mockserver.resources import default_fixtures_path

    cursors = load_fixtures(default_fixtures_path()).get("legacyCursors", {})
    cursor = cursors.get(operation_id) if isinstance(cursors, dict) else None
    return cursor if isinstance(cursor, str) else None


@check(
    "pagination-legacy-projects-cursor",
    "pagination",
    "a GET /v1/projects cursor issued before the 2026-10-10 switch of its data store answers "
    "400 invalid_request (the cursor the bundled mock publishes)",
)
def legacy_projects_cursor(ctx: Context) -> None:
    op = steps.operation(ctx, "listProjects")
    cursor = _legacy_cursor(ctx, op.operation_id)
    if cursor is None:
        raise Skip(LEGACY_NEEDS_MOCK)
    since = op.definition.get("x-cursors-valid-from", "2026-10-10")
    exchange = ctx.call(op, params={"cursor": cursor})
    ctx.expect(
        exchange.answers(400, "invalid_request"),
        "legacy-cursor-refused",
        f"a cursor issued before {since} answered {exchange.answered}",
        exchange=exchange,
        quote=LEGACY_CURSOR,
    )
