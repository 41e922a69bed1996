"""The model-based check ``model-workspace``: it passes against the clean mock, makes the same
requests for the same seed, keeps to the request budget, and fails, naming the model's rule and
giving the shrunk sequence as curl commands, against a deployment that breaks one of its rules.

The broken deployments here are a wire proxy in front of the mock (:class:`ModelDefectProxy`),
each defect breaking one rule of the model on the wire.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

import httpx
import pytest

from conformance.api import RunConfig, run
from conformance.results import CheckResult, Report
from tests.conformance.support import Served, live_mock, run_quietly

ONLY = ["model-workspace"]
TERMINAL = ("done", "cancelled", "failed", "qa_failed")


def model_result(report: Report) -> CheckResult:
    return next(c for c in report.checks if c.name == "model-workspace")


class ModelDefectProxy:
    """An ASGI proxy in front of a live mock that breaks one rule of the model on the wire."""

    DEFECTS: ClassVar[dict[str, str]] = {
        "patch-writes-unsent": "partial-update",  # a PATCH also changes description
        "products-none-as-empty": "products-none",  # products ["none"] reads back []
        "quote-differs-from-charge": "ledger",  # the catalogue quotes one more than it charges
        "job-leaves-terminal": "terminal-final",  # a terminal job reads running again
        "failed-call-holds-key": "key-freed",  # a refused call's key answers its refusal again
    }

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.defect = ""
        self.terminal: set[str] = set()
        self.refused: dict[str, tuple[int, bytes]] = {}
        self.client: httpx.AsyncClient | None = None  # made on the server's event loop

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in scope["headers"]
            if k.lower() != b"host"
        }
        method, path = scope["method"], scope["path"]
        query = scope["query_string"].decode("latin-1")
        key = headers.get("idempotency-key") or headers.get("Idempotency-Key")
        if self.defect == "failed-call-holds-key" and key in self.refused:
            status, content = self.refused[key]
            await _answer(send, status, {"content-type": "application/json"}, content)
            return
        if self.defect == "patch-writes-unsent" and method == "PATCH":
            changes = json.loads(body or b"{}")
            if isinstance(changes, dict) and "description" not in changes:
                changes["description"] = "changed by the proxy"
                body = json.dumps(changes).encode()
                headers["content-length"] = str(len(body))
        if self.client is None:
            self.client = httpx.AsyncClient(timeout=60)
        url = self.upstream + path + ("?" + query if query else "")
        response = await self.client.request(method, url, headers=headers, content=body)
        out = {
            k: v
            for k, v in response.headers.items()
            if k not in ("content-length", "content-encoding", "transfer-encoding")
        }
        content = self.after(method, path, response.status_code, response.content)
        if self.defect == "failed-call-holds-key" and key and 400 <= response.status_code < 500:
            self.refused[key] = (response.status_code, content)
        await _answer(send, response.status_code, out, content)

    def after(self, method: str, path: str, status: int, content: bytes) -> bytes:
        if not self.defect or status != 200 or not path.startswith("/v1/"):
            return content
        data = json.loads(content)
        if self.defect == "products-none-as-empty":
            _walk(data, lambda item: item.get("products") == ["none"], {"products": []})
        if self.defect == "quote-differs-from-charge" and path == "/v1/capabilities":
            for capability in data.get("capabilities", []):
                capability["price"] += 1
        if (
            self.defect == "job-leaves-terminal"
            and method == "GET"
            and path.startswith("/v1/jobs/")
        ):
            job = data.get("job") if isinstance(data, dict) else None
            if isinstance(job, dict) and job.get("status") in TERMINAL:
                if job["id"] in self.terminal:
                    job.update(status="running", artifacts=None)
                self.terminal.add(job["id"])
        return json.dumps(data).encode()


def _walk(value: Any, match: Any, change: dict[str, Any]) -> None:
    if isinstance(value, dict):
        if match(value):
            value.update(change)
        for inner in value.values():
            _walk(inner, match, change)
    elif isinstance(value, list):
        for inner in value:
            _walk(inner, match, change)


async def _answer(send: Any, status: int, headers: dict[str, str], content: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
        }
    )
    await send({"type": "http.response.body", "body": content})


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with live_mock() as mock:
        yield mock.base_url


@pytest.fixture(scope="module")
def proxy(mock_url: str) -> Iterator[tuple[ModelDefectProxy, str]]:
    app = ModelDefectProxy(mock_url)
    with Served(app) as served:
        yield app, served.base_url


def test_the_clean_mock_passes(mock_url: str):
    report = run_quietly(mock_url=mock_url, only=ONLY)
    result = model_result(report)
    assert report.ok, [f"{f.rule}: {f.message}" for f in report.failures]
    assert result.status == "passed" and result.passed > 20
    for rule in ("ledger", "job-status", "replay"):
        assert not any(reason.startswith(rule + ":") for reason in result.skipped), result.skipped


def _requests(mock_url: str, seed: int) -> list[tuple[str, str]]:
    sent: list[tuple[str, str]] = []

    def listen(event: str, value: Any) -> None:
        if event == "exchange":
            sent.append((value.method, value.path))

    run(RunConfig(mock_url=mock_url, only=ONLY, seed=seed, on_event=listen))
    return sent


def test_the_same_seed_makes_the_same_requests(mock_url: str):
    first = _requests(mock_url, 5)
    assert len(first) > 20
    assert _requests(mock_url, 5) == first
    assert _requests(mock_url, 6) != first


@pytest.mark.parametrize("budget", [12, 60])
def test_the_budget_is_kept(mock_url: str, budget: int):
    report = run_quietly(mock_url=mock_url, only=ONLY, max_requests=budget)
    result = model_result(report)
    assert report.requests <= budget
    assert not result.failures, [f"{f.rule}: {f.message}" for f in result.failures]
    assert result.passed or result.skipped


SEEDS = (1, 2, 3, 4)  # the first seed that catches a defect is enough


def caught(url: str, rule: str) -> tuple[int, Report]:
    """The first seed whose run fails the model's ``rule``, and that run."""
    for seed in SEEDS:
        report = run_quietly(mock_url=url, only=ONLY, seed=seed)
        if any(f.rule == rule for f in model_result(report).failures):
            return seed, report
    raise AssertionError(f"{rule} was not broken with seeds {SEEDS}: {report.failures}")


@pytest.mark.parametrize("defect", sorted(ModelDefectProxy.DEFECTS))
def test_a_broken_rule_is_named_with_its_shrunk_steps(
    proxy: tuple[ModelDefectProxy, str], defect: str
):
    app, url = proxy
    app.defect, app.terminal, app.refused = defect, set(), {}
    try:
        seed, report = caught(url, ModelDefectProxy.DEFECTS[defect])
    finally:
        app.defect = ""
    assert report.exit_code == 1
    failure = model_result(report).failures[0]
    assert failure.rule == ModelDefectProxy.DEFECTS[defect]
    assert failure.quote and failure.exchange is not None
    steps = failure.extra["steps"]
    assert steps and all(step.startswith("curl ") for step in steps)
    assert f"--only model-workspace --seed {seed}" in failure.extra["reproduce"]
