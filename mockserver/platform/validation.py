"""Request validation compiled from the contract once, at start-up.

For every operation the contract's parameters (path, query, header) and request body are
compiled into JSON Schema 2020-12 validators (jsonschema-rs); nothing reads the OpenAPI document
per request. A failure answers ``400 invalid_request`` whose ``details.errors`` lists each broken
rule: where (``location``), which field (``path``, a JSON Pointer), the rule (``rule``, the JSON
Schema keyword, or ``unknownField``) and a ``message``. Query parameters the operation does not
declare are refused (``x-limits.unknownQueryParameters``). Defaults the contract declares are
filled in after validation.

- Integer parameters accept any text of ASCII digits (an optional ``-`` first); a value outside
  ``x-limits.integerRange`` is refused with the rule ``integerRange``, and a number a double
  cannot hold (``1e400``) with ``numberRange``, both ``details.reason`` ``number_out_of_range``
  (``x-limits.unrepresentableInput``). Nothing is turned into infinity, and no text is handed
  to ``int()`` unbounded.
- Secret fields (``x-secret: true``, found once per operation by walking its body schema) are
  never quoted: an error at a secret, inside one, or at an object or array that holds one (the
  body itself included) gets a message that names the field and the rule, built from the rule's
  own limit, never from the value. The secrets a request carries are also scrubbed from the
  messages by text, as a second line of defence.
"""

from __future__ import annotations

import copy
import json
import math
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any

import jsonschema_rs

from mockserver.contract import Contract, Operation
from mockserver.platform.errors import ApiError

MISSING: Any = object()
INTEGER = re.compile(r"-?[0-9]+")
NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
INT64 = (-(2**63), 2**63 - 1)
RANGE_RULES = ("integerRange", "numberRange")
REDACTED = "[secret]"
# A secret pattern's segment that matches any array index or object key.
ANY: Any = None
# Where validators find the contract's ``components``: one resource of one registry, shared by
# every validator (each holds only its own schema and what it references).
COMPONENTS_URI = "urn:mockserver:contract"
# Keywords whose values are schemas, maps of schemas, or lists of schemas (JSON Schema 2020-12);
# a ``$ref`` anywhere else (in ``enum``, ``default``, ``example``, an ``x-`` extension) is data.
_SUBSCHEMA = frozenset(
    {
        "items",
        "additionalItems",
        "additionalProperties",
        "unevaluatedItems",
        "unevaluatedProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "contentSchema",
    }
)
_SUBSCHEMA_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas", "$defs"})
_SUBSCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})


def pointer(parts: Iterable[Any]) -> str:
    """A JSON Pointer (RFC 6901) to ``parts``: the one encoder of the mock's error paths."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _describe(
    error: Any, location: str, prefix: list[Any], secrets: Secrets | None = None
) -> dict[str, str]:
    """One jsonschema-rs error as the contract's field-level detail (secrets never quoted)."""
    at = list(error.instance_path)
    path = prefix + at
    keywords = [p for p in error.schema_path if isinstance(p, str)]
    rule = keywords[-1] if keywords else "schema"
    message = error.message
    if "NoUnknownFields" in keywords:
        rule = "unknownField"
        message = f"unknown field {path[-1]!r}" if path else "unknown field"
    else:
        if rule in ("required", "dependentRequired"):
            missing = getattr(error.kind, "property", None)
            if missing is not None:
                path = [*path, missing]
        if secrets is not None:
            message = secrets.message(error, rule, at, message)
    return {"location": location, "path": pointer(path), "rule": rule, "message": message}


