"""Nothing a client sends breaks what the mock shows (issue 24, parts 1 and 6).

Hypothesis sends hostile requests to the API and to the control plane: bodies of any depth or
size, lone surrogates, invalid UTF-8, huge numbers, thousands of keys, binary content types,
compressed bodies (``Content-Encoding``), hostile queries and header bytes. After each one it reads
every read operation of the control document (``GET /_mock/openapi.json``: each ``GET``) and
the inspector's data calls with the parameters its page sends: each answers 200 and is valid
against the control document (tests/support/control_check.py); every answer of the API is
checked against the contract (tests/support/client.py). What the journal cannot show as it is,
it shows as ``{"omitted": why, "bytes": N}``.

One app serves the whole module; each example starts from a reset (the journal empty, so each
read renders the hostile entry, not a growing pile). ``EXAMPLES`` examples take ~20 s.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mockserver.app import create_app
from mockserver.contract import default_contract
from mockserver.control.plane import control_contract
from mockserver.platform.journal import BODY_LIMIT
from mockserver.settings import Settings
from tests.robustness.support import refused_with
from tests.support.client import ApiClient
from tests.support.control_check import check_control
from tests.support.inproc import InProcessClient

LIMITS = default_contract().limits
DEPTH = int(LIMITS["maxJsonNestingDepth"])
LOW, HIGH = (int(v) for v in LIMITS["integerRange"])
MAX_BODY = int(LIMITS["maxRequestBodyBytes"])
EXAMPLES = 600
JSON = "application/json"
# The reasons the body reader refuses a body for: the journal cannot show such a body as it is.
UNREADABLE = {
    "malformed_json",
    "nesting_too_deep",
    "lone_surrogate",
    "number_out_of_range",
    "unsupported_content_encoding",
}
# Path parameters of the control plane's read operations: a new one fails here until named.
PATH_VALUES = {"workspace": "acme", "file": "app.js"}
# What the inspector's page (mockserver/control/ui/app.js) asks, beyond each operation bare.
INSPECTOR_CALLS = [
    ("/requests", {"limit": 200}),
    ("/requests", {"limit": 1000, "after": 0}),
    ("/jobs", {"limit": 200}),
    ("/deliveries", {"limit": 1000}),
]


@dataclass(frozen=True)
class Target:
    method: str
    path: str
    body: Any  # a valid body, for breaking
    key: bool = False  # needs an Idempotency-Key


API_TARGETS = [
    Target("POST", "/v1/products", {"name": "P", "description": "d"}),
    Target("PATCH", "/v1/campaigns/cmp_acme_002", {"status": "paused"}),
    Target("POST", "/v1/projects", {"title": "T", "mediaType": "video"}, key=True),
    Target("GET", "/v1/products", None),  # takes no body: one sent anyway
]
CONTROL_TARGETS = [
    Target("PUT", "/_mock/workspaces/acme/credits", {"balance": 10000}),
    Target(
        "POST",
        "/_mock/faults",
        {"match": {"operationId": "getJob"}, "status": 503, "code": "upstream_unavailable"},
    ),
    Target("PUT", "/_mock/snapshot", {"snapshot": {}}),
]


# -- the mock, and what it shows --------------------------------------------------------------


@dataclass
class Mock:
    http: httpx.Client
    api: ApiClient
    reads: list[tuple[str, dict[str, Any]]]  # every read: path under /_mock, query
    checked: set[tuple[Any, ...]] = field(default_factory=set)  # answers found valid


def read_operations(sandbox_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Every GET of the control document, its path parameters filled, then the inspector's."""
    values = {**PATH_VALUES, "sandboxId": sandbox_id}
    reads = []
    for op in control_contract().operations.values():
        if op.method != "GET":
            continue
        path = op.path
        for name in re.findall(r"\{(\w+)\}", path):
            assert name in values, f"{op.operation_id}: no value for path parameter {name}"
            path = path.replace(f"{{{name}}}", values[name])
        reads.append((path.removeprefix("/_mock"), {}))
    return reads + INSPECTOR_CALLS


@pytest.fixture(scope="module")
def mock() -> Iterator[Mock]:
    app = create_app(Settings(clock="manual", seed=11, rate_limit=10**9))
    with InProcessClient(app, raise_app_exceptions=False) as http:
        sandbox = http.post("/_mock/sandboxes", json={})
        check_control(sandbox)
        assert sandbox.status_code == 200, sandbox.text
        yield Mock(http, ApiClient(http), read_operations(sandbox.json()["sandbox"]["id"]))


