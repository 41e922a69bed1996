"""mockserver.testing: the mock inside an integrator's own tests, and the pytest fixture."""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
import textwrap
import threading

import httpx
import pytest
import requests

from mockserver.platform.tls import tls_context
from mockserver.testing import mock_server, webhook_receiver
from tests.support.contract_check import check_response

pytest_plugins = ["pytester"]
FILM = {"title": "T", "logline": "L", "genre": "drama", "projectId": "prj_acme_01"}


def verified(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """The README's verifier: HMAC-SHA256 over ``<timestamp>.<raw body>``, ``sha256=`` hex."""
    message = headers["x-service-timestamp"].encode() + b"." + body
    expected = "sha256=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, headers["x-service-signature"])


def test_an_in_process_mock_with_httpx_and_requests(receiver):
    with mock_server(seed=5) as mock:
        assert mock.base_url.startswith("http://127.0.0.1:")
        assert mock.key() == "sk_test_acme_owner" and mock.key(role="viewer").endswith("viewer")
        created = httpx.post(
            f"{mock.base_url}/v1/projects",
            headers={**mock.auth(), "Idempotency-Key": "p1"},
            json={"title": "Demo"},
        )
        check_response(created)
        assert created.status_code == 200
        listed = requests.get(f"{mock.base_url}/v1/projects", headers=mock.auth(), timeout=10)
        assert listed.status_code == 200
        assert created.json()["project"]["id"] in [p["id"] for p in listed.json()["projects"]]

        secret = "c" * 40
        render = httpx.post(
            f"{mock.base_url}/v1/video/render",
            headers=mock.auth(),
            json={
                "projectId": "prj_acme_01",
                "story": "A walk.",
                "callbackUrl": receiver.url + "/hook",
                "callbackSecret": secret,
            },
        )
        check_response(render)
        assert mock.now() == "2026-11-20T09:00:00Z"
        assert mock.advance(7200) == "2026-11-20T11:00:00Z"
        mock.flush_deliveries()
        [delivery] = receiver.deliveries
        assert verified(secret, delivery.headers, delivery.body)
        assert delivery.headers["x-service-job-id"] == render.json()["job"]["id"]
        assert [d["state"] for d in mock.deliveries()] == ["delivered"]
        assert mock.journal(limit=3)[-1]["operationId"] == "renderVideo"

        assert mock.set_credits(0) == 0 and mock.credits() == 0
        poor = httpx.post(f"{mock.base_url}/v1/text/film", headers=mock.auth(), json=FILM)
        assert poor.status_code == 402
        mock.fault(operation_id="listProducts", status=503, code="upstream_unavailable")
        assert httpx.get(f"{mock.base_url}/v1/products", headers=mock.auth()).status_code == 503
        mock.reset()
        assert mock.credits() == 10_000


def test_a_sandboxed_block_sees_nothing_of_another(live_server):
    with mock_server(live_server.base_url) as first, mock_server(live_server.base_url) as second:
        assert first.sandbox and second.sandbox and first.sandbox != second.sandbox
        httpx.post(f"{first.base_url}/v1/products", headers=first.auth(), json={"name": "A"})
        first.advance(60)
        names = lambda m: [  # noqa: E731
            p["name"]
            for p in httpx.get(f"{m.base_url}/v1/products", headers=m.auth()).json()["products"]
        ]
        assert "A" in names(first) and "A" not in names(second)
        assert first.now() == "2026-11-20T09:01:00Z" and second.now() == "2026-11-20T09:00:00Z"
        sandbox = first.sandbox
    gone = httpx.get(f"{live_server.base_url}/_mock/sandboxes/{sandbox}")
    assert gone.status_code == 404


def resources() -> tuple[int, int]:
    return threading.active_count(), len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts file handles in /proc")
def test_starting_and_stopping_a_hundred_times_leaks_nothing():
    with mock_server() as mock:  # the first start pays for what is cached for the process
        httpx.get(f"{mock.base_url}/v1/openapi.json")
    threads, handles = resources()
    ports = []
    tls = tls_context()  # httpx would read the CA bundle for each request (~20 ms)
    for _ in range(100):
        with mock_server() as mock:
            url = f"{mock.base_url}/v1/capabilities"
            assert httpx.get(url, headers=mock.auth(), verify=tls).is_success
            ports.append(int(mock.base_url.rsplit(":", 1)[1]))
    after_threads, after_handles = resources()
    assert after_threads <= threads, (threads, after_threads)
    assert after_handles <= handles + 2, (handles, after_handles)
    for port in ports[-5:]:  # nothing listens on the ports any more
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0


PLUGIN_TEST = """
import json, os, pathlib, httpx

def test_isolated_{n}(mockserver, tmp_path_factory):
    made = httpx.post(mockserver.base_url + "/v1/projects", headers={{**mockserver.auth(),
        "Idempotency-Key": "same"}}, json={{"title": "t"}}, timeout=30).json()["project"]
    mockserver.advance(3600)
    job = httpx.post(mockserver.base_url + "/v1/text/film", headers=mockserver.auth(), json={{
        "title": "T", "logline": "L", "genre": "drama", "projectId": made["id"]}},
        timeout=30).json()
    seen = [p["id"] for p in httpx.get(mockserver.base_url + "/v1/projects",
        headers=mockserver.auth(), params={{"limit": 100}}, timeout=30).json()["projects"]]
    out = pathlib.Path(os.environ["RESULTS"]) / "{n}.json"
    out.write_text(json.dumps({{"project": made["id"], "seen": seen, "cost": job["cost"],
        "now": mockserver.now(), "credits": mockserver.credits()}}))
"""


def test_the_fixture_gives_each_test_a_sandbox_even_under_xdist(
    pytester, monkeypatch, live_server, tmp_path
):
    pytester.makepyfile(**{f"test_flow_{n}": PLUGIN_TEST.format(n=n) for n in range(8)})
    monkeypatch.setenv("RESULTS", str(tmp_path))
    # Four workers for eight tests: each worker runs two, one after the other, beside the others
    # (more workers only add their start-up; the tests are the same).
    result = pytester.runpytest_subprocess("-n", "4", "--mockserver-url", live_server.base_url)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=8)
    runs = [(tmp_path / f"{n}.json").read_text() for n in range(8)]
    assert len(set(runs)) == 1, runs  # eight tests on one mock, as if each had its own
    sandboxes = httpx.get(f"{live_server.base_url}/_mock/sandboxes").json()["sandboxes"]
    assert sandboxes == []


