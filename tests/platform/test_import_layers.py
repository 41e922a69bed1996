"""The import layers of the house (issue 29, part 1): the platform takes what it uses.

Read from the source with ``ast``, type-checking imports counted (an import under
``if TYPE_CHECKING:`` or inside a function is an import all the same: it ties the modules
together for a reader and a type checker alike):

- ``mockserver/platform/`` imports none of ``mockserver.runtime``, ``mockserver.call``,
  ``mockserver.dispatch`` or ``mockserver.areas``;
- ``mockserver/store/`` imports neither ``mockserver.runtime`` nor ``mockserver.call``;
- no import cycle longer than two modules remains in ``mockserver/`` or ``conformance/``.

An edge goes to the module an import names: ``from a.b import c`` names ``a.b.c`` when that is a
module (else ``a.b``); ``import a.b`` names ``a.b``. Run as a script, it prints each layer
crossing and every cycle longer than two modules::

    python tests/platform/test_import_layers.py
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("mockserver", "conformance")
# Stop enumerating a component's cycles after this many (a report, not a proof of absence:
# the test fails on the first one).
MAX_CYCLES = 200

Graph = dict[str, set[str]]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of the packages, by dotted name (a package by its ``__init__``)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _base(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names before its names."""
    if not node.level:
        return node.module or ""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, *([node.module] if node.module else [])])


def imported(name: str, path: Path, known: set[str]) -> Iterator[str]:
    """The modules of ``known`` that module ``name`` imports, anywhere in its source."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _base(name, path, node)
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in known:
                    yield target
                elif base in known:
                    yield base


def import_graph() -> Graph:
    """Each module to the modules of the packages it imports (itself left out)."""
    found = modules()
    known = set(found)
    return {name: set(imported(name, path, known)) - {name} for name, path in found.items()}


def crossings(graph: Graph, layer: str, forbidden: tuple[str, ...]) -> list[str]:
    """``importer -> imported`` for each import from ``layer`` into a ``forbidden`` module (or
    one below it)."""

    def within(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    return sorted(
        f"{source} -> {target}"
        for source, targets in graph.items()
        if within(source, layer)
        for target in targets
        if any(within(target, prefix) for prefix in forbidden)
    )


def components(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    found.append(sorted(members))
    return found


def long_cycles(graph: Graph, limit: int = MAX_CYCLES) -> list[list[str]]:
    """Simple cycles of more than two modules, each once (it starts at its least module), at
    most ``limit`` per strongly connected component."""
    cycles: list[list[str]] = []
    for members in components(graph):
        inside = set(members)
        count = 0
        for start in members:  # sorted: a cycle is found from its least module only
            path = [start]
            todo = [iter(sorted(t for t in graph[start] if t in inside and t > start))]
            while todo and count < limit:
                child = next(todo[-1], None)
                if child is None:
                    todo.pop()
                    path.pop()
                    continue
                if child in path:
                    continue
                path.append(child)
                if start in graph[child] and len(path) > 2:
                    cycles.append(list(path))
                    count += 1
                todo.append(iter(sorted(t for t in graph[child] if t in inside and t > start)))
    return cycles


def test_platform_imports_none_of_runtime_call_dispatch_or_areas() -> None:
    graph = import_graph()
    forbidden = ("mockserver.runtime", "mockserver.call", "mockserver.dispatch", "mockserver.areas")
    assert crossings(graph, "mockserver.platform", forbidden) == []


def test_store_imports_neither_runtime_nor_call() -> None:
    graph = import_graph()
    assert crossings(graph, "mockserver.store", ("mockserver.runtime", "mockserver.call")) == []


def test_no_import_cycle_longer_than_two_modules() -> None:
    assert long_cycles(import_graph(), limit=1) == []


def test_long_cycles_are_found_and_two_module_ones_are_not() -> None:
    """The cycle finder itself: a circle of three is found once, a pair importing each other
    and a chain are not."""
    pair: Graph = {"a": {"b"}, "b": {"a", "c"}, "c": {"b"}}
    assert long_cycles(pair) == []
    circle: Graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "b"}, "d": {"a"}}
    assert long_cycles(circle) == [["a", "b", "c"]]
    assert components(circle) == [["a", "b", "c"]]


def test_the_graph_sees_type_checking_and_relative_imports() -> None:
    """The reader counts what it claims to: a TYPE_CHECKING import and a relative one."""
    graph = import_graph()
    assert "mockserver.call" in graph["mockserver.seams"]  # under TYPE_CHECKING
    assert "mockserver.platform.delivery.records" in graph["mockserver.platform.delivery"]
    assert "conformance.checks" in graph["conformance.workers"]


def main() -> int:
    graph = import_graph()
    layers = {
        "mockserver.platform": (
            "mockserver.runtime",
            "mockserver.call",
            "mockserver.dispatch",
            "mockserver.areas",
        ),
        "mockserver.store": ("mockserver.runtime", "mockserver.call"),
    }
    for layer, forbidden in layers.items():
        for line in crossings(graph, layer, forbidden):
            print(f"layer {layer}: {line}")
    for members in components(graph):
        cycles = long_cycles({m: graph[m] & set(members) for m in members})
        if not cycles:
            continue
        more = "+" if len(cycles) >= MAX_CYCLES else ""
        print(f"\ncomponent of {len(members)} modules, {len(cycles)}{more} cycles longer than two:")
        print("  " + " ".join(members))
        for cycle in sorted(cycles, key=len)[:10]:
            print("  e.g. " + " -> ".join([*cycle, cycle[0]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
