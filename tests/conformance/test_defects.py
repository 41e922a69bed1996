"""Proven able to fail: the mock built with each test-only defect breaks one rule of the
contract, and a run against it fails, naming the check that caught it.

The defects live in the test overlay (``tests/defects/``, which replaces named seams of the
mock); the list of what each must trip is ``tests/conformance/defects.py``. Both lists must name
the same defects. The product (``mockserver/``, ``conformance/``) never mentions them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import defects as overlay
from tests.conformance.defects import DEFECTS, Defect
from tests.conformance.support import live_mock, run_quietly

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("mockserver", "conformance")


def test_the_mock_and_the_suite_list_the_same_defects():
    assert {d.name for d in DEFECTS} == set(overlay.DEFECTS)
    assert len(DEFECTS) >= 20


def test_each_defect_is_defined_once():
    modules = (
        overlay.wire, overlay.paging, overlay.state, overlay.webhooks, overlay.semantics,
        overlay.workflows, overlay.responses,
    )  # fmt: skip
    assert sum(len(module.DEFECTS) for module in modules) == len(overlay.REGISTRY)


@pytest.mark.parametrize("defect", DEFECTS, ids=[d.name for d in DEFECTS])
def test_the_run_fails_and_names_the_check(defect: Defect):
    with live_mock(defects=[defect.name]) as mock:
        report = run_quietly(mock_url=mock.base_url, only=list(defect.only), max_requests=400)
    assert report.exit_code == 1, f"{defect.name} went unnoticed"
    assert defect.check in report.failed_checks(), report.failed_checks()


def test_an_unknown_defect_is_refused_at_start():
    failed = subprocess.run(
        [sys.executable, "-m", "tests.defects", "--defect", "no-such-defect"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert failed.returncode == 2 and "unknown defect" in failed.stderr


def test_seams_for_refuses_unknown_names():
    with pytest.raises(ValueError, match="unknown defect"):
        overlay.seams_for(["no-such-defect"])


def test_the_product_never_mentions_defects():
    """Test-only defects live in tests/defects/; the product carries no branch for them."""
    mentions = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            if b"defect" in path.read_bytes().lower():
                mentions.append(str(path.relative_to(ROOT)))
    assert mentions == []


def test_every_check_is_proven_able_to_fail_by_a_defect():
    from conformance.checks import all_checks

    proven = {d.check for d in DEFECTS}
    assert [c.name for c in all_checks() if c.name not in proven] == []
