"""``conformance proxy`` through its command line, as a real process in front of real servers:
it forwards unchanged, judges what passes, prints each finding as it happens, writes its
reports and a redacted HAR on SIGTERM, and wraps a command (exit status, --fail-on)."""

from __future__ import annotations

import gzip
import json
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tests.conformance.proxying import Proxy, wrapped
from tests.conformance.support import OWNER, Served, free_port, live_mock

AUTH = {"Authorization": f"Bearer {OWNER}"}
FULL = ("--profile", "full")  # limit=0 breaks a bound the interface document leaves inferred


async def _echo(request: Request) -> Response:
    """Answers what it received: method, path, query, headers and body, as JSON."""
    body = await request.body()
    seen = {
        "method": request.method,
        "path": request.url.path,
        "query": request.url.query,
        "headers": [[k, v] for k, v in request.headers.items()],
        "body": body.decode("latin-1"),
    }
    status = int(request.query_params.get("status", "200"))
    headers = {"x-request-id": "req_echo", "x-custom": "kept"}
    return Response(json.dumps(seen), status, headers, media_type="application/json")


async def _stream(request: Request) -> StreamingResponse:
    async def chunks():
        for i in range(50):
            yield (f"chunk {i}\n" * 1000).encode()

    return StreamingResponse(chunks(), media_type="text/plain")


async def _gzipped(request: Request) -> Response:
    payload = gzip.compress(b'{"success": true}')
    return Response(
        payload, headers={"content-encoding": "gzip", "content-type": "application/json"}
    )


async def _closing(request: Request) -> Response:
    """Answers and closes its connection, and sets a cookie the proxy must not keep."""
    headers = {"connection": "close", "set-cookie": "session=s1; Path=/"}
    return Response(b"closing", headers=headers, media_type="text/plain")


async def _refusing(request: Request) -> Response:
    """Refuses a body without reading it (the server discards the rest of the upload: with
    ``Connection: close`` its reset may reach the proxy before the 413 does, and TCP then
    loses the answer on the way, which no proxy can pass on: a 502, one run in three)."""
    return Response(b"too large", status_code=413)


async def _nothing(request: Request) -> Response:
    return Response(status_code=204)


ECHO = Starlette(
    routes=[
        Route("/gw/stream", _stream),
        Route("/gw/gzipped", _gzipped),
        Route("/gw/closing", _closing),
        Route("/gw/nothing", _nothing),
        Route("/gw/refusing", _refusing, methods=["POST"]),
        Route("/{path:path}", _echo, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]),
    ]
)


def test_forwards_methods_headers_statuses_and_bodies_unchanged(tmp_path: Path):
    with (
        Served(ECHO, log_level="error") as echo,
        Proxy(echo.base_url + "/gw", tmp_path, "--fail-on", "none") as proxy,
        httpx.Client(base_url=proxy.url) as client,
    ):
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
            answer = client.request(
                method,
                "/v1/things/a%2Fb?x=1&x=2",
                headers={"X-Trace": "t1", "Connection": "keep-alive, X-Hop", "X-Hop": "no"},
                content=b"\x00raw body" if method in ("POST", "PUT", "PATCH") else None,
            )
            seen = answer.json()
            assert seen["method"] == method
            assert seen["path"] == "/gw/v1/things/a/b"  # the upstream's base path kept
            assert seen["query"] == "x=1&x=2"
            headers = dict(seen["headers"])
            assert headers["x-trace"] == "t1"
            assert "x-hop" not in headers  # named by Connection: hop-by-hop
            assert "accept-encoding" in headers  # httpx's client sent one
            assert answer.headers["x-custom"] == "kept"
            if method in ("POST", "PUT", "PATCH"):
                assert seen["body"] == "\x00raw body"
        assert client.get("/v1/x", params={"status": "418"}).status_code == 418
        assert client.get("/v1/x", params={"status": "503"}).status_code == 503
        big = b"x" * (3 << 20)  # more than the proxy keeps: forwarded whole all the same
        assert len(client.post("/v1/big", content=big).json()["body"]) == len(big)
        streamed = client.get("/stream")
        assert streamed.text == "".join(f"chunk {i}\n" * 1000 for i in range(50))
        raw = httpx.get(proxy.url + "/gzipped", headers={"Accept-Encoding": "gzip"})
        assert raw.headers["content-encoding"] == "gzip"  # passed on as it came
        assert raw.json() == {"success": True}
    assert proxy.status == 0, proxy.output  # --fail-on none
    # below /v1 (the contract's prefix) it was judged: the echo's bodies break the envelope
    assert proxy.report["judged"] == 9  # /stream and /gzipped are outside /v1
    assert proxy.report["totals"]["deployment"] > 0


