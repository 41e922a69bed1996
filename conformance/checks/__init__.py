"""The checks, each a named function stating one rule, registered with a one-line description.

A check is selected by its name (``pagination-walk``) or by its family (``pagination``: every check
of that family). Flags say what a check needs:

* ``spends``: it makes paid calls; ``creates``: it creates or changes resources. Both run only with
  ``--allow-spend`` or against ``--mock`` (validation probes, which must be refused before any
  charge, are not spending and are always allowed);
* ``needs_second_key``: it needs ``--second-key`` (ids of another workspace);
* ``only_when_selected``: it runs only when named by ``--only``;
* ``window``: it spends a whole rate-limit window of the key on purpose (the rate-limit probes):
  against a deployment about one window (conformance/plan.py);
* ``deep``: it has depth to add once it has judged (more operations, examples, sequences). In a
  bounded run it covers in a first pass only what it needs to judge once, and the rest in a
  second pass with what the budget has left (conformance/plan.py): it reads ``ctx.phase`` and
  takes its list of operations through ``ctx.share``.

Observers (``observe``) judge every response the run receives, whoever sent the request.

A check that waits for long work (a job that takes minutes) may have a ``prepare``
(registered with :func:`prepares`): it starts that work and answers what it started, which the
check reads as ``ctx.prepared``. Against a deployment every prepare runs before the first check
and the prepared checks run last, so their jobs run while the other checks do
(conformance/runner.py).

Every module of this package is a module of checks: :func:`check_modules` finds them with
``pkgutil`` (a new module is found without being listed anywhere), and :func:`all_checks`
imports them in the order of their names. A module that holds a family's own checks declares it
(``FAMILY = "workflows"``); a module may also register checks of other families (``stated``,
``semantics``). A run takes the families in the order of :data:`FAMILIES`; within a family the
checks of the module that declares it first, then those of the other modules in the order of
their names, each module's in the order it defines them. ``steps`` holds the steps the checks
share and registers none.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance.context import Context
    from conformance.target import Exchange

#: The families, in the order a run takes them.
FAMILIES = (
    "envelope", "auth", "pagination", "idempotency", "records", "workflows", "jobs", "webhooks",
    "limits", "schema", "model", "rate-limit",
)  # fmt: skip


@dataclass(frozen=True)
class Check:
    name: str
    family: str
    description: str
    run: Callable[[Context], None] | None = None
    observe: Callable[[Context, Exchange], None] | None = None
    prepare: Callable[[Context], Any] | None = None  # starts long work early; see prepares()
    spends: bool = False
    creates: bool = False
    needs_second_key: bool = False
    only_when_selected: bool = False
    receives: bool = False  # it judges deliveries to the suite's webhook receiver
    deep: bool = False  # judges once in a bounded run's breadth pass, then adds depth
    window: bool = False  # spends a rate-limit window on purpose (a probe: 429 at the end)
    cost: float = 1.0  # its share of a run's time, relative (for dealing shards and workers)

    @property
    def flags(self) -> list[str]:
        names = ("spends", "creates", "needs_second_key", "only_when_selected", "receives")
        flags = [n.replace("_", "-") for n in names if getattr(self, n)]
        return flags + (["observer"] if self.observe else [])


REGISTRY: dict[str, Check] = {}


def check(
    name: str, family: str, description: str, **flags: Any
) -> Callable[[Callable[[Context], None]], Callable[[Context], None]]:
    """Register ``function(ctx)`` as the check ``name``."""

    def register(function: Callable[[Context], None]) -> Callable[[Context], None]:
        REGISTRY[name] = Check(name, family, description, run=function, **flags)
        return function

    return register


def prepares(name: str) -> Callable[[Callable[[Context], Any]], Callable[[Context], Any]]:
    """Register ``function(ctx)`` as the prepare of the check ``name`` (registered before it):
    it starts what the check will wait for and answers it (the check's ``ctx.prepared``); a
    :class:`~conformance.skips.Skip` it raises skips the check."""

    def register(function: Callable[[Context], Any]) -> Callable[[Context], Any]:
        REGISTRY[name] = replace(REGISTRY[name], prepare=function)
        return function

    return register


def observer(
    name: str, family: str, description: str
) -> Callable[[Callable[[Context, Exchange], None]], Callable[[Context, Exchange], None]]:
    """Register ``function(ctx, exchange)``, called on every exchange, as the check ``name``."""

    def register(
        function: Callable[[Context, Exchange], None],
    ) -> Callable[[Context, Exchange], None]:
        REGISTRY[name] = Check(name, family, description, observe=function)
        return function

    return register


def check_modules() -> tuple[str, ...]:
    """The modules of this package (``auth``, ``workflows``, …), in the order of their names."""
    return tuple(sorted(module.name for module in pkgutil.iter_modules(__path__)))


def all_checks() -> list[Check]:
    """Every check, in the order a run executes them (this module's docstring says which)."""
    for name in check_modules():
        importlib.import_module(f"{__name__}.{name}")
    families = {family: i for i, family in enumerate(FAMILIES)}
    registered = {name: i for i, name in enumerate(REGISTRY)}

    def order(c: Check) -> tuple[int, bool, str, int]:
        module = getattr(c.run or c.observe, "__module__", __name__)
        own = getattr(sys.modules[module], "FAMILY", None) == c.family
        return families[c.family], not own, module, registered[c.name]

    return sorted(REGISTRY.values(), key=order)


class SelectionError(ValueError):
    pass


def _matches(check: Check, names: Iterable[str]) -> bool:
    return any(n in (check.name, check.family) for n in names)


def shard(checks: list[Check], index: int, count: int) -> list[Check]:
    """Shard ``index`` (1-based) of ``count``: the checks that make requests are dealt out so
    ``count`` shards together run each exactly once, with about the same cost each (the
    costliest first, each to the shard with the least so far; ties in name order, so the deal
    is the same every time). Observers (checks that judge every exchange) go with every shard,
    so together they judge every exchange of a full run. A check that both observes and makes
    requests observes in every shard and makes its requests in the one it is dealt to
    (elsewhere it comes without ``run``). The same for the workers of ``--workers N``: worker
    ``k`` runs shard ``k`` of ``N``."""
    active = sorted((c for c in checks if c.run is not None), key=lambda c: (-c.cost, c.name))
    loads = [0.0] * count
    mine = set()
    for c in active:
        least = min(range(count), key=lambda k: (loads[k], k))
        loads[least] += c.cost
        if least == index - 1:
            mine.add(c.name)
    return [
        c if c.name in mine or c.run is None else replace(c, run=None)
        for c in checks
        if c.name in mine or c.observe is not None or c.run is None
    ]


def select(only: Iterable[str] = (), skip: Iterable[str] = ()) -> list[Check]:
    """The checks a run executes for ``--only`` and ``--skip`` (names or families)."""
    checks = all_checks()
    only, skip = list(only), list(skip)
    known = {c.name for c in checks} | {c.family for c in checks}
    unknown = [n for n in [*only, *skip] if n not in known]
    if unknown:
        raise SelectionError(
            f"unknown check {', '.join(unknown)}; `conformance list-checks` names them all"
        )
    chosen = [c for c in checks if _matches(c, only)] if only else checks
    chosen = [c for c in chosen if not c.only_when_selected or _matches(c, only)]
    return [c for c in chosen if not _matches(c, skip)]
