"""``mockserver proxy`` through its command line, as a real process in front of the bundled mock
(two of its deliberate defects on: an unknown path answered ``200`` with an empty body, and a
webhook subscription's secret echoed back): every exchange is in the proxy's request journal
(``GET /_mock/requests``), marked proxied, with the judge's findings attached when they arrive,
the journal's filters work on them, and the inspector's Requests view shows the findings inline.
Every journal answer is checked against the control plane's document."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conformance.proxying import Proxy
from tests.conformance.support import OWNER, live_mock
from tests.inspector.conftest import VIEWPORT, Watched, screenshot
from tests.support.control_check import CheckedControl
from tests.support.serve import Served

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips, saying why (under CI, fails)
    expect = None

AUTH = {"Authorization": f"Bearer {OWNER}"}
SECRET = "proxied-subscription-secret-" + "s" * 24
HOOK = "http://127.0.0.1:9/in"  # the upstream allows private callbacks (no DNS here)
DEFECTS = ["not-found-as-empty-200", "secret-echoed"]


class InspectedProxy(Proxy):
    """``mockserver proxy`` as a real process (see tests/conformance/proxying.py)."""

    PROGRAM = ("mockserver", "proxy")


@pytest.fixture(scope="module")
def upstream() -> Iterator[Served]:
    with live_mock(defects=DEFECTS) as mock:
        yield mock


def journal(control: CheckedControl, **filters: Any) -> dict[str, Any]:
    """The proxy's journal (checked against the control plane's document)."""
    answer = control.call("GET", "/requests", **filters)
    assert isinstance(answer, dict)
    return answer


def settled(control: CheckedControl, count: int, **filters: Any) -> list[dict[str, Any]]:
    """The journal once ``count`` exchanges are in it and every verdict has arrived."""
    deadline = time.monotonic() + 60
    while True:
        answer = journal(control, **filters)
        entries = answer["requests"]
        if len(entries) >= count and answer["settledSeq"] == answer["latestSeq"]:
            assert all(e["proxied"]["verdict"] != "pending" for e in entries)
            return list(entries)
        assert time.monotonic() < deadline, f"not settled: {answer}"
        time.sleep(0.1)


def test_each_exchange_is_journalled_as_proxied_with_its_findings(upstream: Served, tmp_path: Path):
    with (
        InspectedProxy(upstream.base_url, tmp_path, "--profile", "full") as proxy,
        httpx.Client(base_url=proxy.url, timeout=30) as client,
    ):
        control = CheckedControl(client)
        index = control.call("GET", "/")
        assert index["proxy"] == {"upstream": upstream.base_url}
        assert index["tokenRequired"] is False  # on loopback, as the mock's own
        served = {o["operationId"] for o in index["operations"]}
        assert "listRequests" in served and "reset" not in served
        good = client.get("/v1/capabilities", headers=AUTH)
        assert good.status_code == 200
        refused = client.get("/v1/projects", params={"limit": 0}, headers=AUTH)
        assert refused.status_code == 400
        wrong = client.get("/v1/no-such-thing", headers=AUTH)  # the upstream answers 200, empty
        assert wrong.status_code == 200 and wrong.content == b""
        subscribed = client.post(
            "/v1/webhook-subscriptions",
            json={"url": HOOK, "events": ["job.progressed"], "secret": SECRET},
            headers={**AUTH, "Idempotency-Key": "proxied-1"},
        )
        assert subscribed.status_code == 200, subscribed.text
        assert subscribed.json()["subscription"]["secret"] == SECRET  # the defect: echoed
        # the rest of the control plane is not this port's: it is forwarded (to the mock's)
        assert client.get("/_mock/clock").json()["mode"] == "manual"

        entries = settled(control, 5)
        by_path = {e["path"]: e for e in entries}
        for entry in entries:
            assert entry["proxied"]["upstream"] == upstream.base_url
            assert entry["keyId"] is None and entry["member"] is None  # the deployment's to know
        assert by_path["/_mock/clock"]["proxied"]["verdict"] == "outside"

        capabilities = by_path["/v1/capabilities"]
        assert capabilities["operationId"] == "getCapabilities"
        assert capabilities["proxied"] == {
            "upstream": upstream.base_url,
            "verdict": "judged",
            "findings": [],
            "fallback": None,
        }
        assert capabilities["requestId"] == good.headers["x-request-id"]
        assert capabilities["requestHeaders"]["authorization"].startswith("Bearer key_")
        assert capabilities["responseBody"]["success"] is True

        projects = by_path["/v1/projects"]
        assert projects["operationId"] == "listProjects"
        assert (projects["status"], projects["code"]) == (400, "invalid_request")
        assert projects["query"] == {"limit": ["0"]}
        assert projects["requestId"] == refused.headers["x-request-id"]
        [client_finding] = projects["proxied"]["findings"]
        assert client_finding["rule"] == "schema-negative" and client_finding["side"] == "client"
        assert "limit" in client_finding["message"]

        unknown = by_path["/v1/no-such-thing"]
        assert unknown["operationId"] is None and unknown["status"] == 200
        found = unknown["proxied"]["findings"]
        assert found and {f["side"] for f in found} == {"deployment"}, found

        subscription = by_path["/v1/webhook-subscriptions"]
        assert subscription["operationId"] == "createWebhookSubscription"
        assert subscription["requestBody"]["secret"] == "[secret]"  # the journal's own redaction
        assert subscription["responseBody"]["subscription"]["secret"] == "[redacted]"
        assert SECRET not in str(journal(control))  # never journalled, either way

        # the journal's filters, on proxied exchanges
        assert [e["path"] for e in journal(control, operationId="listProjects")["requests"]] == [
            "/v1/projects"
        ]
        assert [e["path"] for e in journal(control, statusClass="4xx")["requests"]] == [
            "/v1/projects"
        ]
        assert [e["path"] for e in journal(control, findings="client")["requests"]] == [
            "/v1/projects"
        ]
        with_findings = {e["path"] for e in journal(control, findings="any")["requests"]}
        assert "/v1/projects" in with_findings and "/v1/no-such-thing" in with_findings
        assert "/v1/capabilities" not in with_findings
        assert control.request("GET", "/requests", findings="maybe").status_code == 400
    assert "FINDING client schema-negative listProjects" in proxy.output
    assert SECRET not in proxy.output
    # the same proxy: its reports and exit status are conformance proxy's
    assert proxy.status == 1  # --fail-on any (the default)
    assert proxy.report["totals"]["client"] == 1 and proxy.report["totals"]["deployment"] > 0


def test_the_journal_needs_the_control_token_the_mock_would(upstream: Served, tmp_path: Path):
    token = "proxy-control-token"
    with (
        InspectedProxy(upstream.base_url, tmp_path, "--control-token", token) as proxy,
        httpx.Client(base_url=proxy.url, timeout=30) as client,
    ):
        assert client.get("/v1/capabilities", headers=AUTH).status_code == 200
        refused = CheckedControl(client).request("GET", "/requests")
        assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
        assert CheckedControl(client).call("GET", "/")["tokenRequired"] is True
        assert client.get("/_mock/ui").status_code == 200  # the page asks for the token
        entries = settled(CheckedControl(client, token), 1)
        assert [e["operationId"] for e in entries] == ["getCapabilities"]
    assert token not in proxy.output


def test_off_loopback_the_token_is_made_for_the_run(upstream: Served, tmp_path: Path):
    with InspectedProxy(upstream.base_url, tmp_path, "--listen", "0.0.0.0:0") as proxy:
        port = httpx.URL(proxy.url).port
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            said = [line for line in proxy.lines if "control token:" in line]
            assert said, proxy.output
            token = said[0].split("control token:", 1)[1].split()[0]
            assert CheckedControl(client).request("GET", "/requests").status_code == 401
            assert journal(CheckedControl(client, token))["requests"] == []


@contextmanager
def judge_stopped(proxy: InspectedProxy) -> Iterator[None]:
    """The proxy's judge (its only child process) stopped for the block (SIGSTOP, SIGCONT)."""
    pid = proxy.process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert len(children) == 1, children
    judge = int(children[0])
    os.kill(judge, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(judge, signal.SIGCONT)


def test_the_requests_view_shows_the_findings_inline(
    browser: Any, upstream: Served, tmp_path: Path
):
    with (
        InspectedProxy(upstream.base_url, tmp_path, "--profile", "full") as proxy,
        httpx.Client(base_url=proxy.url, timeout=30) as client,
    ):
        context = browser.new_context(viewport=VIEWPORT, base_url=proxy.url)
        try:
            watched = Watched(context.new_page())
            page = watched.page
            page.goto("/_mock/ui")
            expect(page.locator("#app")).to_be_visible()
            expect(page.locator("#proxy-note")).to_contain_text(upstream.base_url)
            expect(page.locator('.tabs [data-view="jobs"]')).to_be_hidden()
            rows = page.locator("#requests tbody tr")
            with judge_stopped(proxy):  # the exchanges show before their verdicts
                assert client.get("/v1/capabilities", headers=AUTH).status_code == 200
                refused = client.get("/v1/projects", params={"limit": 0}, headers=AUTH)
                assert refused.status_code == 400
                expect(rows).to_have_count(2)  # without a reload
                expect(rows.locator(".verdict-pending")).to_have_count(2)
            row = rows.filter(has_text="listProjects")  # then the verdicts, asked for again
            expect(row.locator(".verdict-found")).to_have_text("1 finding")
            expect(row.locator(".finding-line")).to_contain_text("client schema-negative:")
            expect(rows.filter(has_text="getCapabilities")).to_contain_text("no finding")
            row.click()
            exchange = page.locator("#exchange")
            expect(exchange).to_contain_text(f"Forwarded to {upstream.base_url}")
            expect(exchange.locator(".findings")).to_contain_text("limit")
            expect(exchange).to_contain_text(refused.headers["x-request-id"])
            screenshot(page, "proxy")
            page.locator("#filter-findings").select_option("client")
            expect(rows).to_have_count(1)
            expect(rows.first).to_contain_text("listProjects")
            assert watched.unexpected_errors() == [], "the page logged errors"
            assert watched.check_answers() > 0
        finally:
            context.close()


def test_with_a_control_token_the_page_asks_for_it_then_shows_the_exchanges(
    browser: Any, upstream: Served, tmp_path: Path
):
    token = "proxy-page-token"
    with (
        InspectedProxy(upstream.base_url, tmp_path, "--control-token", token) as proxy,
        httpx.Client(base_url=proxy.url, timeout=30) as client,
    ):
        assert client.get("/v1/capabilities", headers=AUTH).status_code == 200
        context = browser.new_context(viewport=VIEWPORT, base_url=proxy.url)
        try:
            watched = Watched(context.new_page())
            watched.allowed.append("status of 401")  # the browser logs the refused token
            page = watched.page
            page.goto("/_mock/ui")
            expect(page.locator("#login")).to_be_visible()
            page.locator("#token").fill("not-the-token")
            page.locator("#login-form button").click()
            expect(page.locator("#login-error")).to_contain_text("refused")
            page.locator("#token").fill(token)
            page.locator("#login-form button").click()
            expect(page.locator("#app")).to_be_visible()
            expect(page.locator("#requests tbody tr")).to_have_count(1)
            expect(page.locator("#requests tbody tr")).to_contain_text("no finding")
            assert watched.unexpected_errors() == [], "the page logged errors"
            assert watched.check_answers() > 0
        finally:
            context.close()


async def _no_routes(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A deployment still being built: every path is a framework's 404."""
    if scope["type"] != "http":
        return
    body = b'{"detail":"Not Found"}'
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 404, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def test_an_exchange_the_bundled_mock_answered_is_marked_in_the_journal(tmp_path: Path):
    with (
        Served(_no_routes) as bare,
        InspectedProxy(bare.base_url, tmp_path, "--fallback-mock") as proxy,
        httpx.Client(base_url=proxy.url, timeout=30) as client,
    ):
        control = CheckedControl(client)
        answered = client.get("/v1/capabilities", headers={"Authorization": "Bearer sk_theirs"})
        assert answered.status_code == 200 and answered.json()["success"] is True
        outside = client.get("/health")  # no operation: the upstream's own 404, passed on
        assert outside.status_code == 404
        entries = {e["path"]: e for e in settled(control, 2)}
        capabilities = entries["/v1/capabilities"]["proxied"]
        assert capabilities["fallback"] == (
            "answered by the bundled mock (upstream said 404 for the route)"
        )
        assert capabilities["verdict"] == "judged" and capabilities["findings"] == []
        assert entries["/health"]["proxied"]["fallback"] is None