def test_upstream_connections_chunked_uploads_heads_and_no_cookies(tmp_path: Path):
    """What the proxy's own upstream client (conformance/proxy/upstream.py) must get right."""

    def pieces():
        yield b"first,"
        yield b"second"

    with (
        Served(ECHO, log_level="error") as echo,
        Proxy(echo.base_url + "/gw", tmp_path, "--fail-on", "none") as proxy,
        httpx.Client(base_url=proxy.url) as client,
    ):
        chunked = client.post("/v1/up", content=pieces())  # no Content-Length: chunked
        assert chunked.json()["body"] == "first,second"
        for _ in range(3):  # the upstream closes each connection after its answer
            closing = client.get("/closing")
            assert closing.text == "closing" and closing.headers["set-cookie"].startswith("s")
            assert "connection" not in closing.headers  # hop-by-hop: not passed on
            headers = dict(httpx.get(proxy.url + "/v1/after").json()["headers"])
            assert "cookie" not in headers  # the proxy keeps no cookie of its own
        head = client.head("/gzipped")
        assert head.status_code == 200 and head.content == b""
        assert head.headers["content-encoding"] == "gzip"
        assert client.get("/gzipped").json() == {"success": True}  # after a HEAD, as before
        refused = client.post("/refusing", content=b"x" * (8 << 20))  # streamed: not kept whole
        assert refused.status_code == 413 and refused.text == "too large"
        nothing = client.get("/nothing")
        assert nothing.status_code == 204 and nothing.content == b""
        assert client.get("/v1/x", params={"n": "1"}).json()["query"] == "n=1"


def _certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its file, its key's file)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert, key_file = folder / "cert.pem", folder / "key.pem"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert, key_file


def test_an_https_upstream_is_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cert, key = _certificate(tmp_path)
    tls = {"ssl_certfile": str(cert), "ssl_keyfile": str(key), "log_level": "error"}
    with Served(ECHO, **tls) as echo:
        upstream = echo.base_url.replace("http://", "https://") + "/gw"
        with Proxy(upstream, tmp_path, "--fail-on", "none") as untrusted:
            refused = httpx.get(untrusted.url + "/v1/x")
        assert refused.status_code == 502 and "CERTIFICATE_VERIFY_FAILED" in refused.text
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the proxy's process trusts it
        with Proxy(upstream, tmp_path, "--fail-on", "none") as proxy:
            seen = httpx.post(proxy.url + "/v1/x?q=1", content=b"over tls").json()
    assert seen["path"] == "/gw/v1/x" and seen["query"] == "q=1" and seen["body"] == "over tls"
    assert dict(seen["headers"])["host"] == upstream.split("/")[2]


def test_an_unreachable_upstream_is_a_502(tmp_path: Path):
    with Proxy(f"http://127.0.0.1:{free_port()}", tmp_path, "--fail-on", "none") as proxy:
        answer = httpx.get(proxy.url + "/v1/capabilities", headers=AUTH)
    assert answer.status_code == 502
    assert "conformance proxy: the upstream did not answer" in answer.text
    assert OWNER not in answer.text


def test_a_base_path_on_the_proxy_side(tmp_path: Path):
    with (
        Served(ECHO, log_level="error") as echo,
        Proxy(echo.base_url, tmp_path, "--listen", "127.0.0.1:0/edge") as proxy,
    ):
        assert proxy.url.endswith("/edge")
        seen = httpx.get(proxy.url + "/v1/things").json()
        assert seen["path"] == "/v1/things"
        outside = httpx.get(proxy.url.removesuffix("/edge") + "/v1/things")
        assert outside.status_code == 404 and "not below /edge" in outside.text


