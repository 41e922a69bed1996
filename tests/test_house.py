"""The house rules that can be read from the source (docs/design/house.md): no function in
``mockserver/`` or ``conformance/`` is longer than 60 lines, argument-parser builders excepted
(a parser is a list of options, read one at a time). The import layers are held by
``tests/platform/test_import_layers.py``. Run as a script, it prints each long function::

    python tests/test_house.py
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mockserver", "conformance")
MOST_LINES = 60
PARSER_BUILDER = re.compile(r"^(build_\w*parser|add_\w*options)$")


def long_functions(root: Path = ROOT) -> list[tuple[str, str, int]]:
    """(module path, function, lines) for each function over :data:`MOST_LINES` lines, the
    decorators left out, that is not an argument-parser builder."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            found += _long_in(ast.parse(path.read_text("utf-8")), str(path.relative_to(root)))
    return found


def _long_in(tree: ast.AST, name: str) -> list[tuple[str, str, int]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MOST_LINES and not PARSER_BUILDER.match(node.name):
                found.append((name, node.name, lines))
    return found


def test_no_function_is_longer_than_60_lines() -> None:
    assert long_functions() == []


def test_a_long_function_is_found_and_a_parser_builder_is_not() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MOST_LINES))
    source = f"def handle():\n{body}\n\ndef build_serve_parser():\n{body}\n"
    assert _long_in(ast.parse(source), "m.py") == [("m.py", "handle", MOST_LINES + 1)]


if __name__ == "__main__":
    for module, function, lines in long_functions():
        print(f"{module}: {function} ({lines} lines)")
