"""A deployment behind a gateway's path (``--base-url http://host/gw``) is judged as the same
deployment at the host's root: every check, with the same verdict, the same number of
judgements and the same skip reasons (issue 23, section 6).

Each case runs the suite twice against one live mock, from the same state (the mock is reset
through its control plane between the runs; the suite itself, aimed at a ``--base-url``, never
uses it): once directly, once through tests/conformance/gateway.py, which serves the mock under
``/gw`` and forwards everything unchanged. The mock's manual clock never moves without its
control plane, and so neither does its rate window: its rate limit is set high enough that
neither run is paced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.cli import main
from conformance.results import Report
from conformance.target import Exchange
from tests.conformance.gateway import PREFIX, PrefixGateway
from tests.conformance.support import GLOBEX, OWNER, Served, free_port, live_mock, run_quietly

SEED = 3
RESTRICTED = "sk_test_acme_viewer"

# The default selection with --allow-spend: its budget ends early in schema-positive (every check
# before it runs whole; those after it are skipped alike, for the budget). The checks after it
# follow links, break path values and walk the model: they get a run of their own.
CASES = {
    "whole-suite": ([], 700),
    "negative-paths": (["schema-negative"], 250),
    "links-and-model": (["schema-stateful", "model-workspace"], 500),
}


def judgements(report: Report) -> dict[str, dict[str, Any]]:
    """What each check judged: its verdict, how many judgements, its skips and broken rules."""
    return {
        c.name: {
            "status": c.status,
            "judgements": c.judgements,
            "skipped": dict(c.skipped),
            "broken": sorted((f.rule, f.occurrences) for f in c.failures),
        }
        for c in report.checks
    }


def differences(direct: Report, other: Report, how: str = f"under {PREFIX}") -> list[str]:
    mine, theirs = judgements(direct), judgements(other)
    return [
        f"{name}: directly {mine[name]}, {how} {theirs.get(name)}"
        for name in mine
        if mine[name] != theirs.get(name)
    ]


def _run_keyed(base_url: str, only: list[str], budget: int) -> Report:
    return run_quietly(
        base_url=base_url,
        api_key=OWNER,
        second_key=GLOBEX,
        restricted_key=RESTRICTED,
        allow_spend=True,
        only=only,
        max_requests=budget,
        seed=SEED,
        sleep=lambda seconds: None,  # the polls for jobs of a real deployment
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_base_path_is_judged_as_the_host_root(case: str):
    only, budget = CASES[case]
    # A deployment's own setting: private callbacks refused (the run has no receiver anyway).
    with (
        live_mock(rate_limit=100_000, allow_private_callbacks=False) as mock,
        Served(PrefixGateway(mock.base_url), log_level="error", lifespan="off") as gateway,
    ):
        direct = _run_keyed(mock.base_url, only, budget)
        httpx.post(f"{mock.base_url}/_mock/reset").raise_for_status()
        prefixed = _run_keyed(gateway.base_url + PREFIX, only, budget)
    assert prefixed.base_url.endswith(PREFIX)
    found = differences(direct, prefixed)
    assert not found, "\n".join(found)
    assert (prefixed.exit_code, prefixed.requests) == (direct.exit_code, direct.requests)
    judged = {c.name for c in direct.checks if c.judgements}  # not a comparison of skips only
    assert set(only) <= judged and len(judged) > len(direct.checks) // 2, judged


def test_the_mock_behind_a_base_path_keeps_its_control_plane_there():
    """``--mock-url http://host/gw``: the control plane (resets, the clock, credits,
    sandboxes) is reached at ``/gw/_mock/``, and every check judges as it does directly."""
    with (
        live_mock() as mock,
        Served(PrefixGateway(mock.base_url), log_level="error", lifespan="off") as gateway,
    ):
        reports = [
            run_quietly(mock_url=url, allow_spend=True, max_requests=800, seed=SEED)
            for url in (mock.base_url, gateway.base_url + PREFIX)
        ]
    direct, prefixed = reports
    found = differences(direct, prefixed)
    assert not found, "\n".join(found)
    needs_control = {
        "auth-key-revocation",
        "limits-payment-required",
        "webhooks-qa-failed-not-published",
    }
    judged = {c.name for c in prefixed.checks if c.judgements}
    assert needs_control <= judged, needs_control - judged


def test_a_receiver_url_with_a_path_gets_its_deliveries():
    """``--receiver-url https://tunnel.example/hooks``, forwarded with its path kept: the
    deliveries to ``/hooks/conformance/...`` are the ones the checks asked for."""
    with live_mock() as mock:
        reports = []
        for path in ("", "/hooks"):
            port = free_port()
            reports.append(
                run_quietly(
                    mock_url=mock.base_url,
                    allow_spend=True,
                    only=["webhooks"],
                    seed=SEED,
                    receiver_listen=f"127.0.0.1:{port}",
                    receiver_url=f"http://127.0.0.1:{port}{path}",
                )
            )
    plain, with_path = reports
    found = differences(plain, with_path, "with /hooks")
    assert not found, "\n".join(found)
    assert (
        with_path.ok
        and next(c for c in with_path.checks if c.name == "webhooks-callback-deliveries").judgements
    )


_SEGMENT = st.text("abcdefgh-_~.%0123456789", min_size=1, max_size=8)


@given(prefix=st.lists(_SEGMENT, max_size=3), rest=st.lists(_SEGMENT, min_size=1, max_size=4))
def test_an_exchange_path_is_the_path_below_the_base_path(prefix: list[str], rest: list[str]):
    base_path = "".join(f"/{s}" for s in prefix)
    path = "".join(f"/{s}" for s in rest)
    assert _exchange(f"https://host{base_path}{path}?q=1", base_path).path == path
    if base_path:  # a path not below it (a segment that merely starts alike) stays whole
        assert _exchange(f"https://host{base_path}x{path}", base_path).path == f"{base_path}x{path}"


def _exchange(url: str, base_path: str) -> Exchange:
    return Exchange(0, "GET", url, {}, b"", 200, {}, b"", 0.0, base_path=base_path)


def test_the_command_line_behind_a_base_path_reads_back_what_it_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # The case, through `conformance run` itself: records-defaults reads back the
    # autopilot it saved, under /gw, instead of the literal /v1/autopilots/{channelId}.
    report = tmp_path / "report.json"
    with (
        live_mock(rate_limit=1_000_000) as mock,
        Served(PrefixGateway(mock.base_url), log_level="error", lifespan="off") as gateway,
        pytest.raises(SystemExit) as ended,
    ):
        main(["run", "--base-url", gateway.base_url + PREFIX, "--api-key", OWNER, "--quiet",
              "--allow-spend", "--seed", str(SEED), "--only", "records-defaults",
              "--report-json", str(report)])  # fmt: skip
    assert ended.value.code == 0, capsys.readouterr().out
    (check,) = json.loads(report.read_text())["checks"]
    assert check["status"] == "passed" and check["judgements"] == 8, check
    assert not any("not read back" in reason for reason in check["skipped"]), check["skipped"]
