"""The second opinion (openapi-core, as ``contract_check`` configures it) still fails a wrong
response: a header or a body the contract does not allow, seen alone or after the right one
(whose validity it remembers), and even where the kit's own checker were to miss it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

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
