"""What the model knows of the API, read from the contract: the records it creates and updates,
the paid operations and the jobs they start, the job statuses, and the small reads it makes.

Operations are named by ``operationId`` (stable in v1); everything else (paths, list fields,
links, enums, writable and write-only fields) is read from the contract.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from conformance.context import Context
from conformance.contract import ContractView, Operation
from conformance.target import Exchange

CAPABILITIES = "getCapabilities"
READ_JOB = "getJob"
JOB_EVENTS = "listJobEvents"
CREATES = ("createProject", "createProduct", "createCommunityCampaign", "createWebhookSubscription")
UPDATES = (
    "updateCampaign",
    "updateChannel",
    "updateCommunityCampaign",
    "updateWebhookSubscription",
)
SUBSCRIBE = "createWebhookSubscription"
COMMUNITY = "createCommunityCampaign"
_NOT_SENT = re.compile(r"not sent to webhook subscriptions", re.IGNORECASE)
_SENT = re.compile(r"(sent to|reach) webhook subscriptions", re.IGNORECASE)


@dataclass(frozen=True)
class Kind:
    """A kind of record: its list, and the operations that create, read and update one."""

    name: str  # the list's path: /v1/projects, /v1/channels …
    list_op: Operation
    items: str
    create: Operation | None = None
    read: Operation | None = None
    update: Operation | None = None
    writable: tuple[str, ...] = ()
    write_only: frozenset[str] = field(default_factory=frozenset)


def _item_ops(view: ContractView, collection: str) -> dict[str, Operation]:
    found = {}
    for op in view.operations.values():
        parts = op.path.split("/")
        depth = len(collection.split("/")) + 1
        if op.path.startswith(collection + "/") and len(parts) == depth and parts[-1][:1] == "{":
            found[op.method] = op
    return found


def kinds(ctx: Context) -> dict[str, Kind]:
    """The kinds of record the model creates or updates, by their list's path. Where to find a
    record (its list's items field, its read) is read from the whole contract: the profile
    decides what is judged, not where the model looks."""
    view = ctx.contract.full
    found: dict[str, Kind] = {}
    for list_op in view.operations.values():
        items = view.items_field(list_op)
        if list_op.method != "GET" or list_op.path_parameters or not items:
            continue
        create = next(
            (o for o in view.operations.values() if o.method == "POST" and o.path == list_op.path),
            None,
        )
        create = create if create is not None and create.operation_id in CREATES else None
        item = _item_ops(view, list_op.path)
        update = item.get("PATCH")
        update = update if update is not None and update.operation_id in UPDATES else None
        if create is None and update is None:
            continue
        body = view.flatten(update.body_schema) if update and update.body_schema else {}
        properties = body.get("properties", {})
        write_only = {n for n, s in properties.items() if view.resolve(s).get("writeOnly")}
        found[list_op.path] = Kind(
            name=list_op.path,
            list_op=list_op,
            items=items,
            create=create,
            read=item.get("GET"),
            update=update,
            writable=tuple(sorted(properties)),
            write_only=frozenset(write_only),
        )
    return found


def paid_operations(ctx: Context) -> list[Operation]:
    """Paid POST operations that take an Idempotency-Key and may be called in this run."""
    return sorted(
        (
            op
            for op in ctx.held.operations.values()
            if op.method == "POST" and op.paid and op.idempotency_key is not None
        ),
        key=lambda op: op.operation_id,
    )


def job_pointer(ctx: Context, op: Operation) -> list[str] | None:
    """Where the job id is in ``op``'s success body, from its link to the job read."""
    for response in op.definition.get("responses", {}).values():
        for link in ctx.held.resolve(response).get("links", {}).values():
            expression = str(link.get("parameters", {}).get("jobId", ""))
            if link.get("operationId") == READ_JOB and expression.startswith("$response.body#/"):
                return expression.split("#/", 1)[1].split("/")
    return None


def pointer(body: Any, parts: list[str]) -> Any:
    for part in parts:
        if not isinstance(body, dict):
            return None
        body = body.get(part)
    return body


def coverage(op: Operation) -> bool | None:
    """Whether the contract says ``op``'s jobs reach webhook subscriptions (None: it is silent)."""
    text = " ".join(str(op.definition.get("description", "")).split())
    if _NOT_SENT.search(text):
        return False
    if _SENT.search(text):
        return True
    return None


@dataclass(frozen=True)
class JobStatuses:
    closed: frozenset[str] | None  # None: the profile leaves the in-flight values open
    terminal: frozenset[str]


def job_statuses(ctx: Context) -> JobStatuses:
    view = ctx.held
    schemas = view.document.get("components", {}).get("schemas", {})
    terminal = frozenset(view.resolve(schemas.get("JobTerminalStatus", {})).get("enum", []))
    status = view.resolve(schemas.get("JobStatus", {}))
    branches = [view.resolve(b) for b in status.get("anyOf", status.get("oneOf", [status]))]
    if all(isinstance(b, dict) and "enum" in b for b in branches):
        closed: frozenset[str] | None = frozenset(v for b in branches for v in b["enum"])
    else:
        closed = None
    return JobStatuses(closed, terminal)


def subscription_events(ctx: Context) -> list[str]:
    schemas = ctx.held.document.get("components", {}).get("schemas", {})
    return list(ctx.held.resolve(schemas.get("SubscriptionEventName", {})).get("enum", []))


def limit_bounds(op: Operation) -> tuple[int, int | None] | None:
    param = op.parameter("limit", "query")
    if param is None:
        return None
    schema = param.schema
    parts = [schema, *[p for p in schema.get("allOf", []) if isinstance(p, dict)]]
    low = next((p["minimum"] for p in parts if "minimum" in p), 1)
    high = next((p["maximum"] for p in parts if "maximum" in p), None)
    return int(low), int(high) if high is not None else None


def page_size(op: Operation, wanted: int) -> int | None:
    bounds = limit_bounds(op)
    if bounds is None:
        return None
    low, high = bounds
    size = max(wanted, low)
    return min(size, high) if high is not None else size


# -- reads ---------------------------------------------------------------------------------


@dataclass
class Catalogue:
    balance: int
    prices: dict[str, int]
    options: dict[str, list[str]] = field(default_factory=dict)  # published accepted values


def read_catalogue(ctx: Context) -> tuple[Exchange, Catalogue | None]:
    """``GET /v1/capabilities``: the balance and the price of every capability."""
    exchange = ctx.call(ctx.held.operations[CAPABILITIES])
    body = exchange.json()
    if exchange.status != 200 or not isinstance(body, dict):
        return exchange, None
    credits = (body.get("balance") or {}).get("credits")
    if not isinstance(credits, int) or isinstance(credits, bool):
        return exchange, None
    prices = {
        str(c["name"]): int(c["price"])
        for c in body.get("capabilities", [])
        if isinstance(c, dict) and isinstance(c.get("price"), int) and "name" in c
    }
    options: dict[str, list[str]] = {}
    for entry in body.get("capabilities", []):
        published = entry.get("options") if isinstance(entry, dict) else None
        for name, values in (published or {}).items():
            if isinstance(values, list):
                options.setdefault(str(name), [str(v) for v in values])
    return exchange, Catalogue(credits, prices, options)


def record_in(body: Any, record_id: str | None = None) -> dict[str, Any] | None:
    """The record an answer carries (``{"channel": {...}}``), the one with ``record_id``."""
    if not isinstance(body, dict):
        return None
    for value in body.values():
        found = value.get("id") if isinstance(value, dict) else None
        if isinstance(found, str) and record_id in (None, found):
            return value
    return None


def read_record(
    ctx: Context, kind: Kind, record_id: str, max_pages: int = 3
) -> tuple[Exchange, dict[str, Any] | None]:
    """One record as the deployment answers it: its own read, or else found in its list."""
    if kind.read is not None:
        name = kind.read.path_parameters[0].name
        exchange = ctx.call(kind.read, path_parameters={name: record_id})
        return exchange, record_in(exchange.json(), record_id)
    cursor = None
    exchange = None
    for _ in range(max_pages):
        params: dict[str, Any] = {"limit": page_size(kind.list_op, 10**6), "cursor": cursor}
        exchange = ctx.call(kind.list_op, params=params)
        body = exchange.json()
        if exchange.status != 200 or not isinstance(body, dict):
            return exchange, None
        for item in body.get(kind.items) or []:
            if isinstance(item, dict) and item.get("id") == record_id:
                return exchange, item
        cursor = body.get("nextCursor")
        if not isinstance(cursor, str) or not cursor:
            break
    assert exchange is not None
    return exchange, None


def first_page(ctx: Context, kind: Kind, limit: int = 10) -> list[dict[str, Any]]:
    exchange = ctx.call(kind.list_op, params={"limit": page_size(kind.list_op, limit)})
    body = exchange.json()
    if exchange.status != 200 or not isinstance(body, dict):
        return []
    return [i for i in body.get(kind.items) or [] if isinstance(i, dict) and "id" in i]
