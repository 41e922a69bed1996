"""The jobs checks (conformance/checks/jobs.py): jobs followed to the end
(``jobs-status-closed-set``); with ``schema-deprecated-fields`` (checks/schema.py: deprecated
response fields still returned), which follows a render job to read its artifacts and is judged
in the same runs.

Each passes against the bundled mock (whose clock the control plane moves), skips with its
stated reason where it cannot judge, and fails against a mock with the defect it names.
"""

from __future__ import annotations

from conformance.checks.jobs import HELD
from tests.conformance.fake import KEY, FakeDeployment
from tests.conformance.support import OWNER, Served, live_mock, run_quietly

JOBS = "jobs-status-closed-set"
DEPRECATED = "schema-deprecated-fields"


def test_the_job_checks_pass_against_the_mock():
    with live_mock() as mock:
        report = run_quietly(mock_url=mock.base_url, only=[JOBS, DEPRECATED], max_requests=400)
    jobs, deprecated = report.result(JOBS), report.result(DEPRECATED)
    assert jobs.status == "passed", [f.message for f in report.failures]
    # every read judged against the closed set; terminal reads again; the render's artifacts
    assert jobs.passed > 50
    # the footage edit waits for a person to approve its cuts: it never ends by itself
    assert jobs.skipped == {HELD: 1}
    assert deprecated.status == "passed" and deprecated.passed > 10


def test_jobs_that_never_end_within_the_wait_are_skipped_not_passed():
    # The mock without its control plane: its manual clock never moves, so no job ends; the
    # run waits (here: does not sleep) the recommended interval up to --job-wait.
    waits: list[float] = []
    with live_mock() as mock:
        report = run_quietly(
            base_url=mock.base_url, api_key=OWNER, allow_spend=True, only=[JOBS],
            sleep=waits.append, job_wait=60,
        )  # fmt: skip
    result = report.result(JOBS)
    assert result.status == "skipped" and not result.failures
    assert "no job reached a terminal state within --job-wait (60 s)" in result.skipped
    assert waits == [30.0, 30.0]  # the contract's recommended interval (15 to 30 seconds)


def test_without_any_response_to_read_the_deprecated_fields_check_skips():
    with Served(FakeDeployment()) as server:  # every read: capability unavailable
        report = run_quietly(base_url=server.base_url, api_key=KEY, only=[DEPRECATED])
    result = report.result(DEPRECATED)
    assert result.status == "skipped"
    assert "no response read could carry a deprecated field beside its replacement" in (
        result.skipped
    )
    assert "a done render job needs a paid render (--allow-spend)" in result.skipped


def _failures(defect: str, *checks: str) -> dict[str, set[str]]:
    with live_mock(defects=[defect]) as mock:
        report = run_quietly(mock_url=mock.base_url, only=list(checks), max_requests=400)
    assert report.exit_code == 1
    return {c: {f.rule for f in report.result(c).failures} for c in checks}


def test_a_terminal_job_that_reads_in_flight_later_fails():
    assert _failures("job-leaves-terminal", JOBS) == {JOBS: {"terminal-is-final"}}


def test_a_render_without_its_deprecated_video_fails_both_checks():
    assert _failures("deprecated-field-dropped", DEPRECATED, JOBS) == {
        DEPRECATED: {"deprecated-returned"},
        JOBS: {"render-artifacts"},
    }
