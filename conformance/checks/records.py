"""Records: a PATCH changes only the fields sent, read back the way a client reads the record.

A record is read back through the contract: the GET on the PATCH's own path when there is one
(a community campaign, a webhook subscription), else the list at the parent path, paged until
the record's id (a campaign, a channel). Its writable fields are the properties of the PATCH's
body schema that the record returns (a write-only secret is never returned, so never judged).
A partial update the operation's description writes out (``{"status": "paused"}``) is sent
first; then values generated from the whole contract (Schemathesis), one field per PATCH. A
value the deployment refuses (an id that does not exist, a rule of the record) is not a finding
here: the next one is tried. Fields derived from others (a channel's ``archivedAt``, a community
campaign's target communities) are not writable, so not judged. Changed fields are put back
afterwards, and a record created for the check is deleted (best effort, not judged).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from schemathesis import GenerationMode

from conformance.checks import check
from conformance.checks.pagination import _through_a_link as through_a_link
from conformance.context import Context
from conformance.contract import ContractView, Operation
from conformance.generation import salted
from conformance.idpool import own_path_parameters
from conformance.skips import Skip
from conformance.target import Exchange

FAMILY = "records"
MAX_FIELDS = 3  # fields changed (one PATCH each) per operation
MAX_ATTEMPTS = 8  # PATCHes per operation, refused ones included
CANDIDATE_CASES = 12  # generated bodies the values are taken from
MAX_PAGES = 20
NOT_RETURNED = object()
_JSON_EXAMPLE = re.compile(r"`(\{[^`]*\})`")


@dataclass(frozen=True)
class Reader:
    """How a record is read back: one GET (``key`` names it in the body) or a list walked."""

    op: Operation
    key: str
    listed: bool


def _reader(view: ContractView, patch: Operation) -> Reader | None:
    """The GET on the PATCH's path, else the list at its parent path (whole contract)."""
    for op in view.operations.values():
        if op.method == "GET" and op.path == patch.path:
            key = _record_key(view, op)
            return Reader(op, key, listed=False) if key else None
    parent = patch.path.rsplit("/", 1)[0]
    for op in view.operations.values():
        if op.method == "GET" and op.path == parent and (items := view.items_field(op)):
            return Reader(op, items, listed=True)
    return None


def _record_key(view: ContractView, op: Operation) -> str | None:
    schema = view.success_schema(op)
    if schema is None:
        return None
    flat = view.flatten(schema)
    return next((name for name in flat["required"] if name != "success"), None)


def _page_size(op: Operation) -> int | None:
    param = op.parameter("limit", "query")
    if param is None:
        return None
    schema = param.schema
    parts = [schema, *[p for p in schema.get("allOf", []) if isinstance(p, dict)]]
    return next((p["maximum"] for p in parts if "maximum" in p), None)


def read_record(
    ctx: Context, reader: Reader, path: dict[str, str], record_id: str
) -> tuple[Exchange, dict[str, Any] | None]:
    """The record as the deployment returns it now (None when it cannot be found)."""
    if not reader.listed:
        exchange = ctx.call(reader.op, path_parameters=path)
        body = exchange.json()
        record = body.get(reader.key) if isinstance(body, dict) else None
        return exchange, record if exchange.ok and isinstance(record, dict) else None
    query: dict[str, Any] = {}
    held = ctx.held.operations.get(reader.op.operation_id, reader.op)  # limit may be inferred
    if (size := _page_size(held)) is not None:
        query["limit"] = size
    exchange: Exchange | None = None
    for _ in range(MAX_PAGES):
        exchange = ctx.call(reader.op, params=query)
        body = exchange.json()
        if not exchange.ok or not isinstance(body, dict):
            break
        for item in body.get(reader.key) or []:
            if isinstance(item, dict) and item.get("id") == record_id:
                return exchange, item
        cursor = body.get("nextCursor")
        if not isinstance(cursor, str) or not cursor:
            break
        query["cursor"] = cursor
    assert exchange is not None
    return exchange, None


def _writable(ctx: Context, op: Operation) -> dict[str, Any]:
    """The PATCH body's properties (whole contract), write-only ones left out."""
    full = ctx.contract.full
    props = full.flatten(full.operations[op.operation_id].body_schema)["properties"]
    kept = {}
    for name, schema in props.items():
        resolved = full.resolve(schema)
        if isinstance(resolved, dict) and (resolved.get("writeOnly") or resolved.get("x-secret")):
            continue
        kept[name] = resolved
    return kept


def _candidates(
    ctx: Context, op: Operation, path: dict[str, str], fields: set[str]
) -> list[tuple[str, Any]]:
    """``(field, value)`` pairs from generated bodies, fields in a seeded order."""
    cases = ctx.session.generator.cases(
        op, GenerationMode.POSITIVE, CANDIDATE_CASES, salt="records", path_parameters=path
    )
    values: dict[str, list[Any]] = {}
    for case in cases:
        if isinstance(case.body, dict):
            for name, value in case.body.items():
                if name in fields and value not in values.setdefault(name, []):
                    values[name].append(value)
    order = sorted(values, key=lambda name: salted(ctx.seed, op.operation_id, name))
    generated = [(name, value) for name in order for value in values[name][:2]]
    return _stated_examples(op, fields) + generated


