"""Compiled JSON Schema validators for parts of the contract (response bodies, request values).

A part of the contract refers to the document's components (``$ref: '#/components/...'``), so it
is compiled as a root that carries them. Only the components it reaches are carried: compiling
with the whole ``components`` section costs ~0.6 ms a schema (the validator copies all of it),
with the reachable ones a few µs; the references and so the judgements are the same. Schemas that
read the same (many responses share one error schema) share one validator.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema_rs

_PREFIX = "#/components/"


class Validators:
    """Validators for schemas of one document, compiled once each."""

    def __init__(self, document: dict[str, Any], *, formats: bool = False) -> None:
        self.document = document
        self.components = document.get("components", {})
        self.formats = formats
        self._by_text: dict[str, Any] = {}

    def get(self, schema: dict[str, Any]) -> Any:
        text = json.dumps(schema, sort_keys=True, default=str)
        validator = self._by_text.get(text)
        if validator is None:
            root = {**schema, "components": self.reachable(schema)}
            validator = jsonschema_rs.Draft202012Validator(root, validate_formats=self.formats)
            self._by_text[text] = validator
        return validator

    def reachable(self, schema: Any) -> dict[str, Any]:
        """The components ``schema`` refers to, directly or through others (all of them when a
        reference points elsewhere in the document, or at something that is not there)."""
        found: dict[str, dict[str, Any]] = {}
        todo = [schema]
        while todo:
            node = todo.pop()
            if isinstance(node, list):
                todo.extend(node)
                continue
            if not isinstance(node, dict):
                continue
            ref = node.get("$ref")
            if isinstance(ref, str):
                target = self._component(ref)
                if target is None:
                    return self.components
                kind, name, value = target
                if name not in found.setdefault(kind, {}):
                    found[kind][name] = value
                    todo.append(value)
            todo.extend(node.values())
        return found

    def _component(self, ref: str) -> tuple[str, str, Any] | None:
        """(section, name, value) of a ``#/components/<section>/<name>`` reference."""
        if not ref.startswith(_PREFIX):
            return None
        kind, slash, name = ref[len(_PREFIX) :].partition("/")
        if not slash or "/" in name:
            return None
        name = name.replace("~1", "/").replace("~0", "~")
        section = self.components.get(kind)
        if not isinstance(section, dict) or name not in section:
            return None
        return kind, name, section[name]
