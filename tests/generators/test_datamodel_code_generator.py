"""datamodel-code-generator turns every component schema into a pydantic model, warning-free."""

from __future__ import annotations

import enum
import importlib.util
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest

from .conftest import run, venv_tool

MODULE = "cgcas_generated_models"


@pytest.fixture(scope="module")
def generated(spec: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    """(generator output, the imported models module)."""
    root = tmp_path_factory.mktemp("datamodel-code-generator")
    target = root / f"{MODULE}.py"
    result = run(
        [
            venv_tool("datamodel-codegen"),
            "--input",
            str(spec),
            "--input-file-type",
            "openapi",
            "--output",
            str(target),
            "--output-model-type",
            "pydantic_v2.BaseModel",
            "--target-python-version",
            "3.11",
            "--formatters",
            "builtin",
            # `format: email` maps to pydantic's EmailStr, which needs the email-validator
            # package at import time; a plain string keeps the test free of that dependency.
            "--type-mappings",
            "email=string",
        ],
        cwd=root,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    spec_ = importlib.util.spec_from_file_location(MODULE, target)
    module = importlib.util.module_from_spec(spec_)
    sys.modules[MODULE] = module
    try:
        spec_.loader.exec_module(module)
        yield output, module
    finally:
        del sys.modules[MODULE]


def test_generates_without_a_warning(generated):
    output, _ = generated
    assert output.strip() == "", output


def test_every_component_schema_produced_a_model(generated, doc):
    # A model (pydantic's RootModel for scalars, arrays and unions) or an Enum per schema.
    _, module = generated
    names = doc["components"]["schemas"]
    missing = [
        name
        for name in names
        if not (
            inspect.isclass(getattr(module, name, None))
            and issubclass(getattr(module, name), pydantic.BaseModel | enum.Enum)
        )
    ]
    assert not missing
    assert len(names) >= 140


def test_error_models_read_code_and_typed_details(generated, doc):
    _, module = generated
    errors = {
        ref.rsplit("/", 1)[-1]
        for response in doc["components"]["responses"].values()
        for ref in [response.get("content", {}).get("application/json", {}).get("schema", {})]
        for ref in [ref.get("$ref", "")]
        if ref.endswith("Error")
    }
    assert len(errors) == 11
    for name in errors:
        assert {"success", "error", "code", "details"} <= set(getattr(module, name).model_fields)
    shortfall = module.PaymentRequiredError.model_validate(
        {
            "success": False,
            "error": "e",
            "code": "insufficient_credits",
            "details": {"price": 150, "balance": 100, "shortfall": 50},
        }
    )
    assert (shortfall.code, shortfall.details.shortfall) == ("insufficient_credits", 50)
    conflict = module.ConflictError.model_validate(
        {"success": False, "error": "e", "code": "conflict", "details": {"currentGeneration": 2}}
    )
    assert conflict.details.currentGeneration == 2
    limited = module.RateLimitedError.model_validate(
        {"success": False, "error": "e", "code": "a_code_v1_adds_later"}
    )
    assert limited.code == "a_code_v1_adds_later"  # codes are open: v1's codes only grow
