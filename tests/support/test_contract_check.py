"""The second opinion (openapi-core, as ``contract_check`` configures it) still fails a wrong
response: a header or a body the contract does not allow, seen alone or after the right one
(whose validity it remembers), and even where the kit's own checker were to miss it. What it
keeps of the contract reads as the contract, and its verdicts are openapi-core's own."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from typing import Any

import httpx
import pytest
from jsonschema_path import SchemaPath

from mockserver.contract import default_contract
from tests.support import contract_check
from tests.support.client import ApiClient
from tests.support.contract_check import ContractViolation, check_response


def altered(
    response: httpx.Response,
    headers: Callable[[dict[str, str]], dict[str, str]] = lambda headers: headers,
    body: Callable[[Any], Any] | None = None,
) -> httpx.Response:
    """The response with its headers and (JSON) body changed, for the same request."""
    content = response.content if body is None else json.dumps(body(response.json())).encode()
    sent = {k: v for k, v in headers(dict(response.headers)).items() if k != "content-length"}
    return httpx.Response(
        response.status_code, headers=sent, content=content, request=response.request
    )


def without(name: str) -> Callable[[dict[str, str]], dict[str, str]]:
    return lambda headers: {k: v for k, v in headers.items() if k != name}


def setting(name: str, value: str) -> Callable[[dict[str, str]], dict[str, str]]:
    return lambda headers: {**headers, name: value}


def first_item(change: Callable[[dict[str, Any]], None]) -> Callable[[Any], Any]:
    def apply(body: Any) -> Any:
        change(body["products"][0])
        return body

    return apply


WRONG: dict[str, Callable[[httpx.Response], httpx.Response]] = {
    "a required header missing": lambda r: altered(r, without("x-ratelimit-limit")),
    "a header not an integer": lambda r: altered(r, setting("x-ratelimit-remaining", "many")),
    "a header below its minimum": lambda r: altered(r, setting("x-ratelimit-reset", "-1")),
    "an empty request id": lambda r: altered(r, setting("x-request-id", "")),
    "another header's valid value": lambda r: altered(
        r, setting("x-ratelimit-remaining", r.headers["x-request-id"])
    ),
    "a required field missing": lambda r: altered(r, body=first_item(lambda p: p.pop("id"))),
    "a field of the wrong type": lambda r: altered(r, body=first_item(lambda p: p.update(name=7))),
    "a list no longer a list": lambda r: altered(
        r, body=lambda b: {**b, "products": b["products"][0]}
    ),
    "a null body": lambda r: altered(r, body=lambda b: None),
}


@pytest.fixture
def listed(api: ApiClient) -> httpx.Response:
    """A right response, checked (and so its values remembered valid) before it is altered."""
    response = api.get("/v1/products")
    assert response.status_code == 200 and response.json()["products"], response.text
    check_response(response)
    return response


@pytest.mark.parametrize("wrong", WRONG)
def test_openapi_core_fails_a_wrong_response(listed: httpx.Response, wrong: str) -> None:
    bad = WRONG[wrong](listed)
    for _ in range(2):  # and again: what it finds invalid it never remembers
        with pytest.raises(ContractViolation, match=r"^openapi-core: GET /v1/products -> 200"):
            contract_check._openapi_core_check(bad)
    contract_check._openapi_core_check(listed)  # the right one still passes


@pytest.mark.parametrize("wrong", WRONG)
def test_check_response_fails_it_even_where_the_kits_checker_would_not(
    listed: httpx.Response, wrong: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(AssertionError):  # a ContractViolation, or check_response's own assert
        check_response(WRONG[wrong](listed))

    class Blind:
        def check(self, *args: Any) -> list[Any]:
            return []

    monkeypatch.setattr(contract_check, "checker", lambda: Blind())
    bad = WRONG[wrong](listed)
    if wrong != "an empty request id":  # check_response's own assertion refuses that first
        with pytest.raises(ContractViolation, match=r"^openapi-core: "):
            check_response(bad)
    check_response(listed)


def test_a_remembered_value_is_known_by_its_types() -> None:
    """A value equal to one found valid but of other types (a tuple for a list, True for 1,
    a float for an int) is validated, not taken for it."""
    spec = contract_check.openapi().spec
    validator = contract_check._SchemaValidators().create(
        spec, spec / "components" / "headers" / "RateLimitLimit" / "schema"
    )
    validator.validate(1)
    for other in (True, 1.5, "1", None):
        with pytest.raises(Exception, match="not valid for schema"):
            validator.validate(other)
    products = spec / "paths" / "/v1/products" / "get" / "responses" / "200"
    body = products / "content" / "application/json" / "schema"
    lists = contract_check._SchemaValidators().create(
        spec, body / "allOf" / 2 / "properties" / "products"
    )
    lists.validate([])
    with pytest.raises(Exception, match="not valid for schema"):
        lists.validate(())


@pytest.mark.parametrize("wrong", [None, *WRONG])
def test_the_validator_called_directly_judges_as_openapi_core_does(
    listed: httpx.Response, wrong: str | None
) -> None:
    """``OpenAPI.validate_response`` itself, and the response validator it would call, which
    ``_openapi_core_check`` calls directly: the same verdict, the same error."""
    response = listed if wrong is None else WRONG[wrong](listed)
    verdicts = []
    direct = contract_check._response_validator().validate
    for validate in (contract_check.openapi().validate_response, direct):
        try:
            validate(*contract_check._for_openapi_core(response))
        except Exception as exc:
            verdicts.append((type(exc), str(exc)))
        else:
            verdicts.append(None)
    assert verdicts[0] == verdicts[1]
    assert (verdicts[0] is None) == (wrong is None), verdicts


def same_nodes(
    ours: SchemaPath, theirs: SchemaPath, depth: int
) -> Iterator[tuple[SchemaPath, SchemaPath]]:
    """Each node under ``theirs``, ``depth`` levels down, and the same node under ``ours``:
    a child as openapi-core asks for it (``/``), or as ``items()`` gives it where its key
    holds the separator ``/`` would split it at (a callback's expression)."""
    yield ours, theirs
    if depth and theirs.is_traversable():
        listed = dict(ours.items())
        for key, child in theirs.items():
            plain = not isinstance(key, str) or "#" not in key
            yield from same_nodes(ours / key if plain else listed[key], child, depth - 1)


def test_the_contract_reads_the_same_through_the_kept_paths() -> None:
    """The contract as openapi-core reads it here (paths made once, what they resolved kept,
    found or not) reads as through jsonschema-path's own paths, and again the same: every
    node's value, and the keys a header or a schema does not have."""
    kept = contract_check.openapi().spec
    fresh = SchemaPath.from_dict(default_contract().document)
    roots = [  # headers, $refs (a list's responses) and keys that hold "#" (callbacks)
        ("components", "headers"),
        ("paths", "/v1/products", "get"),
        ("paths", "/v1/video/render", "post", "callbacks"),
    ]
    probes = ("deprecated", "style", "explode", "allowEmptyValue", "default", "schema", "nope")
    for _ in range(2):
        for root in roots:
            for ours, theirs in same_nodes(kept.joinpath(*root), fresh.joinpath(*root), 6):
                assert ours.parts == theirs.parts
                assert ours.read_value() == theirs.read_value(), theirs.parts
                for probe in probes:
                    assert (probe in ours) == (probe in theirs), (theirs.parts, probe)
                    for path in (ours, theirs):
                        with pytest.raises(KeyError) if probe not in theirs else nullcontext():
                            (path / probe).read_value()