def _rule_text(error: Any) -> str | None:
    """What the broken rule asks for, from the rule's own values, never from the instance."""
    kind = error.kind
    name = type(kind).__name__
    limit = getattr(kind, "limit", None)
    bounded = {
        "MinLength": "must be at least {} characters",
        "MaxLength": "must be at most {} characters",
        "MinItems": "must have at least {} items",
        "MaxItems": "must have at most {} items",
        "MinProperties": "must have at least {} properties",
        "MaxProperties": "must have at most {} properties",
        "Minimum": "must be at least {}",
        "Maximum": "must be at most {}",
        "ExclusiveMinimum": "must be more than {}",
        "ExclusiveMaximum": "must be less than {}",
    }
    if name in bounded and limit is not None:
        return bounded[name].format(limit)
    if name == "Type":
        types = getattr(kind, "types", None) or []
        return "must be of type " + " or ".join(str(t) for t in types) if types else None
    if name == "Pattern":
        return f"must match the pattern {getattr(kind, 'pattern', '')}"
    if name == "Format":
        return f"must be a valid {getattr(kind, 'format', 'value')}"
    if name == "Required":
        return f"must have the property {getattr(kind, 'property', '')!r}"
    fixed = {
        "UniqueItems": "must not repeat an item",
        "Enum": "must be one of the allowed values",
        "Constant": "must be the one allowed value",
        "MultipleOf": "must be a multiple of the allowed step",
        "FalseSchema": "is not allowed",
    }
    return fixed.get(name)


# Kinds whose message names only schema values or keys, never the instance's values.
_QUOTES_NO_VALUE = frozenset({"Required", "AdditionalProperties", "UnevaluatedProperties"})


def _matches(pattern: tuple[Any, ...], path: list[Any]) -> bool:
    return all(p is ANY or p == s for p, s in zip(pattern, path, strict=False))


def _holds_name(instance: Any, names: frozenset[str]) -> bool:
    """True when an object or array holds, at any depth, a key named like a secret field."""
    stack = [instance]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if names.intersection(node):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


@dataclass(frozen=True)
class Secrets:
    """The secret fields of a request body, read once from the contract's ``x-secret`` marks.

    ``patterns`` are the JSON Pointers of the body's secret fields, as tuples whose ``ANY``
    segments match any array index or key; ``names`` are the names of every secret field of the
    contract (for a belt-and-braces check of values a body schema does not declare).
    """

    patterns: tuple[tuple[Any, ...], ...] = ()
    names: frozenset[str] = frozenset()

    def field_at(self, path: list[Any]) -> tuple[Any, ...] | None:
        """The secret field a path is at or inside, if any."""
        for pattern in self.patterns:
            if len(path) >= len(pattern) and _matches(pattern, path):
                return pattern
        return None

    def holds(self, path: list[Any]) -> bool:
        """True when a path is an object or array a secret field sits under (the body, too)."""
        return any(len(path) < len(p) and _matches(p, path) for p in self.patterns)

    def message(self, error: Any, rule: str, path: list[Any], message: str) -> str:
        """The error's message, or one naming the field and rule when it could quote a secret."""
        secret = self.field_at(path)
        text = _rule_text(error)
        if secret is not None:
            name = next((s for s in reversed(secret) if isinstance(s, str)), pointer(path))
            inside = "" if len(path) == len(secret) else f" (at {pointer(path)})"
            return f"{name}{inside}: {text or f'does not satisfy {rule}'}"
        if type(error.kind).__name__ in _QUOTES_NO_VALUE:
            return message
        if self.holds(path) or _holds_name(error.instance, self.names):
            where = f"the value at {pointer(path)}" if path else "the body"
            return f"{where} does not satisfy {rule}" + (f": {text}" if text else "")
        return message

    def values(self, body: Any) -> list[str]:
        """Every string a body carries at or under a secret field, longest first."""
        found: set[str] = set()
        stack: list[tuple[Any, list[Any], bool]] = [(body, [], False)]
        while stack:  # iterative: a body may nest deeper than Python's recursion limit
            node, path, secret = stack.pop()
            secret = secret or self.field_at(path) is not None
            if isinstance(node, str):
                if secret and len(node) >= 4:
                    found.add(node)
            elif isinstance(node, dict):
                stack.extend((v, [*path, k], secret or k in self.names) for k, v in node.items())
            elif isinstance(node, list):
                stack.extend((v, [*path, i], secret) for i, v in enumerate(node))
        return sorted(found, key=len, reverse=True)

    def redacted(self, body: Any) -> Any:
        """A copy of a body with every value at or under a secret field replaced (journal)."""

        def walk(node: Any, path: list[Any], secret: bool) -> Any:
            if secret or self.field_at(path) is not None:
                return REDACTED
            if isinstance(node, dict):
                return {k: walk(v, [*path, k], k in self.names) for k, v in node.items()}
            if isinstance(node, list):
                return [walk(v, [*path, i], False) for i, v in enumerate(node)]
            return node

        return walk(body, [], False)

    def scrub(self, errors: list[dict[str, str]], body: Any) -> None:
        """Replace any secret of the body still found in a message (escaped or not)."""
        values = self.values(body) if errors else []
        for value in values:
            forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
            for error in errors:
                for form in forms:
                    if form in error["message"]:
                        error["message"] = error["message"].replace(form, REDACTED)


