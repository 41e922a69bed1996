"""Binding operations to handlers: each contract operationId has exactly one handler.

Area modules declare handlers with ``@handler("operationId")``. At start-up :func:`bind` checks the
binding against the contract and refuses to start, with a clear message, when an operation has
no handler or a handler names an operation the contract lacks.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mockserver.contract import Contract

if TYPE_CHECKING:
    from mockserver.call import Call

Handler = Callable[..., Any]

_HANDLERS: dict[str, Binding] = {}


class StartupError(RuntimeError):
    """The mock cannot start: its handlers and the contract disagree."""


@dataclass(frozen=True)
class Binding:
    operation_id: str
    func: Handler
    writes: bool  # True when the call changes state or spends (viewer keys are refused)


def handler(operation_id: str, *, writes: bool | None = None) -> Callable[[Handler], Handler]:
    """Register the handler of an operation.

    ``writes`` defaults to True for every method but GET; pass ``writes=False`` for a POST that
    only computes (for example theme classification).
    """

    def register(func: Handler) -> Handler:
        if operation_id in _HANDLERS:
            raise StartupError(f"two handlers for operation {operation_id!r}")
        _HANDLERS[operation_id] = Binding(
            operation_id, func, writes if writes is not None else True
        )
        return func

    return register


async def run_handler(binding: Binding, call: Call) -> Any:
    """The operation's handler run on ``call``: what it answered (a Reply or a body), awaited
    when it is a coroutine."""
    result = binding.func(call)
    if inspect.isawaitable(result):
        result = await result
    return result


def bind(contract: Contract) -> dict[str, Binding]:
    """Every contract operation's binding (a GET's ``writes`` resolved to False)."""
    missing = sorted(set(contract.operations) - set(_HANDLERS))
    unknown = sorted(set(_HANDLERS) - set(contract.operations))
    problems = []
    if missing:
        problems.append("operations without a handler: " + ", ".join(missing))
    if unknown:
        problems.append("handlers for operations the contract lacks: " + ", ".join(unknown))
    if problems:
        raise StartupError("the mock cannot start: " + "; ".join(problems))
    bound = {}
    for op_id, binding in _HANDLERS.items():
        method = contract.operations[op_id].method
        writes = binding.writes and method != "GET"
        bound[op_id] = Binding(op_id, binding.func, writes)
    return bound
