"""Request validation compiled from the contract once, at start-up.

For every operation the contract's parameters (path, query, header) and request body are
compiled into JSON Schema 2020-12 validators (jsonschema-rs); nothing reads the OpenAPI document
per request. A failure answers ``400 invalid_request`` whose ``details.errors`` lists each broken
rule: where (``location``), which field (``path``, a JSON Pointer), the rule (``rule``, the JSON
Schema keyword, or ``unknownField``) and a ``message``. Query parameters the operation does not
declare are refused (``x-limits.unknownQueryParameters``). Defaults the contract declares are
filled in after validation.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema_rs

from mockserver.contract import Contract, Operation
from mockserver.platform.errors import ApiError

MISSING: Any = object()
INTEGER = re.compile(r"-?\d{1,18}")
NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")


def _pointer(parts: list[Any]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _describe(error: Any, location: str, prefix: list[Any]) -> dict[str, str]:
    """One jsonschema-rs error as the contract's field-level detail."""
    path = prefix + list(error.instance_path)
    keywords = [p for p in error.schema_path if isinstance(p, str)]
    rule = keywords[-1] if keywords else "schema"
    message = error.message
    if "NoUnknownFields" in keywords:
        rule = "unknownField"
        message = f"unknown field {path[-1]!r}" if path else "unknown field"
    elif rule in ("required", "dependentRequired"):
        missing = getattr(error.kind, "property", None)
        if missing is not None:
            path = [*path, missing]
    return {"location": location, "path": _pointer(path), "rule": rule, "message": message}


@dataclass
class Defaults:
    """Defaults to fill in, compiled from a schema: a value here, or deeper properties."""

    value: Any = MISSING
    properties: dict[str, Defaults] = field(default_factory=dict)

    def fill(self, instance: Any) -> None:
        if not isinstance(instance, dict):
            return
        for name, node in self.properties.items():
            if name not in instance and node.value is not MISSING:
                instance[name] = copy.deepcopy(node.value)
            if name in instance:
                node.fill(instance[name])


@dataclass
class Parameter:
    name: str
    location: str
    required: bool
    kind: str  # how a text value is read: integer, number, boolean or string
    default: Any
    validator: Any

    def coerce(self, text: str) -> Any:
        if self.kind == "integer" and INTEGER.fullmatch(text):
            return int(text)
        if self.kind == "number" and NUMBER.fullmatch(text):
            number = float(text)
            return int(number) if number.is_integer() and "." not in text else number
        if self.kind == "boolean" and text in ("true", "false"):
            return text == "true"
        return text


@dataclass
class Validated:
    path: dict[str, Any]
    query: dict[str, Any]
    headers: dict[str, Any]
    body: Any