def read_everything(mock: Mock) -> dict[str, Any]:
    """Every read, each 200 and valid against the control document; the journal's answer.

    An answer byte-identical to one already checked for the same read is not checked again
    (the same bytes are as valid): a refused request leaves the 200 KiB snapshot as it was,
    and its schema check takes ~65 ms."""
    journal: dict[str, Any] = {}
    for path, query in mock.reads:
        response = mock.http.get(f"/_mock{path}", params=query)
        assert response.status_code == 200, f"GET /_mock{path} {query}: {response.text[:500]}"
        seen = (path, tuple(query.items()), response.headers["content-type"], response.content)
        if seen not in mock.checked:
            check_control(response)
            mock.checked.add(seen)
        if path == "/requests" and not query:
            journal = response.json()
    return journal


def reset(mock: Mock) -> None:
    response = mock.http.post("/_mock/reset")
    assert response.status_code == 200, response.text


# -- hostile requests -------------------------------------------------------------------------

lone_surrogates = st.integers(0xD800, 0xDFFF).map(lambda c: f"\\u{c:04x}")
hostile_numbers = st.one_of(
    st.integers(HIGH + 1, HIGH * 4).map(str),
    st.integers(LOW * 4, LOW - 1).map(str),
    st.integers(400, 5000).map(lambda n: "9" * n),
    st.integers(309, 100000).map(lambda e: f"1e{e}"),
)
binary_types = st.sampled_from(
    [JSON, "application/octet-stream", "image/png", "multipart/form-data; boundary=x", None]
)
encodings = st.sampled_from(["gzip", "br", "deflate", "compress", "zstd", "x-any", "GZIP"])


def with_value(body: Any, text: str) -> bytes:
    """``body`` (an object) with one more member whose raw JSON value is ``text``."""
    start = json.dumps(body)[:-1] if isinstance(body, dict) and body else "{"
    glue = ", " if start != "{" else ""
    return f'{start}{glue}"name": {text}}}'.encode()


@st.composite
def hostile(draw: st.DrawFn, base: Any) -> tuple[bytes, dict[str, Any], str, str]:
    """A hostile request: the body, its headers, a query string, and what kind it is."""
    kind = draw(
        st.sampled_from(
            [
                "deep",
                "surrogate",
                "utf8",
                "number",
                "keys",
                "binary",
                "large",
                "encoded",
                "unicode",
                "query",
                "headers",
            ]
        )
    )
    headers: dict[str, Any] = {"Content-Type": JSON}
    query = ""
    if kind == "deep":
        levels = draw(st.integers(DEPTH + 1, 20000))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
        deep = opener * levels + "1" + closer * levels
        body = deep.encode() if draw(st.booleans()) else with_value(base, deep)
    elif kind == "surrogate":
        lone = draw(lone_surrogates)
        body = (
            with_value(base, f'"x{lone}y"')
            if draw(st.booleans())
            else f'{{"{lone}": 1, "name": "n"}}'.encode()
        )
    elif kind == "utf8":
        junk = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80"]))
        body = with_value(base, '"x').removesuffix(b"}") + junk + b'"}'
    elif kind == "number":
        body = with_value(base, draw(hostile_numbers))
    elif kind == "keys":
        count = draw(st.integers(1000, 6000))
        body = json.dumps({**(base or {}), **{f"k{i}": i for i in range(count)}}).encode()
    elif kind == "binary":
        body = draw(st.binary(min_size=1, max_size=3000))
        content_type = draw(binary_types)
        headers = {"Content-Type": content_type} if content_type else {}
    elif kind == "large":
        sizes = [BODY_LIMIT - 20, BODY_LIMIT + 1, 3 * BODY_LIMIT, MAX_BODY + 1]
        size = draw(st.sampled_from(sizes))
        body = json.dumps({**(base or {}), "description": "d" * size}).encode()
    elif kind == "encoded":
        name = draw(encodings)
        plain = json.dumps(base).encode()
        packed = {"gzip": gzip.compress(plain), "deflate": zlib.compress(plain)}
        body = packed.get(name.lower(), plain if draw(st.booleans()) else gzip.compress(plain))
        headers["Content-Encoding"] = name
    elif kind == "unicode":
        text = draw(st.text(st.characters(exclude_categories=["Cs"]), max_size=40))
        body = json.dumps({**(base or {}), text: text}, ensure_ascii=False).encode()
    elif kind == "headers":
        odd = draw(st.binary(min_size=1, max_size=200).map(lambda b: b.translate(None, b"\r\n")))
        headers = {**headers, "X-Hostile": odd, "Cookie": odd}
        body = json.dumps(base).encode() if base is not None else b""
    else:
        query = draw(st.sampled_from(["%ED%A0%80", "%FF%FE", "%00", "x=%C3%28&%F0=1", "a" * 3000]))
        query += "&" + draw(st.sampled_from(["limit=99999999999999999999999", "x=%ED%B0%80"]))
        body = json.dumps(base).encode() if base is not None else b""
    return body, headers, query, kind