def _stated_examples(op: Operation, fields: set[str]) -> list[tuple[str, Any]]:
    """Partial updates the operation's description writes out (```{"status": "paused"}```)."""
    found = []
    for text in _JSON_EXAMPLE.findall(str(op.definition.get("description", ""))):
        try:
            example = json.loads(text)
        except ValueError:
            continue
        if isinstance(example, dict) and len(example) == 1 and set(example) <= fields:
            found += list(example.items())
    return found


def _instant(value: Any) -> datetime | None:
    if not isinstance(value, str) or "T" not in value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def holds(sent: Any, read: Any) -> bool:
    """Whether a value read back carries what was sent (members of an object sent, merged or
    replaced alike; a set-like array in any order; a timestamp as the same instant)."""
    if isinstance(sent, dict):
        return isinstance(read, dict) and all(
            k in read and holds(v, read[k]) for k, v in sent.items()
        )
    if isinstance(sent, list):
        if not isinstance(read, list) or len(read) != len(sent):
            return False
        if all(holds(s, r) for s, r in zip(sent, read, strict=True)):
            return True
        return sorted(map(_key, sent)) == sorted(map(_key, read))
    if isinstance(sent, bool) or isinstance(read, bool):
        return sent is read
    if sent == read:  # a number compares by value (547.0 is 547)
        return True
    instant = _instant(sent)
    return instant is not None and instant == _instant(read)


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _quote(ctx: Context, op: Operation) -> str:
    pointer = f"#/paths/{op.path.replace('/', '~1')}/{op.method.lower()}"
    return ctx.held.quote(pointer, "Changes only the fields sent.")


def _patchable(ctx: Context) -> list[Operation]:
    return [
        op
        for op in ctx.held.operations.values()
        if op.method == "PATCH" and op.body_schema is not None
    ]


def _path_of(ctx: Context, op: Operation) -> dict[str, str] | None:
    """A record to change: from the list the path names, else created through a link (a
    subscription's ``url`` is the run's own receiver, where the run has one)."""
    found = ctx.session.ids.path_parameters(op)
    if found is None:
        found = through_a_link(ctx, op, body_update=_own_url(ctx))
    return found if found is not None else own_path_parameters(ctx, op)


def _own_url(ctx: Context) -> Callable[[Any], Any] | None:
    if ctx.session.mock is None and not ctx.session.receiver_url:
        return None
    url = ctx.session.receiver().route(
        f"/conformance/{uuid.uuid4().hex[:12]}/records", lambda *_: 200
    )

    def update(body: Any) -> Any:
        if isinstance(body, dict) and "url" in body:
            body["url"] = url
        return body

    return update


@check(
    "records-partial-update",
    FAMILY,
    "a PATCH of one field changes that field only: read back, it has the value sent and every "
    "other writable field is unchanged",
    creates=True,
    deep=True,
)
def partial_update(ctx: Context) -> None:
    """Each partial update the run may send (in a bounded run's breadth pass up to the first
    judgement, the rest in its depth pass), read back."""
    patches = _patchable(ctx)
    if not any(ctx.why_not_send(o) is None and _reader(ctx.contract.full, o) for o in patches):
        raise Skip("no PATCH operation may be called")
    for op in ctx.share(patches):
        if reason := ctx.why_not_send(op):
            ctx.skip(reason)
            continue
        reader = _reader(ctx.contract.full, op)
        if reader is None:
            ctx.skip("the contract gives no way to read the record back")
            continue
        pooled = ctx.session.ids.path_parameters(op)
        path = pooled or _path_of(ctx, op)
        if path is None:
            ctx.skip("no record to update")
            continue
        _update_fields(ctx, op, reader, path)
        if pooled is None:
            _remove(ctx, op, path)


def _remove(ctx: Context, op: Operation, path: dict[str, str]) -> None:
    """Delete a record the check created for itself, where the contract has a DELETE."""
    for other in ctx.held.operations.values():
        if other.method == "DELETE" and other.path == op.path and not ctx.why_not_send(other):
            ctx.call(other, path_parameters=path)  # clean-up, not judged


def _update_fields(ctx: Context, op: Operation, reader: Reader, path: dict[str, str]) -> None:
    record_id = list(path.values())[-1]
    _, before = read_record(ctx, reader, path, record_id)
    if before is None:
        ctx.skip("the record could not be read back")
        return
    original = dict(before)
    writable = {name for name in _writable(ctx, op) if name in before}
    changed: list[str] = []
    attempts = 0
    for field, value in _candidates(ctx, op, path, writable):
        if len(changed) >= MAX_FIELDS or attempts >= MAX_ATTEMPTS:
            break
        if field in changed or holds(value, before[field]):
            continue  # one PATCH per field, and only a real change shows anything
        attempts += 1
        exchange = ctx.call(op, path_parameters=path, json_body={field: value})
        if ctx.unavailable(exchange):
            return
        if not exchange.ok:
            continue  # refused (an unknown id, a rule of the record): another value is tried
        changed.append(field)
        read, after = read_record(ctx, reader, path, record_id)
        if not ctx.expect(
            after is not None,
            "read-back",
            f"after {op.label} answered {exchange.status}, {reader.op.label} no longer returns "
            f"record {record_id}",
            exchange=read,
            quote=_quote(ctx, op),
        ):
            return
        assert after is not None
        _judge(ctx, op, exchange, field, value, before, after, writable)
        before = after
    if not changed:
        ctx.skip("no generated change was accepted")
    else:
        restore = {name: original[name] for name in changed if original[name] is not None}
        if restore:
            ctx.call(op, path_parameters=path, json_body=restore)  # best effort, not judged


