"""Profiles: how strictly a deployment is held to the contract.

- ``full``: the whole contract, inferred choices included (the bundled mock is held to this).
- ``contract``: only what the interface document states. Everything the contract marks
  ``x-inferred: true`` is relaxed, as the contract's introduction defines the mark:

  * a schema so marked accepts any value; a property schema so marked, written inline under
    ``properties``, is also dropped from its parent's ``required``;
  * a success response so marked answers under any 2xx (its status code was a choice);
  * a parameter so marked is removed (the deployment may not have it);
  * a response header so marked is not required;
  * an operation so marked (named by title only) is skipped: see :func:`inferred_operations`.
"""

from __future__ import annotations

import copy
from typing import Any

PROFILES = ("contract", "full")
HTTP_METHODS = ("get", "put", "post", "patch", "delete")
SCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas", "$defs")
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
SCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains",
              "propertyNames", "unevaluatedProperties", "unevaluatedItems")  # fmt: skip


def inferred(node: Any) -> bool:
    return isinstance(node, dict) and node.get("x-inferred") is True


def document_for(document: dict[str, Any], profile: str) -> dict[str, Any]:
    """The document a deployment is held to under a profile (a copy; the input is unchanged)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; use one of {', '.join(PROFILES)}")
    document = copy.deepcopy(document)
    if profile == "full":
        return document
    components = document.get("components", {})
    for name, schema in list(components.get("schemas", {}).items()):
        components["schemas"][name] = relax_schema(schema)
    for header in components.get("headers", {}).values():
        _relax_header(header)
    for param in components.get("parameters", {}).values():
        if "schema" in param:
            param["schema"] = relax_schema(param["schema"])
    for response in components.get("responses", {}).values():
        _relax_response(response)
    for item in document.get("paths", {}).values():
        for method in HTTP_METHODS:
            if method in item:
                _relax_operation(item[method], components)
    return document


def inferred_operations(document: dict[str, Any]) -> set[str]:
    """operationIds whose method and path are the contract's choice."""
    return {
        item[m]["operationId"]
        for item in document.get("paths", {}).values()
        for m in HTTP_METHODS
        if m in item and inferred(item[m])
    }


def relax_schema(schema: Any) -> Any:
    """A schema with every inferred part relaxed (see the module docstring)."""
    if not isinstance(schema, dict):
        return schema
    if inferred(schema):
        return {"description": schema["description"]} if "description" in schema else {}
    relaxed = dict(schema)
    for key in SCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            relaxed[key] = {name: relax_schema(sub) for name, sub in schema[key].items()}
    for key in SCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            relaxed[key] = [relax_schema(sub) for sub in schema[key]]
    for key in SCHEMA_ONE:
        if isinstance(schema.get(key), dict):
            relaxed[key] = relax_schema(schema[key])
    optional = {name for name, sub in schema.get("properties", {}).items() if inferred(sub)}
    if optional and isinstance(schema.get("required"), list):
        relaxed["required"] = [name for name in schema["required"] if name not in optional]
    return relaxed


def _relax_header(header: dict[str, Any]) -> None:
    if inferred(header):
        header["required"] = False
    if "schema" in header:
        header["schema"] = relax_schema(header["schema"])


def _relax_response(response: dict[str, Any]) -> None:
    for header in response.get("headers", {}).values():
        if "$ref" not in header:
            _relax_header(header)
    for media in response.get("content", {}).values():
        if "schema" in media:
            media["schema"] = relax_schema(media["schema"])


def _relax_operation(operation: dict[str, Any], components: dict[str, Any]) -> None:
    params = []
    for param in operation.get("parameters", []):
        target = param
        if "$ref" in param:
            target = components["parameters"][param["$ref"].rsplit("/", 1)[-1]]
        if inferred(target):
            continue
        if "$ref" not in param and "schema" in param:
            param["schema"] = relax_schema(param["schema"])
        params.append(param)
    operation["parameters"] = params
    body = operation.get("requestBody", {})
    for media in body.get("content", {}).values():
        if "schema" in media:
            media["schema"] = relax_schema(media["schema"])
    responses = operation.get("responses", {})
    for status, response in list(responses.items()):
        target = response
        if "$ref" in response:
            target = components["responses"][response["$ref"].rsplit("/", 1)[-1]]
        else:
            _relax_response(response)
        if inferred(target) and status.startswith("2") and "2XX" not in responses:
            responses["2XX"] = response