def send(mock: Mock, target: Target, body: bytes, headers: dict[str, Any], query: str):
    url = f"{target.path}?{query}" if query else target.path
    if target.key:
        headers = {**headers, "Idempotency-Key": "hostile-1"}
    if target.path.startswith("/_mock/"):
        response = mock.http.request(target.method, url, content=body, headers=headers)
        check_control(response)
    else:
        response = mock.api.request(target.method, url, content=body, headers=headers)
    assert response.status_code < 500, response.text[:500]
    assert response.headers.get("x-request-id")
    return response


def shown_as_omitted(entry: dict[str, Any], body: bytes) -> None:
    shown = entry["requestBody"]
    assert isinstance(shown, dict) and set(shown) == {"omitted", "bytes"}, shown
    assert isinstance(shown["omitted"], str) and shown["bytes"] == len(body), shown


SETTINGS = {"deadline": None, "suppress_health_check": list(HealthCheck), "derandomize": True}


@settings(max_examples=EXAMPLES, **SETTINGS)
@given(data=st.data(), target=st.sampled_from(API_TARGETS + CONTROL_TARGETS))
def test_whatever_a_client_sends_every_read_answers_200_and_valid(mock, data, target):
    reset(mock)
    body, headers, query, kind = data.draw(hostile(target.body))
    event(kind)
    response = send(mock, target, body, headers, query)
    event(f"answered {response.status_code}")
    journal = read_everything(mock)
    if target.path.startswith("/_mock/") or target.body is None:
        return  # the control plane is not journalled; a body an operation takes not is not read
    [entry] = [e for e in journal["requests"] if e["requestId"] == response.headers["x-request-id"]]
    reason = (response.json().get("details") or {}).get("reason")
    if response.status_code == 400 and reason in UNREADABLE:
        shown_as_omitted(entry, body)
    if len(body) > BODY_LIMIT and response.status_code != 413:
        shown_as_omitted(entry, body)


# -- the cases ------------------------------------------------------------------------


@pytest.mark.parametrize("levels", [1100, 1000])
def test_a_body_nested_1100_deep_is_refused_and_the_journal_still_reads(mock, levels):
    """The issue's case: 2.2 KB of arrays nested 1,100 deep (and 1,000 deep)."""
    reset(mock)
    body = b"[" * levels + b"]" * levels
    response = mock.api.post("/v1/products", content=body, headers={"Content-Type": JSON})
    refused_with(response, "nesting_too_deep")
    journal = read_everything(mock)
    [entry] = journal["requests"]
    assert entry["requestBody"] == {
        "omitted": f"nested deeper than {DEPTH} levels",
        "bytes": 2 * levels,
    }
    assert entry["responseBody"]["details"]["reason"] == "nesting_too_deep"


@pytest.mark.parametrize(
    ("encoding", "packed"),
    [
        ("gzip", gzip.compress(b'{"name": "P"}')),
        ("br", b"\x0b\x06\x80" + b'{"name": "P"}' + b"\x03"),  # brotli's framing of raw bytes
        ("deflate", zlib.compress(b'{"name": "P"}')),
    ],
    ids=["gzip", "br", "deflate"],
)
def test_a_compressed_body_is_refused_naming_content_encoding(mock, encoding, packed):
    reset(mock)
    before = mock.http.get("/_mock/snapshot").content
    response = mock.api.post(
        "/v1/products",
        content=packed,
        headers={"Content-Type": JSON, "Content-Encoding": encoding},
    )
    body = refused_with(response, "unsupported_content_encoding")
    assert "Content-Encoding" in body["error"] and encoding in body["error"], body
    assert "codec" not in body["error"], body
    assert body["details"]["contentEncoding"] == encoding
    assert mock.http.get("/_mock/snapshot").content == before
    [entry] = read_everything(mock)["requests"]
    assert entry["requestBody"] == {
        "omitted": f"sent with Content-Encoding: {encoding}",
        "bytes": len(packed),
    }


def test_the_control_plane_refuses_a_compressed_body_too(mock):
    reset(mock)
    response = mock.http.put(
        "/_mock/workspaces/acme/credits",
        content=gzip.compress(b'{"balance": 5}'),
        headers={"Content-Type": JSON, "Content-Encoding": "gzip"},
    )
    check_control(response)
    body = refused_with(response, "unsupported_content_encoding")
    assert "Content-Encoding: gzip" in body["error"], body


def test_identity_is_read_as_no_encoding(mock):
    reset(mock)
    response = mock.api.post(
        "/v1/products",
        json={"name": "P", "description": "d"},
        headers={"Content-Encoding": "identity"},
    )
    assert response.status_code == 200, response.text
