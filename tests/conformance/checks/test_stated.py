"""The checks of small stated rules (conformance/checks/stated.py): each passes against the clean
mock, fails against the mock with its test-only defect (tests/defects/), and skips, with the
reason it states, where it cannot judge."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conformance.checks.stated import NEEDS_RESTRICTED
from conformance.checks.webhooks import NEEDS_RECEIVER
from conformance.contract import bundled_document
from conformance.outcomes import CheckResult
from conformance.results import Report
from conformance.skips import NEEDS_CONTROL, NEEDS_SPEND
from tests.conformance.fake import KEY, FakeDeployment
from tests.conformance.support import GLOBEX, OWNER, Served, live_mock, run_quietly

VIEWER = "sk_test_acme_viewer"

#: each check of stated.py -> the defect that breaks its rule (tests/defects/)
DEFECT_OF = {
    "limits-capabilities-free": "capabilities-billed",
    "auth-openapi-not-rate-limited": "openapi-rate-limited",
    "auth-unowned-project": "unowned-project-filed",
    "auth-usage-without-spend": "usage-needs-spend",
    "auth-key-revocation": "revocation-ignored",
    "webhooks-subscription-coverage": "render-delivered-to-subscriptions",
    "webhooks-qa-failed-not-published": "qa-failed-artifacts",
}
CHECKS = list(DEFECT_OF)


@pytest.fixture(scope="module")
def mock() -> Iterator[Served]:
    with live_mock() as served:
        yield served


def _result(report: Report, name: str) -> CheckResult:
    result = report.result(name)
    assert result is not None, [c.name for c in report.checks]
    return result


@pytest.mark.parametrize("name", CHECKS)
def test_passes_against_the_clean_mock(mock: Served, name: str) -> None:
    report = run_quietly(mock_url=mock.base_url, only=[name], max_requests=400)
    result = _result(report, name)
    assert result.failures == [], [f.message for f in result.failures]
    assert result.passed > 0 and not result.skipped, result.skipped


@pytest.mark.parametrize("name", CHECKS)
def test_fails_against_its_defect(name: str) -> None:
    with live_mock(defects=[DEFECT_OF[name]]) as broken:
        report = run_quietly(mock_url=broken.base_url, only=[name], max_requests=400)
    assert report.exit_code == 1, f"{DEFECT_OF[name]} went unnoticed"
    assert _result(report, name).failures, report.failed_checks()


# -- the same checks against the mock seen as a deployment (no control plane) -------------


def test_the_checks_that_need_no_control_plane_pass_against_a_deployment(mock: Served) -> None:
    only = ["limits-capabilities-free", "auth-openapi-not-rate-limited", "auth-unowned-project"]
    report = run_quietly(
        base_url=mock.base_url, api_key=OWNER, second_key=GLOBEX, allow_spend=True, only=only
    )
    for name in only:
        result = _result(report, name)
        assert result.failures == [] and result.passed > 0, (name, result.skipped)
    # with --second-key the project is a real one of the other workspace, whose balance is read
    assert _result(report, "auth-unowned-project").passed == 3


def test_unowned_project_without_a_second_key_uses_an_id_that_does_not_exist(mock: Served) -> None:
    name = "auth-unowned-project"
    report = run_quietly(base_url=mock.base_url, api_key=OWNER, allow_spend=True, only=[name])
    result = _result(report, name)
    assert result.passed == 2 and not result.failures and not result.skipped


def test_usage_is_read_with_the_restricted_key_of_a_deployment(mock: Served) -> None:
    report = run_quietly(
        base_url=mock.base_url,
        api_key=OWNER,
        restricted_key=VIEWER,
        only=["auth-usage-without-spend"],
    )
    result = _result(report, "auth-usage-without-spend")
    assert result.failures == [] and result.passed == 1


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("auth-usage-without-spend", NEEDS_RESTRICTED),
        ("auth-key-revocation", NEEDS_CONTROL),
        ("webhooks-qa-failed-not-published", NEEDS_CONTROL),
        ("webhooks-subscription-coverage", NEEDS_RECEIVER),
    ],
)
def test_skips_with_its_reason_against_a_deployment(mock: Served, name: str, reason: str) -> None:
    report = run_quietly(base_url=mock.base_url, api_key=OWNER, allow_spend=True, only=[name])
    result = _result(report, name)
    assert result.skipped == {reason: 1} and result.passed == 0 and not result.failures


def test_unowned_project_needs_allow_spend_against_a_deployment(mock: Served) -> None:
    report = run_quietly(base_url=mock.base_url, api_key=OWNER, only=["auth-unowned-project"])
    assert _result(report, "auth-unowned-project").skipped == {NEEDS_SPEND: 1}


def test_capabilities_free_skips_without_a_balance() -> None:
    with Served(FakeDeployment(capabilities_missing_inferred_fields=True)) as server:
        report = run_quietly(
            base_url=server.base_url, api_key=KEY, only=["limits-capabilities-free"]
        )
    assert _result(report, "limits-capabilities-free").skipped == {
        "GET /v1/capabilities does not answer a balance": 1
    }


def test_openapi_exemption_skips_when_remaining_never_moves() -> None:
    """A deployment whose x-ratelimit-remaining never drops gives nothing to measure against."""
    name = "auth-openapi-not-rate-limited"
    with Served(FakeDeployment()) as server:
        report = run_quietly(base_url=server.base_url, api_key=KEY, only=[name])
    assert _result(report, name).skipped == {
        "the rate-limit window reset during every measurement": 1
    }


def test_openapi_exemption_skips_when_the_contract_exempts_nothing(mock: Served) -> None:
    document = bundled_document()
    document["x-rate-limit"].pop("exempt")
    name = "auth-openapi-not-rate-limited"
    report = run_quietly(mock_url=mock.base_url, document=document, only=[name])
    assert _result(report, name).skipped == {
        "the contract exempts no operation from the rate limit": 1
    }