def test_a_client_mistake_is_a_client_finding_printed_with_its_request_id(tmp_path: Path):
    with live_mock() as mock, Proxy(mock.base_url, tmp_path, "--profile", "full") as proxy:
        refused = httpx.get(proxy.url + "/v1/projects", params={"limit": 0}, headers=AUTH)
        assert refused.status_code == 400
        assert httpx.get(proxy.url + "/v1/capabilities", headers=AUTH).status_code == 200
        request_id = refused.headers["x-request-id"]
    assert proxy.status == 1  # --fail-on any (the default): the client's mistake fails it
    lines = [line for line in proxy.output.splitlines() if line.startswith("FINDING")]
    assert len(lines) == 1, proxy.output
    assert lines[0].startswith("FINDING client schema-negative listProjects: ")
    assert f"[x-request-id {request_id}]" in lines[0]
    report = proxy.report
    assert report["totals"]["client"] == 1 and report["totals"]["deployment"] == 0
    [finding] = report["findings"]
    assert finding["rule"] == "schema-negative" and finding["side"] == "client"
    assert finding["operationId"] == "listProjects" and finding["requestId"] == request_id
    assert "curl" in finding["exchange"] and "${API_KEY}" in finding["exchange"]["curl"]
    assert OWNER not in json.dumps(report)
    assert report["operations"]["listProjects"] == {"exchanges": 1, "client": 1, "deployment": 0}
    assert report["operations"]["getCapabilities"]["exchanges"] == 1
    assert report["rules"]["judged"] > 0
    assert any("envelope-request-id" in r["checks"] for r in report["rules"]["judgedRules"])


def test_a_broken_deployment_is_a_deployment_finding_and_reports_are_written(tmp_path: Path):
    options = (
        "--junit-xml",
        str(tmp_path / "junit.xml"),
        "--report-html",
        str(tmp_path / "r.html"),
    )
    with (
        live_mock(defects=["no-request-id-on-errors"]) as mock,
        Proxy(mock.base_url, tmp_path, "--fail-on", "deployment", *options) as proxy,
    ):
        httpx.get(proxy.url + "/v1/projects", params={"limit": 0}, headers=AUTH)
    assert proxy.status == 1
    rules = {(f["rule"], f["side"]) for f in proxy.report["findings"]}
    assert ("envelope-request-id", "deployment") in rules
    junit = (tmp_path / "junit.xml").read_text()
    assert "envelope-request-id" in junit and "curl" in junit
    assert "envelope-request-id" in (tmp_path / "r.html").read_text()


def test_fail_on_decides_which_findings_fail(tmp_path: Path):
    with live_mock() as mock:
        for fail_on, expected in (("deployment", 0), ("client", 1), ("none", 0), ("any", 1)):
            with Proxy(mock.base_url, tmp_path, "--fail-on", fail_on, *FULL) as proxy:
                httpx.get(proxy.url + "/v1/projects", params={"limit": 0}, headers=AUTH)
            assert proxy.status == expected, (fail_on, proxy.output)


def test_wrapping_a_command(tmp_path: Path):
    script = (
        "import os, sys, httpx; url = os.environ['CONFORMANCE_PROXY_URL']; "
        f"httpx.get(url + '/v1/capabilities', headers={{'Authorization': 'Bearer {OWNER}'}}); "
        "sys.exit(int(sys.argv[1]))"
    )
    with live_mock() as mock:
        status, output, report = wrapped(
            mock.base_url, tmp_path, list(FULL), [sys.executable, "-c", script, "0"]
        )
        assert status == 0, output
        assert report["exchanges"] == 1 and report["exitCode"] == 0
        status, output, _ = wrapped(
            mock.base_url, tmp_path, list(FULL), [sys.executable, "-c", script, "7"]
        )
        assert status == 7  # the command's own status wins
        bad = script.replace("/v1/capabilities", "/v1/projects?limit=0")
        status, output, report = wrapped(
            mock.base_url, tmp_path, list(FULL), [sys.executable, "-c", bad, "0"]
        )
        assert status == 1 and report["totals"]["client"] == 1  # findings fail it


