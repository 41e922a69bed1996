"""Proven able to fail: the mock started with each test-only ``--defect`` breaks one rule of the
contract, and a run against it fails, naming the check that caught it.

The defects live in the mock (``mockserver/defects.py``); the list of what each must trip is
``tests/conformance/defects.py``. Both lists must name the same defects.
"""

from __future__ import annotations

import pytest

from mockserver.defects import DEFECTS as MOCK_DEFECTS
from tests.conformance.defects import DEFECTS, Defect
from tests.conformance.support import live_mock, run_quietly


def test_the_mock_and_the_suite_list_the_same_defects():
    assert {d.name for d in DEFECTS} == set(MOCK_DEFECTS)
    assert len(DEFECTS) >= 20


@pytest.mark.parametrize("defect", DEFECTS, ids=[d.name for d in DEFECTS])
def test_the_run_fails_and_names_the_check(defect: Defect):
    with live_mock(defects=frozenset({defect.name})) as mock:
        report = run_quietly(mock_url=mock.base_url, only=list(defect.only), max_requests=400)
    assert report.exit_code == 1, f"{defect.name} went unnoticed"
    assert defect.check in report.failed_checks(), report.failed_checks()


def test_an_unknown_defect_is_refused_at_start():
    import subprocess
    import sys

    failed = subprocess.run(
        [sys.executable, "-m", "mockserver", "--defect", "no-such-defect"],
        capture_output=True,
        text=True,
    )
    assert failed.returncode == 2 and "unknown defect" in failed.stderr
