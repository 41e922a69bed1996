"""Checking one response against the contract, under a profile.

``ResponseChecker.check`` answers the list of problems with a response: an undocumented
status, a wrong content type, a body or a header that breaks its schema, a missing required
header. Validators are compiled on first use, once for each schema (conformance/validators.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance.profiles import HTTP_METHODS, document_for
from conformance.validators import Validators


@dataclass(frozen=True)
class Problem:
    rule: str  # short name: status, content-type, body, header
    message: str
    pointer: str = ""  # where in the body or which header


class ResponseChecker:
    def __init__(self, document: dict[str, Any], profile: str = "full") -> None:
        self.profile = profile
        self.document = document_for(document, profile)
        self.components = self.document.get("components", {})
        self.operations: dict[str, dict[str, Any]] = {}
        for item in self.document["paths"].values():
            for method in HTTP_METHODS:
                if method in item:
                    self.operations[item[method]["operationId"]] = item[method]
        self._cache: dict[tuple[str, str], Any] = {}
        self._validators = Validators(self.document, formats=True)

    def resolve(self, node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node:
            target: Any = self.document
            for part in node["$ref"][2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            node = target
        return node

    def response_for(self, operation_id: str, status: int) -> tuple[str, dict[str, Any]] | None:
        """The documented response a status falls under: exact, then ``4XX``, then default."""
        responses = self.operations[operation_id]["responses"]
        for key in (str(status), f"{str(status)[0]}XX", "default"):
            if key in responses:
                return key, self.resolve(responses[key])
        return None

    def _validator(self, operation_id: str, key: str, schema: dict[str, Any]) -> Any:
        cached = self._cache.get((operation_id, key))
        if cached is None:
            cached = self._cache[(operation_id, key)] = self._validators.get(schema)
        return cached

    def check(
        self,
        operation_id: str,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
    ) -> list[Problem]:
        found = self.response_for(operation_id, status)
        if found is None:
            documented = ", ".join(self.operations[operation_id]["responses"])
            return [
                Problem("status", f"status {status} is not documented (documented: {documented})")
            ]
        key, response = found
        problems = self._check_headers(response, headers)
        content = response.get("content")
        if not content:
            return problems
        content_type = headers.get("content-type", "")
        media = content_type.split(";")[0].strip().lower()
        if media not in content:
            problems.append(
                Problem(
                    "content-type", f"content type {content_type!r} is not one of {sorted(content)}"
                )
            )
            return problems
        try:
            value = json.loads(body)
        except ValueError as exc:
            problems.append(Problem("body", f"the body is not JSON: {exc}"))
            return problems
        schema = content[media].get("schema")
        if schema is not None:
            validator = self._validator(operation_id, key, schema)
            for error in validator.iter_errors(value):
                pointer = "".join(f"/{p}" for p in error.instance_path)
                problems.append(Problem("body", error.message, pointer))
        return problems

    def _check_headers(self, response: dict[str, Any], headers: Mapping[str, str]) -> list[Problem]:
        lowered = {k.lower(): v for k, v in headers.items()}
        problems = []
        for name, raw in response.get("headers", {}).items():
            header = self.resolve(raw)
            value = lowered.get(name.lower())
            if value is None:
                if header.get("required"):
                    problems.append(Problem("header", f"required header {name} is missing", name))
                continue
            schema = self.resolve(header.get("schema", {}))
            if schema.get("type") == "integer" and not re.fullmatch(r"-?\d+", value):
                problems.append(
                    Problem("header", f"header {name} is not an integer: {value!r}", name)
                )
            elif schema.get("minLength") and len(value) < schema["minLength"]:
                problems.append(Problem("header", f"header {name} is empty", name))
        return problems
