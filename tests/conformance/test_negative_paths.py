"""Negative path values the suite breaks itself (conformance/negpaths.py): which parameters, the
kinds of values, the same values for the same seed, and a deployment that accepts a too-long id
is caught by ``schema-negative``."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
from starlette.requests import Request

from conformance.contract import Contract
from conformance.generation import Generator, prepare
from conformance.negpaths import ID_CHARACTERS, PathBounds, broken_values, path_bounds
from conformance.requestcheck import RequestChecker
from tests.conformance.support import Served, live_mock, run_quietly

BASE = "http://deployment.test"


def _requests(generator: Generator, operation_id: str, count: int = 12) -> list[Any]:
    op = generator.contract.held.operations[operation_id]
    return [prepare(case, BASE) for case in generator.negative_cases(op, count, salt="neg")]


def test_the_bounds_are_read_from_the_held_document():
    full = path_bounds(Contract(None, "full").held)
    assert full["getJob"] == (PathBounds("jobId", 1, 200),)
    assert full["listCatalogVideos"][0].patterns and full["listCatalogVideos"][0].max_length == 60
    # Under `contract`, bounds the interface document does not state are not broken.
    held = path_bounds(Contract(None, "contract").held)
    assert "listCatalogVideos" not in held
    assert set(held) < set(full)


def test_an_operation_with_only_a_path_gets_only_broken_path_values():
    contract = Contract(None, "full")
    generator = Generator(contract, 1)
    checker = RequestChecker(contract.held)
    op = contract.held.operations["getJob"]
    prepared = _requests(generator, "getJob")
    assert len(prepared) == 12 and all(p is not None for p in prepared)
    ids = [p.url.rsplit("/", 1)[1] for p in prepared]
    assert len(set(ids)) == 12
    assert any(len(i) == 201 and set(i) <= set(ID_CHARACTERS) for i in ids)  # one too long
    assert any("%" in i for i in ids)  # other text, quoted
    for p in prepared:
        broken = checker.violations(op, p.url, p.headers, p.body)
        assert [v.location for v in broken] == ["path"], p.url


def test_an_operation_with_more_to_break_gets_both():
    contract = Contract(None, "full")
    generator = Generator(contract, 1)
    checker = RequestChecker(contract.held)
    op = contract.held.operations["updateChannel"]
    prepared = [p for p in _requests(generator, "updateChannel") if p is not None]
    locations = [{v.location for v in checker.violations(op, p.url, p.headers, p.body)}
                 for p in prepared]  # fmt: skip
    assert locations[:3] == [{"path"}] * 3  # the suite's own, each with a valid body
    assert any(found and "path" not in found for found in locations[3:])  # Schemathesis's


def test_a_pattern_is_broken_within_the_length_bounds():
    bounds = PathBounds("domain", 1, 60, (r"^[a-z0-9][a-z0-9-]*$",))
    values = [v for _, v in broken_values((bounds,), 12, seed=5)]
    unmatched = [v for v in values if len(v) <= 60]
    assert unmatched and not any(re.search(bounds.patterns[0], v) for v in unmatched)
    assert any(len(v) > 60 for v in values)


def test_the_same_seed_breaks_the_same_values():
    first = [p.url for p in _requests(Generator(Contract(None, "full"), 3), "getTheme")]
    again = [p.url for p in _requests(Generator(Contract(None, "full"), 3), "getTheme")]
    other = [p.url for p in _requests(Generator(Contract(None, "full"), 4), "getTheme")]
    assert first == again and first != other


class _LongIdsAccepted:
    """A deployment in front of a live mock that answers 200 to any request whose path has a
    segment over 200 characters, and passes every other request on unchanged.

    A proxy, not a defect of tests/defects/: the mock decides ids per operation, and no seam of
    it sees the raw path of a request that no route would take.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.client: httpx.AsyncClient | None = None  # made on the server's event loop

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        path = scope["raw_path"].decode("latin-1") if scope.get("raw_path") else scope["path"]
        if any(len(segment) > 200 for segment in path.split("/")):
            status, headers = 200, [(b"content-type", b"application/json")]
            content = json.dumps({"id": "x"}).encode()
        else:
            status, headers, content = await self._forward(scope, receive, path)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    async def _forward(
        self, scope: dict[str, Any], receive: Any, path: str
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        query = scope["query_string"].decode("latin-1")
        url = self.upstream + path + ("?" + query if query else "")
        sent = [(k, v) for k, v in scope["headers"] if k.lower() != b"host"]
        if self.client is None:
            self.client = httpx.AsyncClient(timeout=60)
        body = await Request(scope, receive).body()
        response = await self.client.request(scope["method"], url, headers=sent, content=body)
        dropped = ("content-length", "content-encoding", "transfer-encoding")
        headers = [
            (k.encode("latin-1"), v.encode("latin-1"))
            for k, v in response.headers.items()
            if k not in dropped
        ]
        return response.status_code, headers, response.content


def test_a_deployment_that_accepts_too_long_ids_fails_schema_negative():
    with live_mock() as mock, Served(_LongIdsAccepted(mock.base_url)) as proxy:
        report = run_quietly(mock_url=proxy.base_url, only=["schema-negative"], max_requests=300)
    failures = [f for f in report.failures if f.check == "schema-negative"]
    assert failures and all(f.rule == "refused" for f in failures)
    assert any("path" in f.message and "got 200" in f.message for f in failures)
