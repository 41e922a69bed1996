"""Proven able to fail, today: a proxy in front of the mock breaks one rule at a time, and the
suite fails, naming the check that caught it. (The same defects, built into the mock, are run by
``test_defects.py``.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conformance.defects import DEFECTS, Defect, DefectProxy
from tests.conformance.support import Served, live_mock, run_quietly

PROXIED = [d for d in DEFECTS if d.name in DefectProxy.PROXIED]


@pytest.fixture(scope="module")
def proxy() -> Iterator[tuple[DefectProxy, str]]:
    with live_mock() as mock:
        proxy = DefectProxy(mock.base_url)
        with Served(proxy) as served:
            yield proxy, served.base_url


def test_without_a_defect_the_proxied_mock_passes(proxy: tuple[DefectProxy, str]):
    app, url = proxy
    app.defect = ""
    expensive = {"rate-limit", "schema-negative"}  # proven to pass by test_mock.py
    only = sorted({name for d in PROXIED for name in d.only} - expensive)
    report = run_quietly(mock_url=url, only=only, max_requests=900)
    assert report.ok, [f"{f.check}: {f.message}" for f in report.failures]


@pytest.mark.parametrize("defect", PROXIED, ids=[d.name for d in PROXIED])
def test_the_suite_names_the_check_a_defect_breaks(defect: Defect, proxy: tuple[DefectProxy, str]):
    app, url = proxy
    app.defect = defect.name
    try:
        report = run_quietly(mock_url=url, only=list(defect.only), max_requests=400)
    finally:
        app.defect = ""
    assert report.exit_code == 1, f"{defect.name} went unnoticed"
    assert defect.check in report.failed_checks(), report.failed_checks()
