"""Whether a request breaks the contract (as a profile states it), judged on the wire.

The suite sends a generated "negative" request to an operation that spends or creates only when
this module finds a stated constraint it breaks: such a request must be refused with 400 before
any charge, so it is a safe validation probe. Values are judged as a server reads them: query,
path and header values are text, coerced to the parameter's type; the body is parsed as JSON.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from conformance.contract import ContractView, Operation, Parameter
from conformance.validators import Validators

_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")


@dataclass(frozen=True)
class Violation:
    location: str  # path | query | header | body
    name: str
    message: str


class RequestChecker:
    """Finds the stated constraints a request breaks (``validate_formats`` only under ``full``)."""

    def __init__(self, view: ContractView) -> None:
        self.view = view
        self.formats = view.profile == "full"
        self._compiled = Validators(view.document, formats=self.formats)
        self._validators: dict[int, Any] = {}  # by the schema's id (the view keeps its schemas)

    def _validator(self, schema: dict[str, Any]) -> Any:
        key = id(schema)
        if key not in self._validators:
            self._validators[key] = self._compiled.get(schema)
        return self._validators[key]

    def violations(
        self, op: Operation, url: str, headers: dict[str, str], body: bytes
    ) -> list[Violation]:
        parts = urlsplit(url)
        found: list[Violation] = []
        found += self._path(op, parts.path)
        found += self._params(op, "query", parse_qsl(parts.query, keep_blank_values=True))
        found += self._params(op, "header", [(k.lower(), v) for k, v in headers.items()])
        found += self._body(op, headers, body)
        return found

    def _path(self, op: Operation, path: str) -> list[Violation]:
        template = op.path.split("/")
        actual = path.split("/")[-len(template) :] if len(template) else []
        pairs = []
        for t, a in zip(template, actual, strict=False):
            if t.startswith("{") and t.endswith("}"):
                pairs.append((t[1:-1], unquote(a)))
        return self._params(op, "path", pairs)

    def _params(
        self, op: Operation, location: str, pairs: list[tuple[str, str]]
    ) -> list[Violation]:
        declared = {
            (p.name.lower() if location == "header" else p.name): p
            for p in op.parameters
            if p.location == location
        }
        found = []
        seen = set()
        for name, text in pairs:
            param = declared.get(name)
            if param is None or name in seen:
                continue
            seen.add(name)
            value = _coerce(param, text)
            for error in self._validator(param.schema).iter_errors(value):
                found.append(Violation(location, param.name, error.message))
        for key, param in declared.items():
            if param.required and key not in seen:
                found.append(Violation(location, param.name, f"required {location} is missing"))
        return found

    def _body(self, op: Operation, headers: dict[str, str], body: bytes) -> list[Violation]:
        if op.body_schema is None:
            return []
        if not body:
            return [Violation("body", "", "a body is required")] if op.body_required else []
        content_type = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
        if content_type.split(";")[0].strip().lower() != "application/json":
            return [Violation("body", "", f"content type {content_type!r} is not JSON")]
        try:
            value = json.loads(body)
        except ValueError:
            return [Violation("body", "", "the body is not JSON")]
        return [
            Violation("body", "/" + "/".join(map(str, e.instance_path)), e.message)
            for e in self._validator(op.body_schema).iter_errors(value)
        ]


def _kind(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None:
        for part in schema.get("allOf", []):
            if isinstance(part, dict) and part.get("type"):
                return _kind(part)
    return kind or "string"


def _coerce(param: Parameter, text: str) -> Any:
    kind = _kind(param.schema)
    if kind == "integer" and _INTEGER.fullmatch(text):
        return int(text)
    if kind == "number" and _NUMBER.fullmatch(text):
        number = float(text)
        return int(number) if number.is_integer() and "." not in text else number
    if kind == "boolean" and text in ("true", "false"):
        return text == "true"
    return text


_CONSTRAINTS = {
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems", "required",
    "minProperties", "maxProperties", "dependentRequired", "not",
}  # fmt: skip


def constrained(view: ContractView, schema: Any, *, bare_string: bool = False) -> bool:
    """Whether a schema states anything a value can break (``type: string`` alone counts only
    when ``bare_string``: a path or header value is always a string)."""
    schema = view.resolve(schema)
    if not isinstance(schema, dict):
        return False
    for key, value in schema.items():
        if key == "type" and value == "string" and not bare_string:
            continue
        if key in _CONSTRAINTS:
            return True
        if key in ("properties", "patternProperties", "$defs") and isinstance(value, dict):
            nested = [constrained(view, s, bare_string=True) for s in value.values()]
        elif key in ("allOf", "anyOf", "oneOf", "prefixItems") and isinstance(value, list):
            nested = [constrained(view, s, bare_string=bare_string) for s in value]
        elif key in ("items", "additionalProperties", "if", "then", "else"):
            nested = [isinstance(value, dict) and constrained(view, value, bare_string=True)]
        else:
            nested = []
        if any(nested):
            return True
    return False


def negatable(view: ContractView, op: Operation, *, path: bool = True) -> bool:
    """Whether a request to ``op`` can break a constraint the view states (``path=False``: one
    besides its path values)."""
    for param in op.parameters:
        if param.location == "path" and not path:
            continue
        if param.required and param.location != "path":
            return True
        if constrained(view, param.schema):
            return True
    return op.body_schema is not None and constrained(view, op.body_schema, bare_string=True)
