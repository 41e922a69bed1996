"""The contract as the suite reads it: operations, their flags, error codes, limits, quotes.

Everything a check needs to know about bounds, codes, headers and limits is read here from
``spec/openapi.yaml`` (the bundled copy), under a profile: :class:`ContractView` wraps either the
whole document or the relaxed one :func:`conformance.profiles.document_for` answers. Nothing the
contract states is repeated in Python.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any

from conformance.profiles import HTTP_METHODS, document_for, inferred_operations

WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


@dataclass(frozen=True)
class Parameter:
    name: str
    location: str  # path | query | header
    required: bool
    schema: dict[str, Any]
    deprecated: bool = False


@dataclass(frozen=True)
class Operation:
    """One operation of the contract (as a profile sees it)."""

    operation_id: str
    method: str  # upper case
    path: str
    definition: dict[str, Any] = field(repr=False)
    parameters: tuple[Parameter, ...] = field(repr=False)
    body_schema: dict[str, Any] | None = field(repr=False)
    body_required: bool = False

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def public(self) -> bool:
        return self.definition.get("security") == []

    @property
    def inferred(self) -> bool:
        return self.definition.get("x-inferred") is True

    @property
    def creating(self) -> bool:
        """A POST, PUT, PATCH or DELETE creates or changes something."""
        return self.method in WRITE_METHODS

    @property
    def paid(self) -> bool:
        """An operation that declares 402 and is not a read spends credits."""
        return self.method != "GET" and "402" in self.definition.get("responses", {})

    @property
    def statuses(self) -> tuple[str, ...]:
        return tuple(self.definition.get("responses", {}))

    def parameter(self, name: str, location: str | None = None) -> Parameter | None:
        for param in self.parameters:
            if param.name.lower() == name.lower() and location in (None, param.location):
                return param
        return None

    @property
    def path_parameters(self) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if p.location == "path")

    @property
    def idempotency_key(self) -> Parameter | None:
        return self.parameter("Idempotency-Key", "header")


class ContractView:
    """A document (whole or relaxed) with its operations indexed."""

    def __init__(self, document: dict[str, Any], profile: str = "full") -> None:
        self.document = document
        self.profile = profile
        self.operations: dict[str, Operation] = {}
        for path, item in document.get("paths", {}).items():
            shared = item.get("parameters", [])
            for method in HTTP_METHODS:
                if method in item:
                    op = self._operation(path, method, item[method], shared)
                    self.operations[op.operation_id] = op

    def _operation(
        self, path: str, method: str, definition: dict[str, Any], shared: list[Any]
    ) -> Operation:
        params = []
        for raw in [*shared, *definition.get("parameters", [])]:
            param = self.resolve(raw)
            params.append(
                Parameter(
                    name=param["name"],
                    location=param["in"],
                    required=bool(param.get("required")) or param["in"] == "path",
                    schema=self.resolve(param.get("schema", {})),
                    deprecated=bool(param.get("deprecated")),
                )
            )
        body = self.resolve(definition.get("requestBody", {}))
        media = body.get("content", {}).get("application/json", {})
        return Operation(
            operation_id=definition["operationId"],
            method=method.upper(),
            path=path,
            definition=definition,
            parameters=tuple(params),
            body_schema=media.get("schema") if media else None,
            body_required=bool(body.get("required")),
        )

    # -- references ---------------------------------------------------------------------------

    def resolve(self, node: Any) -> Any:
        """Follow local ``$ref``s until a node that is not a reference."""
        while isinstance(node, dict) and "$ref" in node:
            node = self.pointer(node["$ref"])
        return node

    def pointer(self, ref: str) -> Any:
        node: Any = self.document
        for part in ref.lstrip("#/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def flatten(self, schema: Any) -> dict[str, Any]:
        """Properties and required names of an object schema, merged through ``allOf``."""
        schema = self.resolve(schema)
        merged: dict[str, Any] = {"properties": {}, "required": []}
        if not isinstance(schema, dict):
            return merged
        for part in [schema, *schema.get("allOf", [])]:
            part = self.resolve(part)
            if part is not schema and "allOf" in part:
                inner = self.flatten(part)
                merged["properties"].update(inner["properties"])
                merged["required"].extend(inner["required"])
                continue
            merged["properties"].update(part.get("properties", {}))
            merged["required"].extend(part.get("required", []))
        return merged

    # -- operations ---------------------------------------------------------------------------

    def find(self, method: str, path: str) -> Operation | None:
        """The operation whose path template matches a concrete path."""
        parts = path.split("?")[0].rstrip("/").split("/")
        for op in self.operations.values():
            if op.method != method.upper():
                continue
            template = op.path.split("/")
            if len(template) == len(parts) and all(
                t == p or (t.startswith("{") and t.endswith("}") and p)
                for t, p in zip(template, parts, strict=True)
            ):
                return op
        return None

    def success_schema(self, op: Operation) -> dict[str, Any] | None:
        responses = op.definition.get("responses", {})
        for key in ("200", "201", "2XX"):
            if key in responses:
                response = self.resolve(responses[key])
                media = response.get("content", {}).get("application/json")
                return media.get("schema") if media else None
        return None

    def response_headers(self, op: Operation, status: int) -> dict[str, Any]:
        responses = op.definition.get("responses", {})
        for key in (str(status), f"{str(status)[0]}XX", "default"):
            if key in responses:
                response = self.resolve(responses[key])
                return {
                    name.lower(): self.resolve(h) for name, h in response.get("headers", {}).items()
                }
        return {}

    # -- errors, limits, quotes ---------------------------------------------------------------

    @cached_property
    def error_codes(self) -> dict[int, tuple[str, ...]]:
        """Known codes per status, read from each reusable error response's ``x-known-codes``."""
        table: dict[int, tuple[str, ...]] = {}
        for response in self.document.get("components", {}).get("responses", {}).values():
            media = response.get("content", {}).get("application/json", {})
            codes = self._known_codes(media.get("schema", {}))
            if codes is None:
                continue
            for op in self.operations.values():
                for status, ref in op.definition.get("responses", {}).items():
                    if status.isdigit() and self.resolve(ref) is response:
                        table[int(status)] = codes
        return table

    def _known_codes(self, schema: Any) -> tuple[str, ...] | None:
        schema = self.resolve(schema)
        for part in [schema, *schema.get("allOf", [])] if isinstance(schema, dict) else []:
            code = self.resolve(self.resolve(part).get("properties", {}).get("code", {}))
            if isinstance(code, dict) and "x-known-codes" in code:
                return tuple(code["x-known-codes"])
        return None

    def error_description(self, status: int) -> str:
        for op in self.operations.values():
            ref = op.definition.get("responses", {}).get(str(status))
            if ref is not None:
                return str(self.resolve(ref).get("description", "")).strip()
        return ""

    @property
    def limits(self) -> dict[str, Any]:
        return dict(self.document.get("x-limits", {}))

    @property
    def rate_limit(self) -> dict[str, Any]:
        return dict(self.document.get("x-rate-limit", {}))

    def quote(self, ref: str, default: str = "") -> str:
        """The text at a pointer of the document (a description), for citing a rule."""
        try:
            node = self.pointer(ref)
        except (KeyError, TypeError, IndexError):
            return default
        text = node.get("description", "") if isinstance(node, dict) else str(node)
        return " ".join(str(text).split()) or default

    def iter_operations(self, *, include_inferred: bool = True) -> Iterator[Operation]:
        for op in self.operations.values():
            if include_inferred or not op.inferred:
                yield op

    # -- paging ---------------------------------------------------------------------------------

    def items_field(self, op: Operation) -> str | None:
        """The required array property of a list's success body (``campaigns``, ``jobs`` …)."""
        schema = self.success_schema(op)
        if schema is None:
            return None
        flat = self.flatten(schema)
        for name in flat["required"]:
            prop = self.resolve(flat["properties"].get(name, {}))
            if isinstance(prop, dict) and prop.get("type") == "array":
                return name
        return None

    def is_cursor_list(self, op: Operation) -> bool:
        if op.method != "GET" or op.parameter("cursor", "query") is None:
            return False
        schema = self.success_schema(op)
        return schema is not None and "nextCursor" in self.flatten(schema)["properties"]


