"""Validators that read ``components`` from one shared registry judge exactly as validators that
each embed the whole ``components`` section (as they once did): the same errors, with the same
messages, kinds and paths, for every schema the mock compiles, on many generated instances."""

from __future__ import annotations

import random
import string
from collections.abc import Iterator
from typing import Any

import jsonschema_rs
import pytest

from mockserver.contract import Contract, default_contract
from mockserver.control.plane import control_contract
from mockserver.platform.validation import COMPONENTS_URI, _anchored, _Compiler, compile_all

SAMPLES = 40


def compiled_schemas(contract: Contract) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema compile_all compiles: each operation's parameters and request body."""
    for op_id, op in contract.operations.items():
        for raw in op.parameters:
            param = contract.resolve(raw)
            yield f"{op_id} {param['in']} {param['name']}", param.get("schema", {})
        body = op.definition.get("requestBody")
        if body is not None:
            yield f"{op_id} body", contract.resolve(body)["content"]["application/json"]["schema"]


def embedded(contract: Contract, schema: dict[str, Any]) -> Any:
    """The validator as it was: the schema with the whole ``components`` section beside it."""
    root = {**schema, "components": contract.document["components"]}
    return jsonschema_rs.Draft202012Validator(root, validate_formats=True)


class Sampler:
    """Instances near a schema: mostly its shape, with wrong types, out-of-range values,
    unknown and missing fields mixed in."""

    def __init__(self, contract: Contract, seed: int) -> None:
        self.contract = contract
        self.random = random.Random(seed)

    def any(self, depth: int = 0) -> Any:
        r = self.random
        pick = r.randrange(8 if depth < 2 else 6)
        if pick == 0:
            return None
        if pick == 1:
            return r.random() < 0.5
        if pick == 2:
            return r.randint(-(2**40), 2**40)
        if pick == 3:
            return r.uniform(-1e6, 1e6)
        if pick in (4, 5):
            return self.text(r.randint(0, 12))
        if pick == 6:
            return [self.any(depth + 1) for _ in range(r.randint(0, 3))]
        return {self.text(4): self.any(depth + 1) for _ in range(r.randint(0, 3))}

    def text(self, length: int) -> str:
        alphabet = string.ascii_letters + string.digits + "-_:/.@ é"
        return "".join(self.random.choice(alphabet) for _ in range(length))

    def sample(self, schema: Any, depth: int = 0) -> Any:
        r = self.random
        if not isinstance(schema, dict) or depth > 6 or r.random() < 0.08:
            return self.any(depth)
        while "$ref" in schema:
            schema = self.contract.pointer(schema["$ref"])
        if "enum" in schema and r.random() < 0.9:
            return r.choice(schema["enum"])
        if "const" in schema and r.random() < 0.9:
            return schema["const"]
        for key in ("oneOf", "anyOf"):
            if key in schema:
                return self.sample(r.choice(schema[key]), depth + 1)
        if "allOf" in schema:
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                value = self.sample(part, depth + 1)
                if isinstance(value, dict):
                    merged.update(value)
            return merged
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = r.choice(kind)
        if kind == "object" or "properties" in schema:
            return self.object(schema, depth)
        if kind == "array":
            low = schema.get("minItems", 0)
            high = min(schema.get("maxItems", low + 3), low + 3)
            count = r.randint(max(0, low - 1), high + 1)
            return [self.sample(schema.get("items", {}), depth + 1) for _ in range(count)]
        if kind == "string":
            return self.string(schema)
        if kind in ("integer", "number"):
            return self.number(schema, kind)
        if kind == "boolean":
            return r.random() < 0.5
        if kind == "null":
            return None
        return self.any(depth)

    def object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        r = self.random
        required = set(schema.get("required", []))
        value = {}
        for name, sub in schema.get("properties", {}).items():
            if (name in required and r.random() < 0.95) or r.random() < 0.5:
                value[name] = self.sample(sub, depth + 1)
        if r.random() < 0.15:
            value[self.text(6)] = self.any(depth + 1)
        return value

    def string(self, schema: dict[str, Any]) -> str:
        r = self.random
        formats = {
            "date-time": "2026-01-02T03:04:05Z",
            "date": "2026-01-02",
            "uri": "https://example.com/a",
            "email": "a@example.com",
            "uuid": "123e4567-e89b-12d3-a456-426614174000",
        }
        if schema.get("format") in formats and r.random() < 0.7:
            return formats[schema["format"]]
        low = schema.get("minLength", 0)
        high = min(schema.get("maxLength", low + 20), low + 20)
        return self.text(r.randint(max(0, low - 1), high + 1))

    def number(self, schema: dict[str, Any], kind: str) -> int | float:
        r = self.random
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1000))
        high = schema.get("maximum", schema.get("exclusiveMaximum", 1000))
        value = r.randint(int(low) - 2, int(high) + 2) if high - low < 10**6 else r.randint(-9, 9)
        return value if kind == "integer" or r.random() < 0.5 else value + 0.5


def outcome(validator: Any, instance: Any) -> list[tuple[Any, ...]]:
    return [
        (
            type(error.kind).__name__,
            error.message,
            list(error.schema_path),
            list(error.instance_path),
            list(error.evaluation_path),
        )
        for error in validator.iter_errors(instance)
    ]


@pytest.mark.parametrize("which", ["api", "control"])
def test_registry_validators_judge_as_embedded_ones(which: str) -> None:
    contract = default_contract() if which == "api" else control_contract()
    compiler = _Compiler(contract)
    sampler = Sampler(contract, seed=13)
    judged = refused = 0
    for where, schema in compiled_schemas(contract):
        old, new = embedded(contract, schema), compiler.validator(schema)
        for _ in range(SAMPLES):
            instance = sampler.sample(schema)
            expected = outcome(old, instance)
            assert outcome(new, instance) == expected, (where, instance)
            judged += 1
            refused += bool(expected)
    assert judged > 1000
    assert 0.1 < refused / judged < 0.9  # both verdicts were exercised


def test_the_compiled_validators_share_one_registry() -> None:
    validators = compile_all(default_contract())
    body = validators["createProject"].body_validator
    assert body is not None
    assert body.is_valid({"title": "a project"})


def test_only_references_in_schema_positions_are_anchored() -> None:
    ref = {"$ref": "#/components/schemas/Job"}
    schema = {
        "properties": {"default": ref, "enum": {"items": ref}},
        "allOf": [ref],
        "default": ref,
        "enum": [ref],
        "example": ref,
        "x-note": ref,
    }
    anchored = _anchored(schema)
    moved = {"$ref": COMPONENTS_URI + "#/components/schemas/Job"}
    assert anchored["properties"] == {"default": moved, "enum": {"items": moved}}
    assert anchored["allOf"] == [moved]
    for data in ("default", "enum", "example", "x-note"):
        assert anchored[data] == schema[data]
    assert schema["allOf"] == [ref]  # the contract's own document is not changed