class OperationValidator:
    """The compiled validators of one operation."""

    def __init__(self, contract: Contract, operation: Operation) -> None:
        self.operation = operation
        self._compiler = _Compiler(contract)
        self.parameters: dict[str, dict[str, Parameter]] = {"path": {}, "query": {}, "header": {}}
        for raw in operation.parameters:
            param = contract.resolve(raw)
            key = param["name"].lower() if param["in"] == "header" else param["name"]
            self.parameters[param["in"]][key] = self._compiler.parameter(param)
        body = operation.definition.get("requestBody")
        self.body_required = bool(body and contract.resolve(body).get("required"))
        self.accepts_body = body is not None
        self.body_validator = None
        self.body_defaults = Defaults()
        if body is not None:
            schema = contract.resolve(body)["content"]["application/json"]["schema"]
            self.body_validator = self._compiler.validator(schema)
            self.body_defaults = self._compiler.defaults(schema)

    def validate(
        self,
        path: Mapping[str, str],
        query: list[tuple[str, str]],
        headers: Mapping[str, str],
        body: Any = MISSING,
    ) -> Validated:
        errors: list[dict[str, str]] = []
        values = {
            "path": self._params("path", list(path.items()), errors),
            "query": self._params("query", query, errors),
            "header": self._params("header", [(k.lower(), v) for k, v in headers.items()], errors),
        }
        if body is MISSING:
            if self.body_required:
                errors.append(
                    {
                        "location": "body",
                        "path": "",
                        "rule": "required",
                        "message": "a JSON body is required",
                    }
                )
        elif self.body_validator is not None:
            errors.extend(_describe(e, "body", []) for e in self.body_validator.iter_errors(body))
        if errors:
            raise ApiError(
                "invalid_request",
                "the request does not match the contract: " + errors[0]["message"],
                details={"reason": "schema", "errors": errors},
            )
        if body is not MISSING and body is not None:
            self.body_defaults.fill(body)
        return Validated(values["path"], values["query"], values["header"], body)

    def _params(
        self, location: str, pairs: list[tuple[str, str]], errors: list[dict[str, str]]
    ) -> dict[str, Any]:
        declared = self.parameters[location]
        values: dict[str, Any] = {}
        seen: set[str] = set()
        for name, text in pairs:
            param = declared.get(name)
            if param is None:
                if location == "query":
                    errors.append(
                        {
                            "location": "query",
                            "path": _pointer([name]),
                            "rule": "unknownParameter",
                            "message": f"unknown query parameter {name!r}",
                        }
                    )
                continue
            if name in seen:
                errors.append(
                    {
                        "location": location,
                        "path": _pointer([name]),
                        "rule": "duplicate",
                        "message": f"parameter {name!r} was sent more than once",
                    }
                )
                continue
            seen.add(name)
            value = param.coerce(text)
            found = [_describe(e, location, [name]) for e in param.validator.iter_errors(value)]
            errors.extend(found)
            values[param.name] = value
        for param in declared.values():
            if param.name in values:
                continue
            if param.required:
                errors.append(
                    {
                        "location": location,
                        "path": _pointer([param.name]),
                        "rule": "required",
                        "message": f"{location} parameter {param.name!r} is required",
                    }
                )
            elif param.default is not MISSING:
                values[param.name] = copy.deepcopy(param.default)
        return values


class _Compiler:
    """Turns contract schemas into validators and defaults, resolving references once."""

    def __init__(self, contract: Contract) -> None:
        self.contract = contract
        self.components = contract.document["components"]

    def validator(self, schema: dict[str, Any]) -> Any:
        root = {**schema, "components": self.components}
        return jsonschema_rs.Draft202012Validator(root, validate_formats=True)

    def parameter(self, param: dict[str, Any]) -> Parameter:
        schema = param.get("schema", {})
        return Parameter(
            name=param["name"],
            location=param["in"],
            required=bool(param.get("required")),
            kind=self._type(schema),
            default=self._default(schema),
            validator=self.validator(schema),
        )

    def _branches(self, schema: dict[str, Any]) -> list[dict[str, Any]]:
        """A schema and the allOf branches (references followed) whose keywords also apply."""
        schema = self._merge_ref(schema)
        found = [schema]
        for part in schema.get("allOf", []):
            found.extend(self._branches(part))
        return found

    def _merge_ref(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**self.contract.pointer(schema["$ref"]), **siblings}
        return schema

    def _type(self, schema: dict[str, Any]) -> str:
        for branch in self._branches(schema):
            kind = branch.get("type")
            if isinstance(kind, str):
                return kind
        return "string"

    def _default(self, schema: dict[str, Any]) -> Any:
        for branch in self._branches(schema):
            if "default" in branch:
                return branch["default"]
        return MISSING

    def defaults(self, schema: dict[str, Any]) -> Defaults:
        node = Defaults(value=self._default(schema))
        for branch in self._branches(schema):
            for name, sub in branch.get("properties", {}).items():
                child = self.defaults(sub)
                if child.value is not MISSING or child.properties:
                    node.properties[name] = child
        return node


def compile_all(contract: Contract) -> dict[str, OperationValidator]:
    return {op_id: OperationValidator(contract, op) for op_id, op in contract.operations.items()}
