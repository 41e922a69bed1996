"""The contract, read once: ``spec/openapi.yaml`` parsed, its operations indexed by operationId.

Everything the mock knows about bounds, enums, defaults, error codes and limits comes from here;
Python code does not repeat them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from mockserver.platform import yamlload
from mockserver.resources import spec_path

HTTP_METHODS = ("get", "put", "post", "patch", "delete")


@dataclass(frozen=True)
class Operation:
    """One operation of the contract."""

    operation_id: str
    method: str  # upper case
    path: str  # OpenAPI path template, for example /v1/jobs/{jobId}
    definition: dict[str, Any]
    path_parameters: tuple[dict[str, Any], ...] = ()

    @property
    def parameters(self) -> list[dict[str, Any]]:
        """The operation's parameters, with those its path item declares for every method."""
        return [*self.path_parameters, *self.definition.get("parameters", [])]

    @property
    def public(self) -> bool:
        """True when the operation needs no key (``security: []``)."""
        return self.definition.get("security") == []

    @property
    def inferred(self) -> bool:
        return bool(self.definition.get("x-inferred"))


class Contract:
    """The parsed contract and what is derived from it."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.operations: dict[str, Operation] = {}
        for path, item in document["paths"].items():
            for method in HTTP_METHODS:
                if method in item:
                    definition = item[method]
                    op = Operation(
                        definition["operationId"],
                        method.upper(),
                        path,
                        definition,
                        tuple(item.get("parameters", [])),
                    )
                    self.operations[op.operation_id] = op

    @classmethod
    def load(cls, path: Path | None = None) -> Contract:
        return cls(yamlload.load(path or spec_path()))

    @cached_property
    def json_bytes(self) -> bytes:
        """The document as JSON, serialised once (served by ``GET /v1/openapi.json``)."""
        return json.dumps(self.document, ensure_ascii=False, separators=(",", ":")).encode()

    def resolve(self, node: Any) -> Any:
        """Follow local ``$ref``s until a node that is not a reference."""
        while isinstance(node, dict) and "$ref" in node:
            node = self.pointer(node["$ref"])
        return node

    def pointer(self, ref: str) -> Any:
        """The node at a local JSON Pointer such as ``#/components/schemas/Job``."""
        if not ref.startswith("#/"):
            raise ValueError(f"only local references are supported: {ref}")
        node: Any = self.document
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    @property
    def limits(self) -> dict[str, Any]:
        """The inferred limits (``x-limits``)."""
        return self.document["x-limits"]

    @property
    def rate_limit_per_minute(self) -> int:
        return int(self.document["x-rate-limit"]["requestsPerMinute"])

    @cached_property
    def error_codes_by_status(self) -> dict[int, tuple[str, ...]]:
        """Known error codes per status, read from the reusable error responses."""
        table: dict[int, tuple[str, ...]] = {}
        for op in self.operations.values():
            for status, response in op.definition.get("responses", {}).items():
                if not status.isdigit() or int(status) < 400:
                    continue
                table.setdefault(int(status), self.known_codes(response))
        return table

    def known_codes(self, response: dict[str, Any]) -> tuple[str, ...]:
        """The ``code`` values a reusable error response lists.

        Each error schema's ``code`` is ``type: string`` (the codes of v1 only grow, so any code
        is accepted) and lists the interface document's codes for its status in
        ``x-known-codes``.
        """
        response = self.resolve(response)
        schema = self.resolve(response["content"]["application/json"]["schema"])
        for part in schema.get("allOf", []):
            code = self.resolve(self.resolve(part).get("properties", {}).get("code", {}))
            if "x-known-codes" in code:
                return tuple(code["x-known-codes"])
        raise ValueError("error response without known codes")


@cache
def default_contract() -> Contract:
    """The bundled contract, parsed once per process."""
    return Contract.load()
