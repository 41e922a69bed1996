"""Pagination: cursor-paged lists walked to their end, cursors bound to their query, bounds.

A list is cursor-paged when the profile's document gives it a ``cursor`` query parameter and a
``nextCursor`` in its success body; its items are the required array of that body. Under the
``contract`` profile a list whose paging is inferred is not walked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from conformance.checks import check
from conformance.context import Context
from conformance.contract import Operation, Parameter, link_value
from conformance.skips import Skip
from conformance.target import Exchange

FAMILY = "pagination"
SMALL_PAGE = 10
MAX_PAGES = 60
_PAGING_PARAMS = {"limit", "cursor", "after", "offset"}


def _cursor_lists(ctx: Context) -> Iterator[Operation]:
    """The cursor-paged lists the run may read (those it may not: skipped, with the reason), in
    a bounded run's breadth pass up to the check's first judgement (the rest in its depth)."""
    lists = (o for o in ctx.held.operations.values() if ctx.held.is_cursor_list(o))
    for op in ctx.share(o for o in lists if ctx.held.items_field(o)):
        if reason := ctx.why_not_send(op):
            ctx.skip(reason)
            continue
        yield op


def _path_parameters(ctx: Context, op: Operation) -> dict[str, str] | None:
    if not op.path_parameters:
        return {}
    found = ctx.session.ids.path_parameters(op)
    if found is None and ctx.session.allow_writes:
        found = _through_a_link(ctx, op)
    if found is None:
        ctx.skip("no id to page under")
    return found


def _through_a_link(
    ctx: Context, op: Operation, body_update: Callable[[Any], Any] | None = None
) -> dict[str, str] | None:
    """Ids for ``op`` from a create whose response links to it (``$response.body#/job/id``)."""
    for source in ctx.held.operations.values():
        if ctx.why_not_send(source) is not None:
            continue
        for link in _links_to(ctx, source, op):
            prepared = ctx.sample(
                source, salt="link", idempotency_key=ctx.new_key(), body_update=body_update
            )
            if prepared is None:
                continue
            exchange = ctx.send(prepared, source)
            if ctx.unavailable(exchange) or not exchange.ok:
                continue
            values = {
                name: link_value(str(expression), {}, exchange.json())
                for name, expression in link.get("parameters", {}).items()
            }
            if all(isinstance(v, str) for v in values.values()):
                if ctx.control is not None:
                    ctx.control.advance(60)  # let the new job move forward on the mock's clock
                return {k: str(v) for k, v in values.items()}
    return None


def _links_to(ctx: Context, source: Operation, op: Operation) -> list[dict[str, Any]]:
    found = []
    for response in source.definition.get("responses", {}).values():
        for link in ctx.held.resolve(response).get("links", {}).values():
            if link.get("operationId") == op.operation_id and link.get("parameters"):
                found.append(link)
    return found


def _bounds(param: Parameter | None) -> tuple[int | None, int | None]:
    if param is None:
        return None, None
    schema = param.schema
    parts = [schema, *[p for p in schema.get("allOf", []) if isinstance(p, dict)]]
    low = next((p["minimum"] for p in parts if "minimum" in p), None)
    high = next((p["maximum"] for p in parts if "maximum" in p), None)
    return low, high


def _page_size(op: Operation, wanted: int = SMALL_PAGE) -> int | None:
    param = op.parameter("limit", "query")
    if param is None:
        return None
    low, high = _bounds(param)
    size = max(wanted, low or 1)
    return min(size, high) if high is not None else size


def _quote(ctx: Context) -> str:
    return ctx.held.quote("#/components/schemas/CursorPage")


class Walk:
    """One walk of a list from its first page to ``nextCursor: null``."""

    def __init__(self, ctx: Context, op: Operation, path: dict[str, str], limit: int | None):
        self.ctx, self.op, self.path, self.limit = ctx, op, path, limit
        self.field = ctx.held.items_field(op) or ""
        self.ids: list[str] = []
        self.pages: list[Exchange] = []
        self.finished = False
        self.unavailable = False

    def run(self, params: dict[str, Any] | None = None, judge: bool = True) -> Walk:
        ctx, cursor = self.ctx, None
        for _ in range(MAX_PAGES):
            query = dict(params or {})
            if self.limit is not None:
                query["limit"] = self.limit
            if cursor is not None:
                query["cursor"] = cursor
            exchange = ctx.call(self.op, path_parameters=self.path, params=query)
            self.pages.append(exchange)
            if exchange.capability_unavailable:
                self.unavailable = True
                return self
            body = exchange.json()
            if exchange.status != 200 or not isinstance(body, dict):
                if judge:
                    ctx.fail(
                        "follow-cursor",
                        f"page {len(self.pages)} answered {exchange.answered}"
                        + (" (following nextCursor)" if cursor else ""),
                        exchange=exchange,
                        quote=_quote(ctx),
                    )
                return self
            if judge:
                cursor = self._judge_page(exchange, body)
            else:
                items = body.get(self.field)
                self.ids += [str(i["id"]) for i in items or [] if isinstance(i, dict) and "id" in i]
                cursor = body.get("nextCursor")
            if cursor is None or cursor == "":
                self.finished = True
                return self
        if judge:
            ctx.fail(
                "ends",
                f"the list did not end within {MAX_PAGES} pages of {self.limit}",
                exchange=self.pages[-1],
                quote=_quote(ctx),
            )
        return self

    def _judge_page(self, exchange: Exchange, body: dict[str, Any]) -> Any:
        ctx = self.ctx
        items = body.get(self.field)
        next_cursor = body.get("nextCursor", "<absent>")
        ctx.expect(
            next_cursor is None or (isinstance(next_cursor, str) and next_cursor != ""),
            "next-cursor-null",
            f"nextCursor is {next_cursor!r}: it must be null on the last page and a non-empty "
            "cursor otherwise",
            exchange=exchange,
            quote=_quote(ctx),
            key=(self.op.operation_id, "next-cursor"),
        )
        if "hasMore" in body:
            ctx.expect(
                body["hasMore"] is (next_cursor not in (None, "")),
                "has-more",
                f"hasMore is {'null' if body['hasMore'] is None else repr(body['hasMore'])} "
                f"while nextCursor is {'null' if next_cursor is None else repr(next_cursor)}",
                exchange=exchange,
                quote=ctx.held.quote("#/components/schemas/CursorPage/properties/hasMore"),
                key=(self.op.operation_id, "has-more"),
            )
        if not isinstance(items, list):
            ctx.fail("items", f"{self.field} is not an array", exchange=exchange)
            return None
        if self.limit is not None:
            ctx.expect(
                len(items) <= self.limit,
                "limit",
                f"{len(items)} items on a page of limit {self.limit}",
                exchange=exchange,
                quote=ctx.held.quote("#/components/parameters/Limit"),
                key=(self.op.operation_id, "limit"),
            )
        ids = [str(i["id"]) for i in items if isinstance(i, dict) and "id" in i]
        repeated = sorted(set(ids) & set(self.ids)) + sorted({i for i in ids if ids.count(i) > 1})
        ctx.expect(
            not repeated,
            "no-repeats",
            f"ids seen twice in one walk: {', '.join(repeated[:5])}",
            exchange=exchange,
            quote=_quote(ctx),
            key=(self.op.operation_id, "repeats"),
        )
        self.ids += ids
        return next_cursor if isinstance(next_cursor, str) else None


@check(
    "pagination-walk",
    FAMILY,
    "every cursor-paged list walked with a small limit: nextCursor null only at the end, "
    "hasMore agrees, no id twice, same items as a walk with large pages",
    deep=True,
)
def walk(ctx: Context) -> None:
    for op in _cursor_lists(ctx):
        path = _path_parameters(ctx, op)
        if path is None:
            continue
        small = Walk(ctx, op, path, _page_size(op)).run()
        if small.unavailable:
            ctx.unavailable(small.pages[-1])
            continue
        if not small.finished:
            continue
        large_size = _page_size(op, wanted=10**9)
        if large_size is None or large_size == small.limit:
            continue
        large = Walk(ctx, op, path, large_size).run(judge=False)
        if large.finished:
            ctx.expect(
                set(large.ids) == set(small.ids),
                "same-items",
                f"a walk with limit {small.limit} saw {len(set(small.ids))} ids and one with "
                f"limit {large_size} saw {len(set(large.ids))}; missing from the small walk: "
                f"{', '.join(sorted(set(large.ids) - set(small.ids))[:5]) or 'none'}",
                exchange=small.pages[-1],
                quote=_quote(ctx),
            )


def _first_cursor(ctx: Context, op: Operation, path: dict[str, str], params: dict[str, Any]):
    limit = _page_size(op, wanted=1)
    query = dict(params) | ({"limit": limit} if limit is not None else {})
    exchange = ctx.call(op, path_parameters=path, params=query)
    body = exchange.json()
    if ctx.unavailable(exchange):
        return exchange, None
    cursor = body.get("nextCursor") if isinstance(body, dict) else None
    if exchange.status != 200 or not isinstance(cursor, str) or not cursor:
        ctx.skip("the list has a single page")
        return exchange, None
    return exchange, (cursor, query)


def _refused(ctx: Context, exchange: Exchange, rule: str, message: str) -> None:
    codes = ctx.held.error_codes.get(400, ())
    ctx.expect(
        exchange.status == 400 and exchange.code in codes,
        rule,
        f"{message}: expected 400 {' or '.join(codes)}, got {exchange.answered}",
        exchange=exchange,
        quote=ctx.held.quote("#/components/responses/BadRequest") + " " + _quote(ctx),
    )


def _other_filter(op: Operation) -> tuple[str, Any] | None:
    for param in op.parameters:
        if param.location != "query" or param.name in _PAGING_PARAMS or param.deprecated:
            continue
        values = [v for v in param.schema.get("enum", []) if v != param.schema.get("default")]
        if values:
            return param.name, values[0]
    return None


@check(
    "pagination-cursors",
    FAMILY,
    "a cursor sent with changed filters, and a tampered cursor, answer 400 invalid_request",
    deep=True,
)
def cursors(ctx: Context) -> None:
    for op in _cursor_lists(ctx):
        path = _path_parameters(ctx, op)
        if path is None:
            continue
        _, found = _first_cursor(ctx, op, path, {})
        if found is None:
            continue
        cursor, query = found
        tampered = _tamper(cursor)
        exchange = ctx.call(op, path_parameters=path, params=query | {"cursor": tampered})
        _refused(ctx, exchange, "tampered-cursor", f"a tampered cursor {tampered!r}")
        changed = _other_filter(op)
        if changed is None:
            continue
        name, value = changed
        exchange = ctx.call(
            op, path_parameters=path, params=query | {"cursor": cursor, name: value}
        )
        _refused(ctx, exchange, "cursor-bound-to-query", f"a cursor sent with {name}={value}")


def _tamper(cursor: str) -> str:
    middle = len(cursor) // 2
    swapped = "A" if cursor[middle] != "A" else "B"
    return cursor[:middle] + swapped + cursor[middle + 1 :]


@check(
    "pagination-limit-bounds",
    FAMILY,
    "`limit` below and above the bounds the contract states answers 400 invalid_request",
)
def limit_bounds(ctx: Context) -> None:
    for op in ctx.held.operations.values():
        param = op.parameter("limit", "query")
        low, high = _bounds(param)
        if param is None or op.method != "GET" or (low is None and high is None):
            continue
        if reason := ctx.why_not_send(op):
            ctx.skip(reason)
            continue
        path = _path_parameters(ctx, op)
        if path is None:
            continue
        outside = [low - 1 if low is not None else None, high + 1 if high is not None else None]
        for value in [v for v in outside if v is not None]:
            exchange = ctx.call(op, path_parameters=path, params={"limit": value})
            if ctx.unavailable(exchange):
                break
            _refused(ctx, exchange, "limit-bounds", f"limit={value} (bounds {low} to {high})")


def _valid_value(schema: dict[str, Any]) -> Any:
    """A value the whole contract accepts (the best guess at valid input, as positive data)."""
    parts = [schema, *[p for p in schema.get("allOf", []) if isinstance(p, dict)]]
    enums = [p["enum"] for p in parts if p.get("enum")]
    if enums:
        return enums[0][0]
    if any(p.get("type") == "integer" for p in parts):
        return next((p["minimum"] for p in parts if "minimum" in p), 0)
    return "conformance"


@check(
    "pagination-deprecated-params",
    FAMILY,
    "deprecated parameters (and body fields) are still accepted",
)
def deprecated_params(ctx: Context) -> None:
    for op in ctx.held.operations.values():
        deprecated = [p for p in op.parameters if p.deprecated and p.location == "query"]
        if not deprecated:
            continue
        if reason := ctx.why_not_send(op):
            ctx.skip(reason)
            continue
        path = _path_parameters(ctx, op)
        if path is None:
            continue
        full = ctx.contract.full.operations[op.operation_id]
        for param in deprecated:
            declared = full.parameter(param.name, "query")
            value = _valid_value(declared.schema if declared else param.schema)
            exchange = ctx.call(op, path_parameters=path, params={param.name: value})
            if ctx.unavailable(exchange):
                break
            ctx.expect(
                exchange.ok,
                "deprecated-accepted",
                f"deprecated {param.name}={value} answered {exchange.answered}",
                exchange=exchange,
                quote="A deprecated field stays accepted and returned.",
            )
    _deprecated_body_fields(ctx)


def _deprecated_body_fields(ctx: Context) -> None:
    for op in ctx.held.operations.values():
        if op.body_schema is None:
            continue
        props = ctx.held.flatten(op.body_schema)["properties"]
        fields = {
            name: s for name, s in props.items() if isinstance(s, dict) and s.get("deprecated")
        }
        if not fields:
            continue
        if reason := ctx.why_not_send(op):
            ctx.skip(reason)
            continue
        full_props = ctx.contract.full.flatten(
            ctx.contract.full.operations[op.operation_id].body_schema
        )["properties"]
        for name, schema in fields.items():
            value = _valid_value(ctx.contract.full.resolve(full_props.get(name, schema)))

            update = _replacing(ctx, props, name, value)
            exchange = ctx.probe(
                op, salt=f"deprecated-{name}", idempotency_key=ctx.new_key(), body_update=update
            )
            if exchange is None:
                continue
            ctx.expect(
                exchange.ok,
                "deprecated-accepted",
                f"a body with deprecated {name}={value!r} answered {exchange.answered}",
                exchange=exchange,
                quote=ctx.held.quote(f"{_pointer_of(op)}", "A deprecated field stays accepted."),
            )


def _replacing(
    ctx: Context, props: dict[str, Any], name: str, value: Any
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A body update that sends ``name`` in place of the fields it deprecates (same schema)."""
    same = ctx.held.resolve(props[name])

    def update(body: dict[str, Any]) -> dict[str, Any]:
        kept = {k: v for k, v in body.items() if ctx.held.resolve(props.get(k)) is not same}
        return kept | {name: value}

    return update


def _pointer_of(op: Operation) -> str:
    return f"#/paths/{op.path.replace('/', '~1')}/{op.method.lower()}"


def _stream_pointer(ctx: Context, op: Operation) -> list[str] | None:
    schema = ctx.held.success_schema(op)
    if schema is None:
        return None
    flat = ctx.held.flatten(schema)
    if "nextAfter" in flat["properties"]:
        return ["nextAfter"]
    for name, sub in flat["properties"].items():
        if "nextAfter" in ctx.held.flatten(sub)["properties"]:
            return [name, "nextAfter"]
    return None


@check(
    "pagination-ordered-streams",
    FAMILY,
    "ordered streams (`after`/`nextAfter`) walked to the end never go backwards",
)
def ordered_streams(ctx: Context) -> None:
    streams = []
    for op in ctx.held.operations.values():
        pointer = _stream_pointer(ctx, op)
        if op.method != "GET" or op.parameter("after", "query") is None or pointer is None:
            continue
        if reason := ctx.why_not_send(op):
            ctx.skip(reason)
            continue
        streams.append((op, pointer))
    if not streams:
        raise Skip("no ordered stream in the contract for this profile")
    for op, pointer in streams:
        path = _path_parameters(ctx, op)
        if path is None:
            continue
        _walk_stream(ctx, op, path, pointer)


def _walk_stream(ctx: Context, op: Operation, path: dict[str, str], pointer: list[str]) -> None:
    after: int | None = None
    limit = _page_size(op, wanted=2)  # small pages: a short stream still spans several
    for _ in range(MAX_PAGES):
        query: dict[str, Any] = {} if after is None else {"after": after}
        if limit is not None:
            query["limit"] = limit
        exchange = ctx.call(op, path_parameters=path, params=query)
        if ctx.unavailable(exchange) or exchange.status != 200:
            if exchange.status == 404:
                ctx.skip("no stream to read")
            return
        node: Any = exchange.json()
        for part in pointer:
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            ctx.passed()
            return
        if not ctx.expect(
            isinstance(node, int) and (after is None or node >= after),
            "never-backwards",
            f"nextAfter went from {'(none)' if after is None else after} to {node!r}",
            exchange=exchange,
            quote=ctx.held.quote(_pointer_of(op)),
        ):
            return
        body = exchange.json()
        if node == after or (isinstance(body, dict) and body.get("hasMore") is False):
            return
        after = node


# -- a cursor beside a deprecated paging parameter ----------------------------------------------

_CURSOR_WINS = re.compile(r"[^.]*\bcursor`? wins[^.]*\.?", re.I)
MAX_GUESSES = 12  # values tried for a path parameter no list names (a catalogue's domain)


def _sentence_cursor_wins(ctx: Context, op: Operation, param: Parameter) -> str | None:
    """Where the contract says the cursor wins over ``param``: the operation's sentence, else
    the parameter's description."""
    full = ctx.contract.full
    texts = [str(op.definition.get("description", ""))]
    for raw in op.definition.get("parameters", []):
        resolved = full.resolve(raw)
        if resolved.get("name") == param.name:
            texts.append(str(resolved.get("description", "")))
    for text in texts:
        if found := _CURSOR_WINS.search(" ".join(text.split())):
            return found.group(0).strip()
    return None


def _guesses(ctx: Context, op: Operation) -> list[dict[str, str]]:
    """Path values to try for a parameter no list names (a catalogue's ``domain``): words of
    the workspace's channel niches and the theme taxonomy's ids, as the parameter's pattern
    allows them."""
    param = op.path_parameters[0]
    full = ctx.contract.full.operations[op.operation_id].parameter(param.name, "path")
    schema = full.schema if full else param.schema
    parts = [schema, *[p for p in schema.get("allOf", []) if isinstance(p, dict)]]
    pattern = next((re.compile(p["pattern"]) for p in parts if "pattern" in p), None)
    words: list[str] = []
    for path, field in (("/v1/channels", "niche"), ("/v1/themes", "id")):
        for text in _listed_values(ctx, path, field):
            words += [text.lower().replace(" ", "-"), *text.lower().split()]
    found = [w for w in dict.fromkeys(words) if w and (pattern is None or pattern.search(w))]
    return [{param.name: w} for w in found[:MAX_GUESSES]]


def _listed_values(ctx: Context, path: str, field: str) -> list[str]:
    """``field`` of the items on the first page of the list at ``path``."""
    full = ctx.contract.full
    lister = full.find("GET", path)
    items_field = full.items_field(lister) if lister is not None else None
    if lister is None or items_field is None or ctx.why_not_send(lister):
        return []
    body = ctx.call(lister).json()
    items = body.get(items_field) if isinstance(body, dict) else None
    return [str(i[field]) for i in items or [] if isinstance(i, dict) and field in i]


def _listable_path(ctx: Context, op: Operation, limit: int | None) -> dict[str, str] | None:
    if not op.path_parameters:
        return {}
    found = ctx.session.ids.path_parameters(op)
    if found is not None or len(op.path_parameters) != 1:
        return found
    for guess in _guesses(ctx, op):
        query = {"limit": limit} if limit is not None else {}
        if ctx.call(op, path_parameters=guess, params=query).status == 200:
            return guess
    return None


def _page_ids(ctx: Context, op: Operation, exchange: Exchange) -> list[str] | None:
    body = exchange.json()
    items = body.get(ctx.contract.full.items_field(op) or "") if isinstance(body, dict) else None
    if exchange.status != 200 or not isinstance(items, list):
        return None
    return [str(i.get("id")) for i in items if isinstance(i, dict)]


@check(
    "pagination-catalog-precedence",
    FAMILY,
    "a cursor sent with the deprecated offset (video catalog; after on assets, full profile) "
    "wins: the page is the cursor's, not the first; the deprecated parameter alone still pages",
)
def catalog_precedence(ctx: Context) -> None:
    judged = False
    for op in ctx.held.operations.values():
        if not ctx.held.is_cursor_list(op):
            continue
        for param in [p for p in op.parameters if p.deprecated and p.location == "query"]:
            sentence = _sentence_cursor_wins(ctx, op, param)
            if sentence is None:
                continue
            if reason := ctx.why_not_send(op):
                ctx.skip(reason)
                continue
            if "inferred" in sentence and ctx.profile == "contract":
                ctx.skip("that the cursor wins is inferred for this list")
                continue
            judged = _precedence(ctx, op, param, sentence) or judged
    if not judged:
        raise Skip("no list with a deprecated paging parameter could be paged")


def _answered(exchange: Exchange, ids: list[str] | None, first: list[str]) -> str:
    if ids is None:
        return f"{exchange.answered}"
    return f"items {ids[:5]}" + (" (the first page)" if ids == first else "")


def _precedence(ctx: Context, op: Operation, param: Parameter, sentence: str) -> bool:
    limit = _page_size(op, wanted=2)
    path = _listable_path(ctx, op, limit)
    if path is None:
        ctx.skip("no id to page under")
        return False
    base = {"limit": limit} if limit is not None else {}
    first = ctx.call(op, path_parameters=path, params=base)
    if ctx.unavailable(first):
        return False
    body = first.json()
    cursor = body.get("nextCursor") if isinstance(body, dict) else None
    first_ids = _page_ids(ctx, op, first)
    if not isinstance(cursor, str) or not cursor or first_ids is None:
        ctx.skip("the list has a single page")
        return False
    declared = ctx.contract.full.operations[op.operation_id].parameter(param.name, "query")
    start = _valid_value(declared.schema if declared else param.schema)
    second = ctx.call(op, path_parameters=path, params=base | {"cursor": cursor})
    by_cursor = _page_ids(ctx, op, second)
    both = ctx.call(op, path_parameters=path, params=base | {"cursor": cursor, param.name: start})
    both_ids = _page_ids(ctx, op, both)
    ctx.expect(
        by_cursor is not None and both_ids == by_cursor,
        "cursor-wins",
        f"cursor with {param.name}={start} answered {_answered(both, both_ids, first_ids)}; "
        f"the cursor alone answers {_answered(second, by_cursor, first_ids)}",
        exchange=both,
        quote=sentence,
    )
    skip = len(first_ids)
    alone = ctx.call(op, path_parameters=path, params=base | {param.name: skip})
    alone_ids = _page_ids(ctx, op, alone)
    ctx.expect(
        alone_ids is not None and alone_ids == by_cursor,
        "deprecated-pages",
        f"{param.name}={skip} alone (the first page's items read) answered "
        f"{_answered(alone, alone_ids, first_ids)}; the second page is "
        f"{_answered(second, by_cursor, first_ids)}",
        exchange=alone,
        quote=ctx.held.quote(_pointer_of(op), "A deprecated field stays accepted."),
    )
    return True
