"""The limits checks (conformance/checks/limits.py): quote and charge agree
(``limits-quote-equals-charge``).

It passes against the bundled mock, skips with its stated reason where it cannot judge, and
fails against a deployment (or a mock with the defect it names) that breaks its rule. The run
against the clean mock judges ``pagination-catalog-precedence`` (tests/conformance/checks/
test_pagination.py) in the same run, as it always did.
"""

from __future__ import annotations

from tests.conformance.fake import KEY, FakeDeployment
from tests.conformance.support import Served, live_mock, run_quietly

QUOTE = "limits-quote-equals-charge"
PRECEDENCE = "pagination-catalog-precedence"


def test_the_price_and_paging_checks_pass_against_the_mock():
    with live_mock() as mock:
        report = run_quietly(mock_url=mock.base_url, only=[QUOTE, PRECEDENCE], max_requests=400)
    quote, precedence = report.result(QUOTE), report.result(PRECEDENCE)
    assert quote.status == "passed", [f.message for f in report.failures]
    # film outline, render, edit, remix, 3D from text and from image, asset import
    assert quote.passed == 7
    assert quote.skipped["priced per unit of its body, not at a fixed price"] == 1  # footage
    # the video catalog (a domain found among the channels' niches) and the assets list;
    # variation batches have no list to find an id in
    assert precedence.status == "passed" and precedence.passed == 4
    assert precedence.skipped == {"no id to page under": 1}


def test_a_deployment_that_charges_other_than_it_quotes_fails():
    # The fake quotes media-analysis at 40 credits and charges nothing for an import.
    with Served(FakeDeployment()) as server:
        report = run_quietly(base_url=server.base_url, api_key=KEY, allow_spend=True, only=[QUOTE])
    result = report.result(QUOTE)
    assert report.exit_code == 1 and [f.rule for f in result.failures] == ["charge-equals-quote"]
    assert "quoted 40 credits" in result.failures[0].message
    assert "quote and charge agree" in result.failures[0].quote


def test_without_prices_and_a_balance_quote_and_charge_cannot_be_compared():
    fake = FakeDeployment(capabilities_missing_inferred_fields=True)
    with Served(fake) as server:
        report = run_quietly(base_url=server.base_url, api_key=KEY, allow_spend=True, only=[QUOTE])
    assert report.result(QUOTE).skipped.get(
        "GET /v1/capabilities does not answer prices and a balance"
    )


def test_a_quote_below_the_charge_fails():
    with live_mock(defects=["charge-differs-from-quote"]) as mock:
        report = run_quietly(mock_url=mock.base_url, only=[QUOTE], max_requests=400)
    result = report.result(QUOTE)
    assert {f.rule for f in result.failures} == {"charge-equals-quote"}
    assert len(result.failures) == 7  # every operation priced, each quoted below its charge
