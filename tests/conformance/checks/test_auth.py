"""The auth checks (conformance/checks/auth.py: ``auth-forbidden-role``,
``auth-credential-store-outage``), with the two checks that share their options and their runs:
``rate-limit-retry-after`` (checks/ratelimit.py) and ``idempotency-failed-call-frees-key``
(checks/idempotency.py).

Each passes against the clean mock, skips with its reason where it cannot judge, and fails, with
the rule it states, against its defect of tests/defects/ (also listed in
tests/conformance/defects.py for test_defects.py). ``--restricted-key`` and ``--allow-faults``
are the options these checks need.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from conformance.api import RunConfig, UsageError, validate
from conformance.cli import build_parser, config_from
from conformance.mockprocess import fixture_keys, restricted_key
from conformance.outcomes import CheckResult
from conformance.results import Report
from conformance.skips import NEEDS_CONTROL, NEEDS_CREATE, NOTHING_TO_JUDGE
from tests.conformance.support import OWNER, Served, live_mock, run_quietly

EDITOR = "sk_test_acme_editor"
NEW = [
    "auth-forbidden-role",
    "auth-credential-store-outage",
    "idempotency-failed-call-frees-key",
    "rate-limit-retry-after",
    "envelope-retry-after-503",
]


@pytest.fixture(scope="module")
def mock() -> Iterator[Served]:
    with live_mock() as served:
        yield served


@pytest.fixture(autouse=True)
def _fixtures_state(mock: Served) -> None:
    httpx.post(mock.base_url + "/_mock/reset").raise_for_status()


def result(report: Report, name: str) -> CheckResult:
    return next(c for c in report.checks if c.name == name)


def failures(report: Report) -> list[str]:
    return [f"{f.check}/{f.rule}: {f.message}" for f in report.failures]


# -- against the clean mock -------------------------------------------------------------------


def test_every_new_check_passes_against_the_clean_mock_and_judges_something(mock: Served):
    report = run_quietly(mock_url=mock.base_url, only=[*NEW, "rate-limit"], max_requests=800)
    assert report.ok, failures(report)
    for name in NEW:
        assert result(report, name).status == "passed", (name, result(report, name).skipped)
    forbidden = result(report, "auth-forbidden-role")
    assert forbidden.passed >= 7  # three 403s, three "nothing changed", nothing charged
    assert result(report, "rate-limit-retry-after").passed >= 2  # the probe's 429: both rules


def test_the_run_finds_an_editor_key_of_the_owners_workspace_itself():
    found = restricted_key(fixture_keys(), "acme")
    assert found is not None and found.key == EDITOR and found.role == "editor"
    assert restricted_key(fixture_keys(), "globex") is None  # gina is its only member


@pytest.mark.parametrize("name", ["auth-forbidden-role", "auth-credential-store-outage"])
def test_the_lock_and_the_credential_store_are_as_they_were_afterwards(mock: Served, name: str):
    # in the mock's base world, where the test can look
    report = run_quietly(mock_url=mock.base_url, sandbox=False, only=[name], max_requests=200)
    assert result(report, name).status == "passed"
    faults = httpx.get(mock.base_url + "/_mock/faults").json()
    assert faults["credentialStore"] == {"reachable": True}
    governance = httpx.get(mock.base_url + "/_mock/workspaces/acme/governance").json()
    assert governance["governance"]["agentConfigLocked"] is False


# -- where a check cannot judge ------------------------------------------------------------


def test_a_deployment_without_restricted_key_or_fault_hook_skips_with_the_reasons(mock: Served):
    report = run_quietly(
        base_url=mock.base_url, api_key=OWNER, only=NEW, max_requests=100, profile="full"
    )
    assert report.ok, failures(report)
    reasons = {c.name: set(c.skipped) for c in report.checks}
    assert reasons["auth-forbidden-role"] == {"needs --restricted-key"}
    assert reasons["auth-credential-store-outage"] == {
        "needs the bundled mock's control plane (--mock) or --allow-faults"
    }
    assert reasons["idempotency-failed-call-frees-key"] == {NEEDS_CREATE}
    assert reasons["rate-limit-retry-after"] == {NOTHING_TO_JUDGE}  # no 429 was met
    assert reasons["envelope-retry-after-503"] == {NOTHING_TO_JUDGE}  # no 503 was met


def test_a_restricted_key_without_allow_spend_makes_no_governed_call(mock: Served):
    report = run_quietly(
        base_url=mock.base_url,
        api_key=OWNER,
        restricted_key=EDITOR,
        only=["auth-forbidden-role"],
        max_requests=50,
        profile="full",
    )
    check = result(report, "auth-forbidden-role")
    assert check.status == "skipped" and set(check.skipped) == {NEEDS_CREATE}
    assert check.requests == 0


def test_a_deployment_that_locks_its_agent_configuration_is_judged_by_its_answers(mock: Served):
    """Not the mock: the suite cannot switch the lock, so it judges what the deployment answers."""
    lock = {"agentConfigLocked": True}
    httpx.put(mock.base_url + "/_mock/workspaces/acme/governance", json=lock).raise_for_status()
    report = run_quietly(
        base_url=mock.base_url,
        api_key=OWNER,
        restricted_key=EDITOR,
        allow_spend=True,
        only=["auth-forbidden-role"],
        max_requests=100,
        profile="full",
    )
    assert report.ok, failures(report)
    assert result(report, "auth-forbidden-role").passed >= 7


def test_a_deployment_that_does_not_lock_is_a_skip_not_a_pass(mock: Served):
    report = run_quietly(
        base_url=mock.base_url,
        api_key=OWNER,
        restricted_key=EDITOR,
        allow_spend=True,
        only=["auth-forbidden-role"],
        max_requests=100,
        profile="full",
    )
    check = result(report, "auth-forbidden-role")
    assert check.failed == 0
    assert "the restricted key was allowed (the workspace does not lock agent config)" in (
        check.skipped
    )


def test_an_invalid_restricted_key_is_a_setup_problem(mock: Served):
    report = run_quietly(
        mock_url=mock.base_url,
        sandbox=False,  # the mock's base world, where --restricted-key may be given
        restricted_key="sk_test_not_a_key",
        only=["auth-forbidden-role"],
        max_requests=50,
    )
    assert report.exit_code == 2 and not report.checks  # the preflight's, before any check
    assert report.setup_problem and "--restricted-key is refused" in report.setup_problem


def test_allow_faults_uses_a_fault_hook_the_deployment_offers(mock: Served):
    report = run_quietly(
        base_url=mock.base_url,
        api_key=OWNER,
        allow_faults=True,
        only=["auth-credential-store-outage", "envelope-retry-after-503"],
        max_requests=50,
        profile="full",
    )
    assert report.ok, failures(report)
    assert result(report, "auth-credential-store-outage").passed == 4  # two keys, two rules
    assert result(report, "envelope-retry-after-503").passed == 2
    faults = httpx.get(mock.base_url + "/_mock/faults").json()
    assert faults["credentialStore"] == {"reachable": True}  # cleared afterwards


def test_allow_faults_without_a_known_hook_skips(mock: Served):
    class NoControlPlane:
        """A deployment that answers 404 under /_mock/."""

        def __init__(self, upstream: str) -> None:
            self.client = httpx.AsyncClient(base_url=upstream)

        async def __call__(self, scope, receive, send) -> None:  # type: ignore[no-untyped-def]
            if scope["type"] != "http":
                return
            if scope["path"].startswith("/_mock"):
                status, body, headers = 404, b'{"success":false}', {}
            else:
                upstream = await self.client.request(
                    scope["method"],
                    scope["path"],
                    params=scope["query_string"].decode(),
                    headers={k.decode(): v.decode() for k, v in scope["headers"] if k != b"host"},
                )
                status, body = upstream.status_code, upstream.content
                headers = {
                    k: v
                    for k, v in upstream.headers.items()
                    if k not in ("content-length", "content-encoding", "transfer-encoding")
                }
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
                }
            )
            await send({"type": "http.response.body", "body": body})

    with Served(NoControlPlane(mock.base_url)) as deployment:
        report = run_quietly(
            base_url=deployment.base_url,
            api_key=OWNER,
            allow_faults=True,
            only=["auth-credential-store-outage"],
            max_requests=20,
            profile="full",
        )
    check = result(report, "auth-credential-store-outage")
    assert check.status == "skipped" and check.requests == 0
    assert set(check.skipped) == {
        "the deployment offers no known fault hook for its credential store "
        "(PUT /_mock/credential-store)"
    }


def test_a_deployment_judges_the_freed_key_after_a_400_and_skips_the_402_half(mock: Served):
    report = run_quietly(
        base_url=mock.base_url,
        api_key=OWNER,
        allow_spend=True,
        only=["idempotency-failed-call-frees-key"],
        max_requests=100,
        profile="full",
    )
    assert report.ok, failures(report)
    check = result(report, "idempotency-failed-call-frees-key")
    assert check.passed >= 2
    assert set(check.skipped) == {NEEDS_CONTROL + " (402, then a top-up)"}


# -- the options -----------------------------------------------------------------------------


def test_the_command_line_takes_restricted_key_and_allow_faults():
    args = build_parser().parse_args(
        ["run", "--base-url", "https://api.example.com", "--api-key", "k", "--restricted-key",
         "r", "--allow-faults"]
    )  # fmt: skip
    config = config_from(args)
    assert config.restricted_key == "r" and config.allow_faults is True
    assert config_from(build_parser().parse_args(["run", "--mock"])).allow_faults is False


def test_the_restricted_key_must_differ_from_the_api_key():
    config = RunConfig(base_url="https://api.example.com", api_key="k", restricted_key="k")
    with pytest.raises(UsageError, match="--restricted-key"):
        validate(config)


def test_the_restricted_key_is_masked_in_reports(mock: Served):
    report = run_quietly(
        mock_url=mock.base_url, only=["auth-forbidden-role"], max_requests=100, seed=3
    )
    text = repr([c.to_dict() for c in report.checks])
    assert EDITOR not in text


@pytest.mark.parametrize(
    ("defect", "only", "check", "rules"),
    [
        ("forbidden-as-not-found", ["auth-forbidden-role"], "auth-forbidden-role",
         {"forbidden-not-404"}),
        ("outage-answers-401", ["auth-credential-store-outage"], "auth-credential-store-outage",
         {"upstream-unavailable"}),
        ("retry-after-not-integer", ["rate-limit"], "rate-limit-retry-after", {"retry-after"}),
        ("upstream-retry-after-not-integer",
         ["auth-credential-store-outage", "envelope-retry-after-503"],
         "envelope-retry-after-503", {"retry-after"}),
        ("failed-call-holds-key", ["idempotency-failed-call-frees-key"],
         "idempotency-failed-call-frees-key", {"key-freed"}),
    ],
)  # fmt: skip
def test_each_check_fails_on_its_defect_with_the_rule_it_states(
    defect: str, only: list[str], check: str, rules: set[str]
):
    with live_mock(defects=[defect]) as broken:
        report = run_quietly(mock_url=broken.base_url, only=only, max_requests=400)
    failed = result(report, check)
    assert failed.status == "failed", (defect, failed.skipped)
    assert {f.rule for f in failed.failures} == rules
    assert all(f.quote for f in failed.failures)  # the document's words


def test_a_lock_that_lets_the_key_through_fails_allowed_while_locked(mock: Served):
    """As if the lock stopped no one: the "restricted" key given is an admin's, whom the lock
    lets through; the mock is locked by the check, so each 2xx is a failure, never a skip."""
    report = run_quietly(
        mock_url=mock.base_url,
        sandbox=False,
        restricted_key="sk_test_acme_admin",
        only=["auth-forbidden-role"],
        max_requests=100,
    )
    failed = result(report, "auth-forbidden-role")
    assert {f.rule for f in failed.failures} == {"allowed-while-locked"}
    assert len(failed.failures) == 3


def test_the_429_observer_also_catches_a_429_without_retry_after():
    """The overlay's ``rate-limited-without-retry-after`` (listed for the probe ``rate-limit``)
    is caught by the observer too, on the probe's 429."""
    with live_mock(defects=["rate-limited-without-retry-after"]) as broken:
        report = run_quietly(mock_url=broken.base_url, only=["rate-limit"], max_requests=400)
    assert "rate-limit-retry-after" in report.failed_checks()
    failed = result(report, "rate-limit-retry-after").failures
    assert {f.rule for f in failed} == {"retry-after"}
    assert "`Retry-After`" in failed[0].quote
