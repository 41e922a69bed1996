"""The workflow checks (conformance/checks/workflows.py): each passes against the clean mock,
fails against the test-only defect that breaks its rule, and skips, with its reason, where it
cannot judge (a deployment without the mock's control plane, or without spending allowed)."""

from __future__ import annotations

import pytest

from conformance.checks import REGISTRY, all_checks
from conformance.checks.workflows import (
    LEGACY_NEEDS_MOCK,
    NEEDS_LONG_VIDEO,
    NEEDS_VIDEO_URLS,
)
from conformance.results import Report
from conformance.skips import NEEDS_CONTROL, NEEDS_CREATE, NEEDS_SPEND
from tests.conformance.support import OWNER, live_mock, run_quietly

CHECKS = {
    "workflows-autopilot-paused": 9,  # the judgements each makes against the mock
    "workflows-approve-generation": 10,
    "workflows-remix-pricing": 6,
    "workflows-max-credits": 6,
    "workflows-stale-word-cursor": 2,
    "pagination-legacy-projects-cursor": 1,
}
# Each check's defect (tests/defects/workflows.py) and the rules of the check it breaks.
CAUGHT = {
    "workflows-autopilot-paused": (
        "paused-autopilot-runs",
        {"paused-manual-run", "paused-approve", "paused-retry"},
    ),
    "workflows-approve-generation": ("stale-generation-accepted", {"stale-generation"}),
    "workflows-remix-pricing": ("remix-priced-flat", {"priced-by-work"}),
    "workflows-max-credits": (
        "max-credits-ignored",
        {
            "footage-capped",
            "footage-capped-not-charged",
            "agent-step-capped",
            "agent-capped-not-charged",
        },
    ),
    "workflows-stale-word-cursor": ("stale-word-cursor-served", {"stale-cursor"}),
    "pagination-legacy-projects-cursor": ("legacy-cursor-accepted", {"legacy-cursor-refused"}),
}
LONG_VIDEO = "https://videos.example.com/cooking/breakfast-burritos"  # 181 s in the mock


#: The mock reached as a plain deployment keeps its manual clock, so that its rate window
#: never moves: a limit the runs never reach (else the preflight stops them, rightly).
PLAIN_RATE = 10_000


def _plain(base_url: str, **options: object) -> Report:
    """A run against the mock reached as a plain deployment: no control plane, real waits
    (made instant here)."""
    options = {
        "base_url": base_url,
        "api_key": OWNER,
        "allow_spend": True,
        "webhook_wait": 0.3,
        "job_wait": 0.3,
        "sleep": lambda seconds: None,
        "max_requests": 300,
    } | options
    return run_quietly(**options)


def test_the_checks_are_registered_in_their_families():
    all_checks()
    for name in CHECKS:
        family = "pagination" if name.startswith("pagination-") else "workflows"
        assert REGISTRY[name].family == family
    assert REGISTRY["workflows-remix-pricing"].spends
    assert REGISTRY["workflows-autopilot-paused"].creates
    assert REGISTRY["workflows-stale-word-cursor"].creates


def test_each_check_passes_against_the_clean_mock():
    with live_mock() as mock:
        report = run_quietly(mock_url=mock.base_url, only=list(CHECKS), max_requests=400)
    for name, judgements in CHECKS.items():
        result = report.result(name)
        assert result.status == "passed", (name, result.failures, dict(result.skipped))
        assert result.passed == judgements and not result.skipped, (name, dict(result.skipped))
    assert report.exit_code == 0


@pytest.mark.parametrize("name", list(CAUGHT))
def test_each_check_fails_against_its_defect(name: str):
    defect, rules = CAUGHT[name]
    with live_mock(defects=[defect]) as mock:
        report = run_quietly(mock_url=mock.base_url, only=[name], max_requests=400)
    result = report.result(name)
    assert report.exit_code == 1 and result.status == "failed", (defect, dict(result.skipped))
    assert {f.rule for f in result.failures} == rules
    assert all(f.quote and f.exchange is not None for f in result.failures)


def test_without_the_control_plane_the_mock_only_parts_are_skipped_with_their_reasons():
    with live_mock(rate_limit=PLAIN_RATE) as mock:
        report = _plain(mock.base_url, only=list(CHECKS))
    legacy = report.result("pagination-legacy-projects-cursor")
    assert legacy.status == "skipped" and set(legacy.skipped) == {LEGACY_NEEDS_MOCK}
    autopilot = report.result("workflows-autopilot-paused")
    assert autopilot.status == "passed" and autopilot.passed == 5  # no governance judgements
    assert any(r.startswith(NEEDS_CONTROL) for r in autopilot.skipped)
    approve = report.result("workflows-approve-generation")  # the mock's clock stands still
    assert approve.status == "skipped"
    assert set(approve.skipped) == {
        "the footage edit did not reach awaiting_review within --job-wait (0.3 s)"
    }
    remix = report.result("workflows-remix-pricing")  # transcripts alone are still judged
    assert remix.status == "passed" and remix.passed == 2
    assert set(remix.skipped) == {NEEDS_VIDEO_URLS, NEEDS_LONG_VIDEO}
    capped = report.result("workflows-max-credits")  # footage judged, the agent run not
    assert capped.status == "passed" and capped.passed == 3
    assert set(capped.skipped) == {NEEDS_VIDEO_URLS}
    assert report.result("workflows-stale-word-cursor").status == "passed"
    assert report.exit_code == 0


def test_a_long_video_url_is_judged_against_a_deployment():
    with live_mock(rate_limit=PLAIN_RATE) as mock:
        report = _plain(mock.base_url, only=["workflows-remix-pricing"], long_video_url=LONG_VIDEO)
    remix = report.result("workflows-remix-pricing")
    assert remix.status == "passed" and remix.passed == 4  # refused, and nothing charged
    assert set(remix.skipped) == {NEEDS_VIDEO_URLS}


def test_without_allow_spend_nothing_is_sent():
    with live_mock(rate_limit=PLAIN_RATE) as mock:
        report = _plain(mock.base_url, only=list(CHECKS), allow_spend=False)
    for name, reason in (
        ("workflows-autopilot-paused", NEEDS_CREATE),
        ("workflows-stale-word-cursor", NEEDS_CREATE),
        ("workflows-approve-generation", NEEDS_SPEND),
        ("workflows-remix-pricing", NEEDS_SPEND),
        ("workflows-max-credits", NEEDS_SPEND),
    ):
        result = report.result(name)
        assert result.status == "skipped" and set(result.skipped) == {reason}, name
        assert result.requests == 0


def test_the_command_line_takes_the_long_video_url():
    from conformance.cli import build_parser, config_from

    args = build_parser().parse_args(["run", "--mock", "--long-video-url", LONG_VIDEO])
    assert config_from(args).long_video_url == LONG_VIDEO