def link_value(expression: str, path: dict[str, Any], body: Any) -> Any:
    """The value a link's runtime expression names: ``$response.body#/a/b`` in the answer's
    body, ``$request.path.name`` among the path values the request used; None for anything
    else (or a pointer that leads nowhere)."""
    if expression.startswith("$request.path."):
        return path.get(expression.removeprefix("$request.path."))
    if not expression.startswith("$response.body#/"):
        return None
    for part in expression.split("#/", 1)[1].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        body = body.get(part) if isinstance(body, dict) else None
    return body


@cache
def _bundled_document() -> dict[str, Any]:
    from mockserver.contract import default_contract

    return default_contract().document


def bundled_document() -> dict[str, Any]:
    """A copy of the bundled contract, ``spec/openapi.yaml``."""
    return copy.deepcopy(_bundled_document())


class Contract:
    """The whole contract and the view a profile holds a deployment to."""

    def __init__(self, document: dict[str, Any] | None = None, profile: str = "full") -> None:
        self.document = document if document is not None else bundled_document()
        self.profile = profile
        self.full = ContractView(self.document, "full")
        self.held = ContractView(document_for(self.document, profile), profile)
        self.inferred_operations = inferred_operations(self.document)

    def applicable(self, op: Operation) -> bool:
        """Whether the profile holds the deployment to this operation at all."""
        return not (self.profile == "contract" and op.operation_id in self.inferred_operations)