class _OutOfRange(Exception):
    """A parameter's number the service does not represent."""

    def __init__(self, rule: str, text: str) -> None:
        super().__init__(text)
        self.rule = rule
        self.text = text


def _range_text(low: int, high: int) -> str:
    for bits in (8, 16, 32, 53, 63, 64, 128):
        if low == -(2**bits) and high == 2**bits - 1:
            return f"-2^{bits} to 2^{bits}-1 ({low} to {high})"
    return f"{low} to {high}"


def _integer(text: str, bounds: tuple[int, int]) -> int:
    """An integer text read safely: never more digits to ``int()`` than the range has."""
    low, high = bounds
    negative = text.startswith("-")
    digits = text.lstrip("-").lstrip("0") or "0"
    if len(digits) <= max(len(str(abs(low))), len(str(abs(high)))):
        value = -int(digits) if negative else int(digits)
        if low <= value <= high:
            return value
    raise _OutOfRange("integerRange", f"must be an integer from {_range_text(low, high)}")


def _number(text: str, bounds: tuple[int, int]) -> int | float:
    """A number text as a double; one a double cannot hold is refused, never infinity."""
    number = float(text)  # any length; too large gives inf, too small 0.0
    if math.isinf(number):
        raise _OutOfRange(
            "numberRange",
            f"must be a number an IEEE 754 double holds (magnitude at most {sys.float_info.max!r})",
        )
    low, high = bounds
    if number.is_integer() and "." not in text and low <= number <= high:
        return int(number)
    return number


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
    integer_range: tuple[int, int] = INT64

    def coerce(self, text: str) -> Any:
        """The value of a text, typed as the schema reads it (raises _OutOfRange)."""
        if self.kind == "integer" and INTEGER.fullmatch(text):
            return _integer(text, self.integer_range)
        if self.kind == "number" and NUMBER.fullmatch(text):
            return _number(text, self.integer_range)
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

    def __init__(
        self, contract: Contract, operation: Operation, compiler: _Compiler | None = None
    ) -> None:
        self.operation = operation
        self._compiler = compiler or _Compiler(contract)
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
        self.secrets = Secrets(names=self._compiler.secret_names)
        if body is not None:
            schema = contract.resolve(body)["content"]["application/json"]["schema"]
            self.body_validator = self._compiler.validator(schema)
            self.body_defaults = self._compiler.defaults(schema)
            self.secrets = Secrets(self._compiler.secret_patterns(schema), self.secrets.names)

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
            found = [
                _describe(e, "body", [], self.secrets)
                for e in self.body_validator.iter_errors(body)
            ]
            self.secrets.scrub(found, body)
            errors.extend(found)
        if errors:
            unrepresentable = any(e["rule"] in RANGE_RULES for e in errors)
            raise ApiError(
                "invalid_request",
                "the request does not match the contract: " + errors[0]["message"],
                details={
                    "reason": "number_out_of_range" if unrepresentable else "schema",
                    "errors": errors,
                },
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
                            "path": pointer([name]),
                            "rule": "unknownParameter",
                            "message": f"unknown query parameter {name!r}",
                        }
                    )
                continue
            if name in seen:
                errors.append(
                    {
                        "location": location,
                        "path": pointer([name]),
                        "rule": "duplicate",
                        "message": f"parameter {name!r} was sent more than once",
                    }
                )
                continue
            seen.add(name)
            try:
                value = param.coerce(text)
            except _OutOfRange as refused:
                errors.append(
                    {
                        "location": location,
                        "path": pointer([name]),
                        "rule": refused.rule,
                        "message": f"{location} parameter {name!r} {refused.text}",
                    }
                )
                continue
            found = [_describe(e, location, [name]) for e in param.validator.iter_errors(value)]
            errors.extend(found)
            values[param.name] = value
        for key, param in declared.items():
            if param.name in values or key in seen:
                continue
            if param.required:
                errors.append(
                    {
                        "location": location,
                        "path": pointer([param.name]),
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
        self.registry = jsonschema_rs.Registry(
            [(COMPONENTS_URI, {"components": contract.document["components"]})],
            draft=jsonschema_rs.Draft202012,
        )

    @cached_property
    def integer_range(self) -> tuple[int, int]:
        """``x-limits.integerRange``; a contract without one (the control plane's): 64-bit."""
        try:
            low, high = self.contract.limits["integerRange"]
        except KeyError:
            return INT64
        return int(low), int(high)

    @cached_property
    def secret_names(self) -> frozenset[str]:
        """The name of every secret field of any request body of the contract."""
        names: set[str] = set()
        for op in self.contract.operations.values():
            body = op.definition.get("requestBody")
            if body is None:
                continue
            schema = self.contract.resolve(body).get("content", {}).get("application/json", {})
            for pattern in self.secret_patterns(schema.get("schema", {})):
                names.update([s for s in pattern if isinstance(s, str)][-1:])
        return frozenset(names)

    def secret_patterns(self, schema: Any) -> tuple[tuple[Any, ...], ...]:
        """The JSON Pointers (``ANY`` for any index or key) of the fields marked ``x-secret``."""
        found: dict[tuple[Any, ...], None] = {}
        self._walk_secrets(schema, (), found, frozenset())
        return tuple(found)

    def _walk_secrets(
        self,
        schema: Any,
        at: tuple[Any, ...],
        found: dict[tuple[Any, ...], None],
        refs: frozenset[str],
    ) -> None:
        if not isinstance(schema, dict):
            return
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/") and ref not in refs:
            self._walk_secrets(self.contract.pointer(ref), at, found, refs | {ref})
        if schema.get("x-secret") is True:
            found[at] = None
        for key in ("allOf", "anyOf", "oneOf", "prefixItems"):
            for index, part in enumerate(schema.get(key, [])):
                self._walk_secrets(part, (*at, index) if key == "prefixItems" else at, found, refs)
        for key in ("if", "then", "else"):
            self._walk_secrets(schema.get(key), at, found, refs)
        for part in schema.get("dependentSchemas", {}).values():
            self._walk_secrets(part, at, found, refs)
        for name, part in schema.get("properties", {}).items():
            self._walk_secrets(part, (*at, name), found, refs)
        for part in schema.get("patternProperties", {}).values():
            self._walk_secrets(part, (*at, ANY), found, refs)
        for key in ("additionalProperties", "items"):
            self._walk_secrets(schema.get(key), (*at, ANY), found, refs)

    def validator(self, schema: dict[str, Any]) -> Any:
        """A schema's validator. Its ``#/components/...`` references are read from the shared
        registry (as if the schema sat beside the contract's ``components``: the same rules,
        error messages and schema paths), so that no validator holds a copy of them all."""
        return jsonschema_rs.Draft202012Validator(
            _anchored(schema), validate_formats=True, registry=self.registry
        )

    def parameter(self, param: dict[str, Any]) -> Parameter:
        schema = param.get("schema", {})
        return Parameter(
            name=param["name"],
            location=param["in"],
            required=bool(param.get("required")),
            kind=self._type(schema),
            default=self._default(schema),
            validator=self.validator(schema),
            integer_range=self.integer_range,
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


def _anchored(schema: Any) -> Any:
    """A copy of a schema whose local references (``#/...``) name the registry's resource."""
    if isinstance(schema, list):
        return [_anchored(part) for part in schema]
    if not isinstance(schema, dict):
        return schema
    copied: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str) and value.startswith("#"):
            value = COMPONENTS_URI + value
        elif key in _SUBSCHEMA or key in _SUBSCHEMA_LISTS:
            value = _anchored(value)
        elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            value = {name: _anchored(part) for name, part in value.items()}
        copied[key] = value
    return copied


@cache
def compile_all(contract: Contract) -> dict[str, OperationValidator]:
    """Every operation's validators, compiled once per contract per process (shared by every
    runtime: the default world, its sandboxes, and mocks started again in one process)."""
    compiler = _Compiler(contract)
    return {
        op_id: OperationValidator(contract, op, compiler)
        for op_id, op in contract.operations.items()
    }