def _judge(
    ctx: Context,
    op: Operation,
    exchange: Exchange,
    field: str,
    value: Any,
    before: dict[str, Any],
    after: dict[str, Any],
    writable: set[str],
) -> None:
    quote = _quote(ctx, op)
    ctx.expect(
        holds(value, after.get(field, NOT_RETURNED)),
        "sent-field-changed",
        f"{op.label} sent {field}={_show(value)}; read back it is "
        f"{_show(after.get(field, NOT_RETURNED))}",
        exchange=exchange,
        quote=quote,
        key=(op.operation_id, field, "sent"),
    )
    moved = [
        name
        for name in sorted(writable - {field})
        if _key(before[name]) != _key(after.get(name, NOT_RETURNED))
    ]
    ctx.expect(
        not moved,
        "unsent-fields-unchanged",
        f"{op.label} sent only {field}, yet "
        + "; ".join(
            f"{name} went from {_show(before[name])} to {_show(after.get(name, NOT_RETURNED))}"
            for name in moved[:4]
        ),
        exchange=exchange,
        quote=quote,
        key=(op.operation_id, "unsent", tuple(moved)),
    )


def _show(value: Any) -> str:
    if value is NOT_RETURNED:
        return "not returned"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."


# -- products: none versus nothing bound yet ----------------------------------------------------


def _promotes_nothing(ctx: Context) -> tuple[Operation, str, str, str] | None:
    """``(PATCH, field, sentinel, pointer)``: a body field that is either ids or the single
    value the contract reserves (``["none"]``), read from the schema's ``oneOf``."""
    view = ctx.held
    for op in view.operations.values():
        if op.method != "PATCH" or op.body_schema is None:
            continue
        for name, raw in view.flatten(op.body_schema)["properties"].items():
            schema = view.resolve(raw)
            for branch in schema.get("oneOf", []) if isinstance(schema, dict) else []:
                branch = view.resolve(branch)
                items = view.resolve(branch.get("items", {}))
                values = items.get("enum", []) if isinstance(items, dict) else []
                if branch.get("maxItems") == 1 and len(values) == 1:
                    pointer = raw.get("$ref", "") if isinstance(raw, dict) else ""
                    return op, name, str(values[0]), pointer
    return None


@check(
    "records-products-none",
    FAMILY,
    'a channel PATCHed with products ["none"] reads back ["none"], and with [] reads back []: '
    "the two stay apart",
    creates=True,
)
def products_none(ctx: Context) -> None:
    found = _promotes_nothing(ctx)
    if found is None:
        raise Skip("the contract reserves no single value in a PATCH body")
    op, field, sentinel, pointer = found
    if reason := ctx.why_not_send(op):
        raise Skip(reason)
    reader = _reader(ctx.contract.full, op)
    if reader is None:
        raise Skip("the contract gives no way to read the record back")
    path = _path_of(ctx, op)
    if path is None:
        raise Skip("no record to update")
    record_id = list(path.values())[-1]
    _, before = read_record(ctx, reader, path, record_id)
    if before is None or field not in before:
        raise Skip("the record could not be read back")
    quote = ctx.held.quote(pointer) if pointer else _quote(ctx, op)
    seen = []
    for value in ([sentinel], []):
        exchange = ctx.call(op, path_parameters=path, json_body={field: value})
        if ctx.unavailable(exchange):
            return
        if not ctx.expect(
            exchange.ok,
            "accepted",
            f"{op.label} with {field}={_show(value)} answered {exchange.answered}",
            exchange=exchange,
            quote=quote,
        ):
            continue
        _, after = read_record(ctx, reader, path, record_id)
        got = after.get(field, NOT_RETURNED) if after is not None else NOT_RETURNED
        ctx.expect(
            got == value,
            "kept-as-sent",
            f"{op.label} sent {field}={_show(value)}; read back it is {_show(got)}",
            exchange=exchange,
            quote=quote,
        )
        seen.append(got)
    if len(seen) == 2:
        ctx.expect(
            _key(seen[0]) != _key(seen[1]),
            "none-differs-from-empty",
            f"{field}={_show([sentinel])} and {field}=[] read back alike ({_show(seen[0])})",
            quote=quote,
        )
    ctx.call(op, path_parameters=path, json_body={field: before[field]})  # put back, not judged
