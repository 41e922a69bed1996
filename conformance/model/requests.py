"""The requests the model sends: creates, paid calls, their refused variants, and PATCH bodies.

Bodies are generated from the contract (``Context.sample``, seeded by the run); the model only
fills in what the contract leaves to the deployment's own data: real ids (products, connected
accounts), the run's receiver as a subscription's url, and values the catalogue publishes (a
capability's ``options``, such as film-outline's ``genres``).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from schemathesis import GenerationMode

from conformance.context import Context
from conformance.contract import Operation
from conformance.generation import Prepared

MAX_VALUES = 8
POOL_CASES = 30
TIMEZONE = "UTC"  # a zone every IANA database has, for generated schedules


def _fix_schedule(value: Any) -> Any:
    if isinstance(value, dict) and "timezone" in value:
        return {**value, "timezone": TIMEZONE}
    return value


def _with_options(body: dict[str, Any], options: dict[str, list[str]], n: int) -> None:
    """A field named after a published option (``genre`` for ``genres``) takes one of its values."""
    for plural, values in sorted(options.items()):
        name = plural[:-1] if plural.endswith("s") else plural
        if name in body and values:
            body[name] = values[n % len(values)]


def paid_request(
    ctx: Context, op: Operation, n: int, key: str, options: dict[str, list[str]]
) -> Prepared | None:
    def update(body: dict[str, Any]) -> dict[str, Any]:
        _with_options(body, options, n)
        if "schedule" in body:
            body["schedule"] = _fix_schedule(body["schedule"])
        return body

    return ctx.sample(op, salt=f"model-{n}", idempotency_key=key, body_update=update)


def create_request(
    ctx: Context, op: Operation, n: int, key: str, fill: dict[str, Any]
) -> Prepared | None:
    """A create of ``op`` with ``fill`` (url, events, account …) written over the generated body."""

    def update(body: dict[str, Any]) -> dict[str, Any]:
        body.update(fill)
        if "schedule" in body:
            body["schedule"] = _fix_schedule(body["schedule"])
        return body

    return ctx.sample(op, salt=f"model-create-{n}", idempotency_key=key, body_update=update)


def required_field(ctx: Context, op: Operation) -> str | None:
    """A body field the contract requires (the profile's document first), to leave out."""
    for view in (ctx.held, ctx.contract.full):
        held = view.operations.get(op.operation_id)
        if held is not None and held.body_schema is not None:
            required = sorted(view.flatten(held.body_schema)["required"])
            if required:
                return required[0]
    return None


def without(prepared: Prepared, name: str) -> Prepared | None:
    """The same request with the body field ``name`` left out."""
    try:
        body = json.loads(prepared.body)
    except ValueError:
        return None
    if not isinstance(body, dict) or name not in body:
        return None
    body.pop(name)
    refused = copy.copy(prepared)
    refused.headers = dict(prepared.headers)
    refused.body = json.dumps(body, ensure_ascii=False).encode("utf-8")
    return refused


def value_pool(ctx: Context, op: Operation) -> dict[str, list[Any]]:
    """Values of each body field of ``op``, from positive cases generated from the contract."""
    path = {p.name: "model" for p in op.path_parameters}
    cases = ctx.session.generator.cases(
        op, GenerationMode.POSITIVE, POOL_CASES, salt="model-values", path_parameters=path
    )
    pool: dict[str, list[Any]] = {}
    seen: set[tuple[str, str]] = set()
    for case in cases:
        if not isinstance(case.body, dict):
            continue
        for name, value in case.body.items():
            value = _fix_schedule(value) if name == "schedule" else value
            marker = (name, json.dumps(value, sort_keys=True, default=str))
            if marker in seen or len(pool.get(name, [])) >= MAX_VALUES:
                continue
            seen.add(marker)
            pool.setdefault(name, []).append(copy.deepcopy(value))
    return pool


def id_lists(ids: list[str]) -> list[list[str]]:
    """Values of an array of ids: empty, one, two."""
    values: list[list[str]] = [[]]
    if ids:
        values.append(ids[:1])
    if len(ids) > 1:
        values.append(ids[:2])
    return values


def products_values(product_ids: list[str]) -> list[list[str]]:
    """A channel's ``products``: ``["none"]`` (promotes nothing), ``[]`` (nothing bound yet), or
    product ids: the values whose difference the engine reads."""
    return [["none"], *id_lists(product_ids)]
