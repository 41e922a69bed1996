"""The conformance suite as pytest tests: one test per check.

``pytest --conformance-base-url URL --conformance-api-key KEY [...]`` (or ``--conformance-mock``)
runs the suite once, through :func:`conformance.api.run`, and reports each check as a test:
passed, failed (the first few failures of each rule in full: the rule, the contract's words,
the request, the response, a curl command and the seed; the rest counted) or skipped (with the
reasons); the terminal summary ends with the run's rule coverage (how many of the judgeable
rules were judged, and why the others were not). Without one of those two options the plugin
adds its options and nothing else: no test, no request.

Registered through the ``pytest11`` entry point, so any pytest in an environment holding the kit
loads it, also where only the mock is installed (no ``conformance`` extra): at load it imports
nothing but pytest, and only a run asked for needs the extra (without it, a one-line usage error
naming the extra). Before the entry point is installed, load it with
``-p conformance.pytest_plugin``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the suite is imported only when a run is asked for
    from conformance.api import RunConfig
    from conformance.checks import Check
    from conformance.results import Report

_REPORT = pytest.StashKey["Report | BaseException"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "conformance suite (cgcas-kit)")
    group.addoption("--conformance-base-url", metavar="URL", help="the deployment to test")
    group.addoption("--conformance-api-key", metavar="KEY", help="a workspace API key")
    group.addoption("--conformance-second-key", metavar="KEY", help="a key of another workspace")
    group.addoption(
        "--conformance-mock", action="store_true", help="start the bundled mock and test it"
    )
    group.addoption("--conformance-profile", choices=("contract", "full"))
    group.addoption("--conformance-allow-spend", action="store_true")
    group.addoption("--conformance-max-requests", type=int, metavar="N")
    group.addoption("--conformance-seed", type=int, metavar="N")
    group.addoption("--conformance-only", nargs="+", default=[], metavar="CHECK")
    group.addoption("--conformance-skip", nargs="+", default=[], metavar="CHECK")
    group.addoption("--conformance-receiver-listen", default="127.0.0.1:0", metavar="HOST:PORT")
    group.addoption("--conformance-receiver-url", metavar="PUBLIC_URL")
    group.addoption("--conformance-report-json", metavar="PATH")
    group.addoption("--conformance-report-html", metavar="PATH")


def enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("conformance_base_url") or config.getoption("conformance_mock"))


def run_config(config: pytest.Config) -> RunConfig:
    from conformance.api import RunConfig

    option = config.getoption
    return RunConfig(
        base_url=option("conformance_base_url"),
        api_key=option("conformance_api_key"),
        second_key=option("conformance_second_key"),
        mock=bool(option("conformance_mock")),
        profile=option("conformance_profile"),
        allow_spend=bool(option("conformance_allow_spend")),
        max_requests=option("conformance_max_requests"),
        seed=option("conformance_seed"),
        only=list(option("conformance_only")),
        skip=list(option("conformance_skip")),
        receiver_listen=option("conformance_receiver_listen"),
        receiver_url=option("conformance_receiver_url"),
        report_json=option("conformance_report_json"),
        report_html=option("conformance_report_html"),
    )


class ConformanceFailure(Exception):
    pass


class ConformanceCollector(pytest.Collector):
    def collect(self) -> Iterator[pytest.Item]:
        from conformance.api import UsageError, validate

        try:
            checks = validate(run_config(self.config))
        except UsageError as exc:
            raise pytest.UsageError(f"conformance: {exc}") from None
        for check in checks:
            yield CheckItem.from_parent(self, name=check.name, check=check)


class CheckItem(pytest.Item):
    def __init__(self, *, check: Check, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check

    def _report(self) -> Report:
        from conformance.api import TargetUnreachable, UsageError, run

        stash = self.config.stash
        if _REPORT not in stash:
            try:
                stash[_REPORT] = run(run_config(self.config))
            except (UsageError, TargetUnreachable) as exc:
                stash[_REPORT] = exc
        found = stash[_REPORT]
        if isinstance(found, BaseException):
            raise ConformanceFailure(f"the suite could not run: {found}")
        if found.setup_problem:
            raise ConformanceFailure(
                f"the suite could not run: setup problem: {found.setup_problem}"
            )
        return found

    def runtest(self) -> None:
        report = self._report()
        result = report.result(self.check.name)
        if result is None or result.status == "skipped":
            reason = result.skip_summary() if result else "not run"
            pytest.skip(reason or "nothing to judge")
        if result.status == "failed":
            from conformance.reports import failures_text

            raise ConformanceFailure(failures_text(report, result.failures))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ConformanceFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "conformance", None, f"conformance: {self.check.name}: {self.check.description}"


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if not enabled(config):
        return
    from conformance.cli import missing_extra, not_installed

    if missing := missing_extra():
        raise pytest.UsageError(not_installed(missing))
    collector = ConformanceCollector.from_parent(session, name="conformance", nodeid="conformance")
    items.extend(collector.collect())


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The run's rule coverage, as ``conformance run`` ends: how many of the judgeable rules
    were judged, and how many were not, by why."""
    found = config.stash.get(_REPORT, None)
    if found is None or isinstance(found, BaseException):
        return
    from conformance.coverage import rule_coverage

    terminalreporter.write_sep("-", "conformance rule coverage")
    terminalreporter.write_line(f"{found.verdict.upper()}: {rule_coverage(found).headline()}")
