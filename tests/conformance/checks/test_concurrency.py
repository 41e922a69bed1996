"""Checks that judge calls at once (issue: one Idempotency-Key is one operation even when
retries overlap; concurrent paid calls are all billed).

The overlap is real: ``Target.send_together`` puts every request in the deployment's hands at
the same time (a server that holds each request a moment sees them all in flight). Against the
faithful mock both checks judge and pass; the defects that break them on purpose are caught in
``test_defects.py`` (``overlapping-retries-execute``, ``overlapping-charges-lost``).
"""

from __future__ import annotations

import asyncio

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from conformance.target import Target, Together
from tests.conformance.support import live_mock, run_quietly
from tests.support.serve import Served

CHECKS = ["idempotency-overlapping-retries", "limits-concurrent-billing"]


def test_requests_sent_together_are_in_flight_together():
    in_flight, most = [0], [0]

    async def slow(request: Request) -> JSONResponse:
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        await asyncio.sleep(0.3)
        in_flight[0] -= 1
        return JSONResponse({"seen": request.headers.get("idempotency-key")})

    with Served(Starlette(routes=[Route("/v1/slow", slow, methods=["POST"])])) as server:
        target = Target(server.base_url, "sk_test_key")
        url = server.base_url + "/v1/slow"
        sent = [Together("POST", url, {"Idempotency-Key": f"k{i}"}, b"{}") for i in range(3)]
        answers = target.send_together(sent)
        target.close()
    assert most[0] == 3, "the three requests were in the server's hands at once"
    assert [a.json()["seen"] for a in answers] == ["k0", "k1", "k2"], "answered in order"
    assert [a.index for a in answers] == [1, 2, 3] and target.count == 3
    assert all(a.request_headers["authorization"] == "Bearer sk_test_key" for a in answers)


def test_against_the_mock_both_checks_judge_and_pass():
    with live_mock() as mock:
        report = run_quietly(mock_url=mock.base_url, only=CHECKS, allow_spend=True)
    assert report.exit_code == 0, report.failed_checks()
    for name in CHECKS:
        result = report.result(name)
        assert result is not None and result.judgements > 0 and not result.skipped, name
    rules = report.to_dict()["rules"]
    unjudged = " ".join(entry["rule"] for entry in rules["notJudged"])
    assert rules["judged"] >= 2
    assert "identifies the logical operation" not in unjudged
    assert "that workspace is billed" not in unjudged


def test_against_a_deployment_they_need_allow_spend():
    with live_mock() as mock:  # reached as a deployment: its API only, a key of its fixtures
        report = run_quietly(base_url=mock.base_url, api_key="sk_test_acme_owner", only=CHECKS)
    for name in CHECKS:
        result = report.result(name)
        assert result is not None and result.judgements == 0, name
        assert any("--allow-spend" in reason for reason in result.skipped), result.skipped
