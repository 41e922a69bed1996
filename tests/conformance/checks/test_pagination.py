"""The pagination checks (conformance/checks/pagination.py): a cursor wins over the deprecated
offset (``pagination-catalog-precedence``).

It skips with its stated reason where it cannot judge, and fails against a mock with the
defect it names. Its pass against the clean mock is judged in the same run as the quote check's
(tests/conformance/checks/test_limits.py).
"""

from __future__ import annotations

from tests.conformance.fake import KEY, FakeDeployment
from tests.conformance.support import Served, live_mock, run_quietly

PRECEDENCE = "pagination-catalog-precedence"


def test_without_a_list_to_page_the_precedence_check_skips():
    with Served(FakeDeployment()) as server:
        report = run_quietly(base_url=server.base_url, api_key=KEY, only=[PRECEDENCE])
    result = report.result(PRECEDENCE)
    assert result.status == "skipped"
    assert "no list with a deprecated paging parameter could be paged" in result.skipped
    # under the contract profile, that the cursor wins over `after` is inferred: not held
    assert result.skipped["that the cursor wins is inferred for this list"] == 2


def test_an_offset_that_wins_over_the_cursor_fails():
    with live_mock(defects=["offset-wins-over-cursor"]) as mock:
        report = run_quietly(mock_url=mock.base_url, only=[PRECEDENCE], max_requests=400)
    result = report.result(PRECEDENCE)
    assert [f.rule for f in result.failures] == ["cursor-wins"]  # offset alone still pages
    assert "(the first page)" in result.failures[0].message
    assert "`cursor` wins" in result.failures[0].quote
