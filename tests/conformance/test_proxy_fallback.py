"""``conformance proxy --fallback-mock`` through its command line: in front of a deployment still
being built (the bundled mock less some routes: a framework's 404, an HTML 404, a 501), the
operations it lacks are answered by the bundled mock, its own answers (a contract-shaped 404
among them) are passed on, the reports mark each fallback, a streamed body is never sent
twice, and without the option nothing falls back."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
from jsonschema import Draft202012Validator

from conformance.contract import bundled_document
from conformance.target import MAX_KEPT_BODY
from mockserver.app import create_app
from mockserver.resources import default_fixtures_path
from mockserver.settings import Settings
from tests.conformance.proxying import ROOT, Proxy, _env
from tests.conformance.support import OWNER
from tests.support.serve import Served

#: The deployment's keys are not the bundled mock's: the fallback must act with its sandbox's.
DEPLOYMENT_KEY = OWNER.replace("sk_test_", "sk_deploy_")
AUTH = {"Authorization": f"Bearer {DEPLOYMENT_KEY}"}
SERVED_BY = "x-served-by"  # on every answer the deployment itself gave
NOT_FOUND = b'{"detail":"Not Found"}'
#: The routes the deployment does not have yet: (method, path) -> (status, type, body).
MISSING = {
    ("POST", "/v1/projects"): (404, "application/json", NOT_FOUND),
    ("GET", "/v1/usage"): (404, "text/html", b"<html><body><h1>Not Found</h1></body></html>"),
    ("POST", "/v1/webhook-subscriptions"): (501, "application/json", b'{"detail":"later"}'),
    ("GET", "/health"): (404, "application/json", NOT_FOUND),  # no operation of the contract
}


class Unfinished:
    """A deployment still being built: the bundled mock, less the :data:`MISSING` routes (whose
    request bodies it reads whole, keeping their sizes in ``received``)."""

    def __init__(self, folder: Path) -> None:
        bundled = default_fixtures_path()
        fixtures = shutil.copytree(bundled.parent, folder / "fixtures") / bundled.name
        text = fixtures.read_text(encoding="utf-8")
        fixtures.write_text(text.replace("sk_test_", "sk_deploy_"), encoding="utf-8")
        settings = Settings(fixtures=fixtures, clock="manual", seed=7, allow_private_callbacks=True)
        self.app = create_app(settings)
        self.received: list[int] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def marked(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message["headers"], (b"x-served-by", b"it")]}
            await send(message)

        missing = MISSING.get((scope["method"], scope["path"]))
        if missing is None:
            await self.app(scope, receive, marked)
            return
        size, more = 0, True
        while more:
            message = await receive()
            size += len(message.get("body", b""))
            more = message.get("more_body", False)
        self.received.append(size)
        status, kind, body = missing
        headers = [(b"content-type", kind.encode()), (b"content-length", b"%d" % len(body))]
        await marked({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def served(deployment: Unfinished) -> Served:
    return Served(deployment, log_level="error", lifespan="off")


def key() -> dict[str, str]:
    return {"Idempotency-Key": uuid.uuid4().hex}


PROJECT = {"title": "Demo"}
SUBSCRIPTION = {
    "url": "https://127.0.0.1:9/hook",  # the mock resolves it: loopback, which it allows
    "events": ["job.completed"],
    "secret": "whsec_" + uuid.uuid4().hex * 2,
}


def valid(answer: httpx.Response, path: str, method: str) -> bool:
    """Whether the answer's body is valid against the contract's schema for it (read here with
    jsonschema, apart from the proxy's own judging)."""
    document = bundled_document()
    pointer = f"/paths/{path.replace('/', '~1')}/{method}/responses/{answer.status_code}"
    response = document
    for part in pointer.strip("/").split("/"):
        response = response[part.replace("~1", "/")]
    if "$ref" in response:
        response = document["components"]["responses"][response["$ref"].rsplit("/", 1)[-1]]
    schema = response["content"]["application/json"]["schema"]
    root = {**document, **schema}
    return Draft202012Validator(root).is_valid(answer.json())


def test_the_operations_a_deployment_lacks_are_answered_by_the_bundled_mock(tmp_path: Path):
    deployment = Unfinished(tmp_path)
    html, junit, har = tmp_path / "proxy.html", tmp_path / "proxy.xml", tmp_path / "proxy.har"
    reports = ("--report-html", str(html), "--junit-xml", str(junit), "--har", str(har))
    with (
        served(deployment) as upstream,
        Proxy(upstream.base_url, tmp_path, "--fallback-mock", *reports) as proxy,
        httpx.Client(base_url=proxy.url, headers=AUTH, timeout=60) as client,
    ):
        # its own answers, passed on: a contract-shaped 404 about a record is one of them
        own = client.get("/v1/capabilities")
        assert own.status_code == 200 and own.headers[SERVED_BY] == "it"
        job = client.get("/v1/jobs/job_missing")
        assert job.status_code == 404 and job.json()["code"] == "not_found"
        assert job.headers[SERVED_BY] == "it"
        health = client.get("/health")  # no operation of the contract: passed on
        assert health.status_code == 404 and health.content == NOT_FOUND
        # what it lacks, answered by the mock: valid against the contract
        created = client.post("/v1/projects", headers=key(), json=PROJECT)
        assert created.status_code == 200, created.text
        assert SERVED_BY not in created.headers and created.headers["x-request-id"]
        assert valid(created, "/v1/projects", "post")
        usage = client.get("/v1/usage")
        assert usage.status_code == 200 and SERVED_BY not in usage.headers
        assert valid(usage, "/v1/usage", "get")
        subscribed = client.post("/v1/webhook-subscriptions", headers=key(), json=SUBSCRIPTION)
        assert subscribed.status_code == 200, subscribed.text
        assert SERVED_BY not in subscribed.headers
        assert valid(subscribed, "/v1/webhook-subscriptions", "post")
        # the mock's record is not the deployment's: its own 404 for it is no finding
        made = subscribed.json()["subscription"]["id"]
        read = client.get(f"/v1/webhook-subscriptions/{made}")
        assert read.status_code == 404 and read.headers[SERVED_BY] == "it"
    sizes = [len(httpx.Request("POST", "/", json=body).content) for body in (PROJECT, SUBSCRIPTION)]
    assert deployment.received == [0, sizes[0], 0, sizes[1]]  # /health, then what it lacks
    assert proxy.status == 0, proxy.output  # no finding: --fail-on any
    assert "answered by the bundled mock at http://127.0.0.1:" in proxy.output
    assert ", sandbox sbx_" in proxy.output  # a sandbox of its own
    lines = proxy.output.splitlines()
    said = "answered by the bundled mock (upstream said"
    assert f"fallback: createProject {said} 404 for the route)" in lines
    assert f"fallback: getUsage {said} 404 for the route)" in lines
    assert f"fallback: createWebhookSubscription {said} 501)" in lines
    assert sum(line.startswith("fallback: ") for line in lines) == 3, proxy.output
    report = proxy.report
    totals = report["totals"]
    assert totals["fallbacks"] == 3
    assert (totals["client"], totals["deployment"], totals["mock"]) == (0, 0, 0)
    assert report["fallbacks"] == {
        "total": 3,
        "operations": {
            "createProject": {"exchanges": 1, "upstream": {"404": 1}},
            "createWebhookSubscription": {"exchanges": 1, "upstream": {"501": 1}},
            "getUsage": {"exchanges": 1, "upstream": {"404": 1}},
        },
        "notFallenBack": [],
    }
    operations = report["operations"]
    fell_back = {"exchanges": 1, "client": 0, "deployment": 0, "fallbacks": 1, "mock": 0}
    assert operations["createProject"] == operations["getUsage"] == fell_back
    assert operations["getJob"] == {"exchanges": 1, "client": 0, "deployment": 0}
    assert operations["getWebhookSubscription"] == {"exchanges": 1, "client": 0, "deployment": 0}
    comments = [entry["comment"] for entry in json.loads(har.read_text())["log"]["entries"]]
    marked = "getUsage (answered by the bundled mock (upstream said 404 for the route))"
    assert comments.count(marked) == 1
    assert "getJob" in comments  # its own answers: no mark
    for written in (html.read_text(), junit.read_text()):
        assert "3 exchanges answered by the bundled mock" in written
        assert "createWebhookSubscription (1 after 501)" in written


def test_a_body_longer_than_the_proxy_keeps_is_not_sent_again(tmp_path: Path):
    deployment = Unfinished(tmp_path)
    big = json.dumps({"title": "x" * (MAX_KEPT_BODY + 10)}).encode()
    with (
        served(deployment) as upstream,
        Proxy(upstream.base_url, tmp_path, "--fallback-mock") as proxy,
    ):
        answer = httpx.post(
            proxy.url + "/v1/projects",
            content=big,
            headers=AUTH | key() | {"content-type": "application/json"},
            timeout=60,
        )
        assert answer.status_code == 404 and answer.content == NOT_FOUND  # the upstream's
        assert answer.headers[SERVED_BY] == "it"
    assert deployment.received == [len(big)]  # sent once, whole
    assert "fallback: createProject not answered by the bundled mock" in proxy.output
    assert "longer than the proxy keeps" in proxy.output
    report = proxy.report
    assert report["totals"]["fallbacks"] == 0
    [note] = report["fallbacks"]["notFallenBack"]
    assert note["operationId"] == "createProject" and note["upstreamStatus"] == 404
    assert note["exchanges"] == 1 and "cannot be sent again" in note["why"]


def test_without_the_option_nothing_falls_back(tmp_path: Path):
    with (
        served(Unfinished(tmp_path)) as upstream,
        Proxy(upstream.base_url, tmp_path, "--fail-on", "none") as proxy,
        httpx.Client(base_url=proxy.url, headers=AUTH, timeout=60) as client,
    ):
        created = client.post("/v1/projects", headers=key(), json={"title": "Demo"})
        assert created.status_code == 404 and created.content == NOT_FOUND
        assert client.get("/v1/usage").status_code == 404
        subscribed = client.post("/v1/webhook-subscriptions", headers=key(), json=SUBSCRIPTION)
        assert subscribed.status_code == 501
    assert "fallback:" not in proxy.output
    report = proxy.report
    assert report["totals"]["fallbacks"] == 0 and report["fallbacks"]["total"] == 0
    assert "fallbacks" not in report["operations"]["createProject"]
    assert report["operations"]["createProject"]["deployment"] > 0  # {"detail": ...}: no envelope


#: ``conformance`` with its bundled mock broken on purpose (tests/defects): what the
#: ``--fallback-mock`` mock answers then breaks a rule, and the finding must be the mock's.
BROKEN_MOCK = """
import sys
import mockserver.app
from tests.defects import create_app
mockserver.app.create_app = lambda settings: create_app(settings, ["no-request-id-on-errors"])
from conformance.cli import main
main(sys.argv[1:])
"""


def test_a_broken_rule_in_the_mocks_answer_is_the_mocks_not_the_deployments(tmp_path: Path):
    report_path = tmp_path / "proxy.json"
    script = (
        "import os, httpx; url = os.environ['CONFORMANCE_PROXY_URL']; "
        f"r = httpx.post(url + '/v1/projects', headers={AUTH!r}, json={{'title': 'Demo'}}); "
        "assert r.status_code == 400 and 'x-request-id' not in r.headers, r"
    )  # no Idempotency-Key: the client's mistake, refused by the (broken) mock
    with served(Unfinished(tmp_path)) as upstream:
        done = subprocess.run(
            [sys.executable, "-c", BROKEN_MOCK, "proxy", "--upstream", upstream.base_url,
             "--listen", "127.0.0.1:0", "--report-json", str(report_path), "--fallback-mock",
             "--fail-on", "deployment", "--", sys.executable, "-c", script],
            cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output  # --fail-on deployment: the deployment broke nothing
    assert "FINDING mock envelope-request-id createProject" in output
    assert "FINDING client idempotency-key-required createProject" in output
    report = json.loads(report_path.read_text())
    totals = report["totals"]
    assert (totals["client"], totals["deployment"], totals["fallbacks"]) == (1, 0, 1)
    assert totals["mock"] >= 1
    assert {(f["rule"], f["side"]) for f in report["findings"]} >= {
        ("envelope-request-id", "mock"),
        ("idempotency-key-required", "client"),
    }
    assert "envelope-request-id" not in report["checks"]  # not counted as a deployment's check


def test_a_ctrl_c_during_start_up_stops_the_proxy_in_order(tmp_path: Path):
    """A SIGINT that arrives while the proxy is still starting (here: while the bundled mock
    of --fallback-mock starts, right after the relay says it listens) is an orderly stop:
    the start-up finishes, the proxy stops at once, writes its report and exits 0 (it raised
    KeyboardInterrupt mid-start and hung, the judge's process left waiting)."""
    import signal

    from tests.support.serve import free_port

    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "conformance", "proxy", "--upstream", "http://127.0.0.1:9",
               "--listen", "127.0.0.1:0", "--fallback-mock", "--report-json", str(report),
               "--relay-to", "http://127.0.0.1:9/in", "--relay-listen",
               f"127.0.0.1:{free_port()}", "--webhook-secret", "s" * 32]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if "relaying webhooks" in line:
            process.send_signal(signal.SIGINT)
            break
    try:
        rest, _ = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError("the proxy did not stop:\n" + "".join(lines)) from None
    output = "".join(lines) + rest
    assert process.returncode == 0, output
    assert "Traceback" not in output and "stopped: 0 exchanges judged" in output, output
    assert json.loads(report.read_text())["totals"]
