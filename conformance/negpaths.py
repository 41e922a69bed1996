"""Negative path values, made by the suite itself rather than by Schemathesis.

A path value is text on the wire, so what it can break is its length and its pattern. Left to
Schemathesis, breaking ``maxLength: 200`` draws strings of 201 and more arbitrary characters,
which its own path filter mostly throws away (a ``/``, ``{`` or ``}`` among them would send the
request to another path): two thirds of the examples drawn for the negative check went that way.
So, for the negative check only:

* Schemathesis generates from a copy of the held document in which the path parameters whose
  constraints are only ``minLength``, ``maxLength`` and ``pattern`` are plain strings
  (:func:`without_path_bounds`): it breaks the query, the headers and the body, never the path;
* this module breaks those path parameters, seeded like every draw (:func:`broken_values`): an
  id one character too long of the characters ids are made of, longer ones of URL-safe ASCII and
  of other text (letters of other scripts, spaces, punctuation), a value that does not match the
  pattern, one shorter than ``minLength``; the rest of each request is a valid generated one.

A path parameter with any other constraint (an ``enum``, a number) keeps its schema, and
Schemathesis breaks it as before.
"""

from __future__ import annotations

import copy
import random
import re
import string
from dataclasses import dataclass
from typing import Any

from conformance.contract import ContractView
from conformance.profiles import HTTP_METHODS

# What a path value's schema may say for this module to break it (besides annotations).
_BREAKABLE = {"minLength", "maxLength", "pattern"}
_ANNOTATIONS = {"description", "title", "example", "examples", "default", "deprecated",
                "readOnly", "writeOnly", "$comment"}  # fmt: skip

ID_CHARACTERS = string.ascii_lowercase + string.digits
URL_SAFE = string.ascii_letters + string.digits + "-_~"
# Text that is not an id: other scripts, spaces, punctuation (each quoted on the wire). Never
# "/", "\\", "{", "}" or "%" (another path, or one a server decodes again), nor controls.
OTHER_TEXT = URL_SAFE + " !$&'()*+,;=:@?#[]\"<>^`|éñßøЖжλΩ漢字한글ü€😀"


@dataclass(frozen=True)
class PathBounds:
    """What a string path parameter states about its value."""

    name: str
    min_length: int | None = None
    max_length: int | None = None
    patterns: tuple[str, ...] = ()

    @property
    def breakable(self) -> bool:
        return bool(self.max_length is not None or self.patterns or (self.min_length or 0) > 1)


def bounds_of(view: ContractView, name: str, schema: Any) -> PathBounds | None:
    """The bounds of a path parameter's schema; None when it states anything else."""
    found: dict[str, Any] = {"min": [], "max": [], "patterns": []}
    if not _collect(view, schema, found, 0):
        return None
    return PathBounds(
        name,
        max(found["min"]) if found["min"] else None,
        min(found["max"]) if found["max"] else None,
        tuple(found["patterns"]),
    )


def _collect(view: ContractView, schema: Any, found: dict[str, Any], depth: int) -> bool:
    schema = view.resolve(schema)
    if not isinstance(schema, dict) or depth > 10:
        return False
    for key, value in schema.items():
        if key in _ANNOTATIONS or key.startswith("x-"):
            continue
        if key == "type":
            if value != "string":
                return False
        elif key == "allOf" and isinstance(value, list):
            if not all(_collect(view, part, found, depth + 1) for part in value):
                return False
        elif key == "minLength" and isinstance(value, int):
            found["min"].append(value)
        elif key == "maxLength" and isinstance(value, int):
            found["max"].append(value)
        elif key == "pattern" and isinstance(value, str):
            found["patterns"].append(value)
        else:
            return False
    return True


def path_bounds(view: ContractView) -> dict[str, tuple[PathBounds, ...]]:
    """Operations whose path parameters are all strings this module can break, with their
    bounds, where at least one has something to break."""
    table = {}
    for op in view.operations.values():
        bounds = [bounds_of(view, p.name, p.schema) for p in op.path_parameters]
        if bounds and all(b is not None for b in bounds) and any(b.breakable for b in bounds):
            table[op.operation_id] = tuple(b for b in bounds if b is not None)
    return table


def without_path_bounds(view: ContractView, operations: set[str]) -> dict[str, Any]:
    """A copy of the view's document in which the path parameters of ``operations`` are plain
    strings (each written in its operation, so nothing shared with a body changes)."""
    document = copy.deepcopy(view.document)
    for item in document.get("paths", {}).values():
        shared = [view.resolve(p) for p in item.get("parameters", [])]
        for method in HTTP_METHODS:
            definition = item.get(method)
            if not isinstance(definition, dict) or definition.get("operationId") not in operations:
                continue
            own = [view.resolve(p) for p in definition.get("parameters", [])]
            names = {p["name"] for p in [*shared, *own] if p.get("in") == "path"}
            kept = [raw for raw, p in zip(definition.get("parameters", []), own, strict=True)
                    if p.get("in") != "path"]  # fmt: skip
            plain = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
                     for n in sorted(names)]  # fmt: skip
            definition["parameters"] = plain + kept
    return document


def broken_values(bounds: tuple[PathBounds, ...], count: int, seed: int) -> list[tuple[str, str]]:
    """Up to ``count`` distinct (parameter, value) pairs, each breaking one of the bounds,
    reproducibly for a seed; the kinds taken in turn."""
    rng = random.Random(seed)
    makers = [(b.name, maker) for b in bounds for maker in _makers(b)]
    found: list[tuple[str, str]] = []
    attempts = 0
    while makers and len(found) < count and attempts < count * 4:
        name, maker = makers[attempts % len(makers)]
        attempts += 1
        value = maker(rng)
        if value is not None and value not in (".", "..") and (name, value) not in found:
            found.append((name, value))
    return found


def _makers(bounds: PathBounds) -> list[Any]:
    makers = []
    if bounds.max_length is not None:
        top = bounds.max_length

        def one_too_long(rng: random.Random) -> str:
            return "".join(rng.choice(ID_CHARACTERS) for _ in range(top + 1))

        def long_ascii(rng: random.Random) -> str:
            size = rng.randint(top + 1, 2 * top + 8)
            return "".join(rng.choice(URL_SAFE) for _ in range(size))

        def long_text(rng: random.Random) -> str:
            size = rng.randint(top + 1, top + 64)
            return "".join(rng.choice(OTHER_TEXT) for _ in range(size))

        makers += [one_too_long, long_ascii, long_text]
    if bounds.patterns:

        def unmatched(rng: random.Random) -> str | None:
            low = max(1, bounds.min_length or 1)
            high = max(low, min(bounds.max_length or 24, 24))
            for _ in range(50):
                size = rng.randint(low, high)
                value = "".join(rng.choice(OTHER_TEXT) for _ in range(size))
                if not all(_matches(p, value) for p in bounds.patterns):
                    return value
            return None

        makers.append(unmatched)
    if (bounds.min_length or 0) > 1:
        floor = int(bounds.min_length or 0)

        def too_short(rng: random.Random) -> str:
            return "".join(rng.choice(ID_CHARACTERS) for _ in range(rng.randint(1, floor - 1)))

        makers.append(too_short)
    return makers


def _matches(pattern: str, value: str) -> bool:
    try:
        return re.search(pattern, value) is not None
    except re.error:
        return True  # a pattern Python cannot read: never claimed broken here