def test_the_fixture_starts_a_mock_in_process_when_given_no_url(pytester, monkeypatch):
    pytester.makepyfile(
        textwrap.dedent(
            """
            import httpx

            def test_one(mockserver):
                assert mockserver.sandbox and mockserver.base_url.startswith("http://127.0.0.1:")
                r = httpx.get(mockserver.base_url + "/v1/products", headers=mockserver.auth())
                assert r.status_code == 200
            """
        )
    )
    monkeypatch.delenv("MOCKSERVER_URL", raising=False)
    result = pytester.runpytest_subprocess()  # the plugin comes from the kit's entry point
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)


# -- the webhook receiver ---------------------------------------------------------------------

RENDER = {"projectId": "prj_acme_01", "story": "A walk."}


def render_calling_back(mock, url: str, secret: str) -> str:
    response = httpx.post(
        f"{mock.base_url}/v1/video/render",
        headers=mock.auth(),
        json={**RENDER, "callbackUrl": url, "callbackSecret": secret},
    )
    check_response(response)
    mock.advance(3600)
    mock.flush_deliveries()
    return response.json()["job"]["id"]


def test_the_receiver_takes_and_verifies_a_callback():
    with mock_server() as mock, webhook_receiver(secret="s" * 32) as receiver:
        assert receiver.url.startswith("http://127.0.0.1:")
        job_id = render_calling_back(mock, receiver.url, receiver.secret)
        [callback] = receiver.wait(1, event="render.completed", timeout=5)
        assert callback.verified and callback.json()["jobId"] == job_id
        # The receiver's verdict is the README's verifier's, on the raw bytes received.
        assert verified("s" * 32, callback.headers, callback.body)
        assert [d["state"] for d in mock.deliveries()] == ["delivered"]


def test_a_delivery_signed_with_another_secret_fails_the_wait_saying_so():
    with mock_server() as mock, webhook_receiver(secret="r" * 32) as receiver:
        render_calling_back(mock, receiver.url, "m" * 32)
        with pytest.raises(AssertionError) as failure:
            receiver.wait(1, timeout=5)
        message = str(failure.value)
        assert "a signature did not verify" in message
        assert "render.completed evt_" in message and "NOT verified" in message
        # Answered 400, which ends the delivery (the mock does not retry a 4xx).
        [delivery] = mock.deliveries()
        assert delivery["attempts"][-1]["status"] == 400


def test_waiting_for_more_than_arrived_fails_after_the_timeout_naming_what_came():
    with mock_server() as mock, webhook_receiver() as receiver:
        assert receiver.secret.startswith("whsec_") and len(receiver.secret) >= 32
        render_calling_back(mock, receiver.url, receiver.secret)
        with pytest.raises(AssertionError) as failure:
            receiver.wait(2, timeout=0.2)
        assert str(failure.value).startswith(
            f"waited for 2 verified deliveries at {receiver.url}: not within 0.2 s; 1 arrived: "
            "render.completed evt_"
        )
        with pytest.raises(AssertionError, match=r"of job\.failed .* 1 arrived"):
            receiver.wait(1, event="job.failed", timeout=0.2)
        assert len(receiver.wait(1)) == 1


def test_the_handle_takes_keys_by_keyword():
    with mock_server() as mock:
        assert mock.key(role="editor", workspace="acme") == "sk_test_acme_editor"
        assert mock.key(workspace="globex") == "sk_test_globex_owner"
        assert mock.auth(role="viewer") == {"Authorization": "Bearer sk_test_acme_viewer"}
        with pytest.raises(TypeError):
            mock.key("viewer")  # type: ignore[misc]
        with pytest.raises(LookupError, match="no viewer key in globex"):
            mock.key(role="viewer", workspace="globex")
