"""The kit's own deployment test: the suite against the bundled mock started as a deployment
would run, with the README's recipe, finds nothing wrong and judges what it should.

The mock serves the stated rate limit (100 requests a minute per caller), accepts private
callbacks (the suite's receiver is on loopback) and is reached only through the API
(``--base-url``: the suite never uses its control plane). Its clock is the manual one, moved by
the run's ``sleep`` (tests/conformance/test_real_clock.py ``Timeline``): the run's time is
simulated, so ten minutes at the stated limit take seconds here, and the run's own ``clock`` (what
its time budget is counted on) is that simulated time. ``python bench/deployment.py`` runs the
same recipe for real, on the real clock.
"""

from __future__ import annotations

from conformance.api import RunConfig, run
from conformance.coverage import rule_coverage
from mockserver.testing import MockServer
from tests.conformance.support import GLOBEX, OWNER, free_port, live_mock
from tests.conformance.test_real_clock import Timeline

EDITOR = "sk_test_acme_editor"
TIME_BUDGET = 600.0  # --time-budget 10m
JUDGED_AT_LEAST = 90.0  # per cent of the judgeable rules (issue 23)


def test_a_recipe_run_against_the_bundled_mock_at_the_stated_limit_passes_and_judges():
    port = free_port()
    with live_mock() as mock:  # the stated rate limit: the fixtures' and the contract's 100
        timeline = Timeline(MockServer(mock.base_url, []))
        report = run(
            RunConfig(
                base_url=mock.base_url,
                api_key=OWNER,
                second_key=GLOBEX,
                restricted_key=EDITOR,
                allow_spend=True,
                time_budget=TIME_BUDGET,
                seed=1,
                receiver_listen=f"127.0.0.1:{port}",
                receiver_url=f"http://127.0.0.1:{port}",
                sleep=timeline.sleep,
                clock=lambda: timeline.now,
            )
        )
    failures = [f"{f.check}/{f.rule}: {f.message}" for f in report.failures]
    assert report.exit_code == 0 and not failures, failures or report.setup_problem
    coverage = rule_coverage(report)
    missed = [f"[{n.category}] {n.rule.text}" for n in coverage.not_judged]
    assert coverage.percent >= JUDGED_AT_LEAST, missed
    assert timeline.now <= TIME_BUDGET  # the run ended within its time budget