def test_the_har_is_bounded_and_holds_no_secret(tmp_path: Path):
    har = tmp_path / "seen.har"
    secret = "whsec_" + uuid.uuid4().hex * 2
    with live_mock() as mock, Proxy(mock.base_url, tmp_path, "--har", str(har), *FULL) as proxy:
        created = httpx.post(
            proxy.url + "/v1/webhook-subscriptions",
            headers=AUTH | {"Idempotency-Key": uuid.uuid4().hex},
            json={"url": "https://example.com/hook", "events": ["job.completed"], "secret": secret},
        )
        assert created.status_code < 500
        httpx.get(proxy.url + "/v1/capabilities", params={"api_key": "leak"}, headers=AUTH)
        short = "shh" + uuid.uuid4().hex[:20]  # under 32 characters: a client finding
        refused = httpx.post(
            proxy.url + "/v1/webhook-subscriptions",
            headers=AUTH | {"Idempotency-Key": uuid.uuid4().hex},
            json={"url": "https://example.com/hook", "events": ["job.completed"], "secret": short},
        )
        assert refused.status_code == 400
    text = har.read_text()
    archive = json.loads(text)
    assert archive["log"]["version"] == "1.2"
    assert len(archive["log"]["entries"]) == 3
    assert secret not in text and OWNER not in text and "leak" not in text
    assert short not in text and short[:20] not in text
    assert "FINDING client schema-negative createWebhookSubscription" in proxy.output
    for kept in (proxy.output, proxy.report_path.read_text()):
        assert short[:12] not in kept and secret[:12] not in kept and OWNER not in kept
    assert "Bearer ${API_KEY}" in text and "[redacted]" in text
    assert "most recent" in archive["log"]["comment"]


@pytest.mark.parametrize("listen", ["nowhere", "127.0.0.1:x"])
def test_usage_errors(tmp_path: Path, listen: str):
    status, output, _ = wrapped("http://127.0.0.1:9", tmp_path, ["--listen", listen], ["true"])
    assert status == 2 and "--listen must be HOST:PORT" in output


async def _refusing_projects(request: Request) -> Response:
    """A deployment that refuses every project for a reason of its own, in the same words."""
    await request.body()
    body = b'{"success":false,"error":"projects are closed today","code":"invalid_request"}'
    return Response(
        body,
        status_code=400,
        media_type="application/json",
        headers={"x-request-id": f"req_{uuid.uuid4().hex}"},
    )


def test_the_same_refusal_of_two_valid_calls_under_one_key_is_no_finding(tmp_path: Path):
    """idempotency-failed-call-frees-key judges a failed call's answer seen again only when the
    first call was one the contract refuses: two valid calls under one key may both be refused
    for the same reason of the deployment's (a false finding in CI, against the faithful mock's
    editVideo), while an invalid first call's answer given to a valid one says the key was held."""
    upstream = Starlette(routes=[Route("/v1/projects", _refusing_projects, methods=["POST"])])
    with Served(upstream) as served, Proxy(served.base_url, tmp_path, *FULL) as proxy:
        for title in ("first", "second"):
            answered = httpx.post(
                proxy.url + "/v1/projects",
                json={"title": title},
                headers={**AUTH, "Idempotency-Key": "same-key"},
            )
            assert answered.status_code == 400
        held = httpx.post(
            proxy.url + "/v1/projects",
            json={"title": ""},  # the contract refuses it: minLength 1
            headers={**AUTH, "Idempotency-Key": "other-key"},
        )
        assert held.status_code == 400
        httpx.post(
            proxy.url + "/v1/projects",
            json={"title": "valid"},
            headers={**AUTH, "Idempotency-Key": "other-key"},
        )
    rules = [f["rule"] for f in proxy.report["findings"] if f["side"] == "deployment"]
    assert rules.count("idempotency-failed-call-frees-key") == 1, proxy.output
