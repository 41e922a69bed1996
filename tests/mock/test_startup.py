"""Start-up binds every operationId of the contract to exactly one handler, or refuses."""

from __future__ import annotations

import pytest

from mockserver import areas, registry
from mockserver.contract import Contract, default_contract


def test_every_operation_is_bound():
    areas.load()
    bound = registry.bind(default_contract())
    assert set(bound) == set(default_contract().operations)


def test_an_operation_without_a_handler_refuses_to_start():
    areas.load()
    document = dict(default_contract().document)
    document["paths"] = {
        **document["paths"],
        "/v1/brand-new": {
            "get": {"operationId": "brandNewThing", "responses": {"200": {"description": "x"}}}
        },
    }
    with pytest.raises(registry.StartupError, match="operations without a handler: brandNewThing"):
        registry.bind(Contract(document))


def test_a_handler_for_an_operation_the_contract_lacks_refuses_to_start():
    areas.load()
    document = dict(default_contract().document)
    document["paths"] = {k: v for k, v in document["paths"].items() if k != "/v1/products"}
    with pytest.raises(
        registry.StartupError,
        match="handlers for operations the contract lacks: createProduct, listProducts",
    ):
        registry.bind(Contract(document))
