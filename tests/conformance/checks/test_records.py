"""The records checks: a PATCH changes only the fields sent; products ``["none"]`` is not ``[]``.

Each passes against the bundled mock, skips with its stated reason where nothing can be changed
(a deployment that serves none of it), and fails against a mock with the defect it names.
"""

from __future__ import annotations

from tests.conformance.fake import KEY, FakeDeployment
from tests.conformance.support import Served, live_mock, run_quietly

PARTIAL = "records-partial-update"
PRODUCTS = "records-products-none"


def test_the_records_checks_pass_against_the_mock():
    with live_mock() as mock:
        report = run_quietly(mock_url=mock.base_url, only=[PARTIAL, PRODUCTS], max_requests=400)
    partial, products = report.result(PARTIAL), report.result(PRODUCTS)
    assert partial.status == "passed", [f.message for f in report.failures]
    # four PATCH operations (campaigns, community campaigns, channels, subscriptions), each
    # with at least one field changed: the field sent and the fields not sent, judged
    assert partial.passed >= 8 and not partial.skipped
    assert products.status == "passed" and products.passed == 5  # 2 accepted, 2 kept, differ


def test_without_a_record_to_change_the_records_checks_skip():
    with Served(FakeDeployment()) as server:  # every list and create: capability unavailable
        report = run_quietly(
            base_url=server.base_url, api_key=KEY, allow_spend=True, only=[PARTIAL, PRODUCTS]
        )
    partial, products = report.result(PARTIAL), report.result(PRODUCTS)
    assert partial.status == "skipped" and "no record to update" in partial.skipped
    assert products.status == "skipped" and products.skipped == {"no record to update": 1}


def test_without_allow_spend_the_records_checks_change_nothing():
    with Served(FakeDeployment()) as server:
        report = run_quietly(base_url=server.base_url, api_key=KEY, only=[PARTIAL, PRODUCTS])
    reason = "creates or changes resources: needs --allow-spend"
    assert report.result(PARTIAL).skipped == {reason: 1}
    assert report.result(PRODUCTS).skipped == {reason: 1}


def _failed_rules(defect: str, check: str) -> tuple[set[str], list[str]]:
    with live_mock(defects=[defect]) as mock:
        report = run_quietly(mock_url=mock.base_url, only=[check], max_requests=400)
    result = report.result(check)
    assert report.exit_code == 1 and result.status == "failed"
    return {f.rule for f in result.failures}, [f.quote for f in result.failures]


def test_a_patch_that_empties_the_fields_not_sent_fails():
    rules, quotes = _failed_rules("partial-update-clears-unsent", PARTIAL)
    assert rules == {"unsent-fields-unchanged"}  # the sent field itself still reads back
    assert all("leaves description, connected accounts, platforms" in q for q in quotes)


def test_products_none_kept_as_nothing_bound_fails():
    rules, quotes = _failed_rules("products-none-as-empty", PRODUCTS)
    assert rules == {"kept-as-sent", "none-differs-from-empty"}
    assert all("The two differ in meaning" in q for q in quotes)
