"""Every response a test receives is checked against the contract, twice.

Once by the kit's own checker (``conformance.responses``, profile ``full``) and once,
independently, by openapi-core. A response either finds wrong fails the test at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import httpx
from openapi_core import OpenAPI
from openapi_core.datatypes import RequestParameters
from werkzeug.datastructures import Headers

from conformance.responses import ResponseChecker
from mockserver.contract import default_contract
from mockserver.dispatch import Router


@dataclass
class _Request:
    method: str
    host_url: str
    path: str
    body: bytes | None
    content_type: str
    parameters: RequestParameters


@dataclass
class _Response:
    status_code: int
    content_type: str
    headers: Headers
    data: bytes


@cache
def checker() -> ResponseChecker:
    return ResponseChecker(default_contract().document, "full")


@cache
def openapi() -> OpenAPI:
    return OpenAPI.from_dict(default_contract().document)


@cache
def router() -> Router:
    return Router(default_contract().operations)


class ContractViolation(AssertionError):
    pass


def check_response(response: httpx.Response) -> None:
    """Fail unless the response is what the contract allows for its request."""
    request = response.request
    path = request.url.path
    assert response.headers.get("x-request-id"), f"{request.method} {path}: no x-request-id"
    operation, _ = router().match(
        request.method, request.url.raw_path.decode("latin-1").split("?")[0], encoded=True
    )
    if operation is None:
        body = response.json()
        assert (
            response.status_code == 404 and body["success"] is False and body["code"] == "not_found"
        ), body
        return
    problems = checker().check(
        operation.operation_id, response.status_code, response.headers, response.content
    )
    if problems:
        raise ContractViolation(
            f"{request.method} {path} -> {response.status_code}: "
            + "; ".join(f"{p.rule} {p.pointer} {p.message}" for p in problems)
            + f"\nbody: {response.text[:2000]}"
        )
    _openapi_core_check(response)


def _openapi_core_check(response: httpx.Response) -> None:
    request = response.request
    base = f"{request.url.scheme}://{request.url.netloc.decode()}"
    req = _Request(
        request.method.lower(),
        base,
        request.url.raw_path.decode("latin-1").split("?")[0],
        request.content or None,
        request.headers.get("content-type", "application/json"),
        RequestParameters(query=dict(request.url.params), header=Headers(dict(request.headers))),
    )
    resp = _Response(
        response.status_code,
        response.headers.get("content-type", ""),
        Headers(dict(response.headers)),
        response.content,
    )
    spec = openapi()
    # openapi-core checks against the document's server url; ours is templated.
    try:
        spec.validate_response(req, resp)
    except Exception as exc:  # openapi-core raises several unrelated types
        raise ContractViolation(
            f"openapi-core: {request.method} {request.url.path} -> {response.status_code}: "
            f"{type(exc).__name__}: {exc} {getattr(exc, '__cause__', '') or ''}\n"
            f"body: {response.text[:2000]}"
        ) from exc


def json_of(response: httpx.Response) -> Any:
    return response.json()
