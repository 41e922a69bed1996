"""Real ids for path parameters, read from the deployment's own lists.

A path parameter is filled from the list its path names, by REST convention: the list at the path
before the parameter (``/v1/projects`` for ``/v1/projects/{projectId}/comments``), or else the
list named after the parameter (``/v1/channels`` for ``channelId``). The first page of that list
is read once per key; items answer their ``id``. Ids a check keeps for itself (a subscription a
prepare made, which must outlast the other checks) are never handed out.

A check that needs a record of the workspace where the list is empty asks :func:`own_ids`: with
writes allowed it creates one (the ``POST`` at the list's path), kept for the check that
created it (a mock's state is reset between checks); otherwise none, and the check skips,
saying so (never a made-up id, which a deployment rightly answers ``404``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.contract import ContractView, Operation
from conformance.payment import payment_refused
from conformance.target import Exchange, Target

if TYPE_CHECKING:
    from conformance.context import Context


class IdPool:
    def __init__(self, target: Target, view: ContractView, page_size: int = 10) -> None:
        self.target = target
        self.view = view
        self.page_size = page_size
        self._ids: dict[tuple[str, str], list[str]] = {}
        # (list, key, check) -> ids created for that check, or why none could be
        self._created: dict[tuple[str, str, str | None], list[str] | str] = {}
        self._kept: set[str] = set()

    def keep_out(self, *ids: str | None) -> None:
        """Never hand out these ids: a check holds them (other checks must not change them)."""
        self._kept.update(i for i in ids if i is not None)

    def list_for(self, op: Operation | None, name: str) -> Operation | None:
        segments = op.path.split("/") if op is not None else []
        placeholder = "{" + name + "}"
        if placeholder in segments:
            prefix = "/".join(segments[: segments.index(placeholder)])
            found = self._list_at(prefix)
            if found is not None:
                return found
        if name.endswith("Id"):
            stem = name[:-2]
            kebab = "".join(f"-{c.lower()}" if c.isupper() else c for c in stem)
            return self._list_at(f"/v1/{kebab}s")
        return None

    def _list_at(self, path: str) -> Operation | None:
        for op in self.view.operations.values():
            if op.method == "GET" and op.path == path and not op.path_parameters:
                return op if self.view.items_field(op) else None
        return None

    def ids(self, list_op: Operation, auth: str = "primary") -> list[str]:
        key = (list_op.operation_id, auth)
        if key not in self._ids:
            self._ids[key] = self._read(list_op, auth)
        return [i for i in self._ids[key] if i not in self._kept]

    def _read(self, list_op: Operation, auth: str) -> list[str]:
        params: dict[str, Any] = {}
        if list_op.parameter("limit", "query"):
            params["limit"] = self.page_size
        exchange: Exchange = self.target.request(
            "GET", list_op.path, params=params, operation_id=list_op.operation_id, auth=auth
        )
        body = exchange.json()
        field = self.view.items_field(list_op)
        if exchange.status != 200 or not isinstance(body, dict) or not field:
            return []
        items = body.get(field)
        if not isinstance(items, list):
            return []
        return [str(i["id"]) for i in items if isinstance(i, dict) and isinstance(i.get("id"), str)]

    def ids_for(self, name: str, auth: str = "primary") -> list[str]:
        """Ids for a parameter called ``name`` (``projectId``), from the list named after it."""
        list_op = self.list_for(None, name)
        return self.ids(list_op, auth) if list_op is not None else []

    def path_parameters(self, op: Operation, auth: str = "primary") -> dict[str, str] | None:
        """Real values for every path parameter of ``op``, or None when one cannot be found."""
        values = {}
        for param in op.path_parameters:
            list_op = self.list_for(op, param.name)
            ids = self.ids(list_op, auth) if list_op is not None else []
            if not ids:
                return None
            values[param.name] = ids[0]
        return values


def resource_id(body: Any) -> str | None:
    """The id of the resource a create answered (``project.id``, ``job.id`` …)."""
    if not isinstance(body, dict):
        return None
    for value in body.values():
        if isinstance(value, dict) and isinstance(value.get("id"), str):
            return value["id"]
    return body.get("id") if isinstance(body.get("id"), str) else None


def own_ids(
    ctx: Context, name: str, auth: str = "primary", op: Operation | None = None
) -> list[str]:
    """Ids for a parameter called ``name`` (of ``op``'s path, when given) of the workspace: those
    listed, else one created for the running check where writes are allowed, else none
    (:func:`missing` says why)."""
    pool = ctx.session.ids
    list_op = pool.list_for(op, name)
    listed = pool.ids(list_op, auth) if list_op is not None else []
    if listed or list_op is None or not ctx.session.allow_writes:
        return listed
    key = (list_op.operation_id, auth, ctx.target.current_check)
    if key not in pool._created:
        pool._created[key] = _create(ctx, list_op, auth)
    created = pool._created[key]
    return created if isinstance(created, list) else []


def own_path_parameters(
    ctx: Context, op: Operation, auth: str = "primary"
) -> dict[str, str] | None:
    """:meth:`IdPool.path_parameters`, with a record created where a list is empty (as
    :func:`own_ids`); None when a value cannot be had."""
    values = {}
    for param in op.path_parameters:
        ids = own_ids(ctx, param.name, auth, op)
        if not ids:
            return None
        values[param.name] = ids[0]
    return values


def missing_path_parameter(ctx: Context, op: Operation, auth: str = "primary") -> str:
    """Why :func:`own_path_parameters` has no values for ``op``: the skip reason."""
    for param in op.path_parameters:
        if not own_ids(ctx, param.name, auth, op):
            return missing(ctx, param.name, auth, op)
    return f"no ids for {op.path}"


def missing(ctx: Context, name: str, auth: str = "primary", op: Operation | None = None) -> str:
    """Why :func:`own_ids` has no id for ``name``: the skip reason."""
    pool = ctx.session.ids
    list_op = pool.list_for(op, name)
    if list_op is None:
        return f"the contract lists no records for {name}"
    what = f"no {name} of this workspace: {list_op.label} lists none"
    if not ctx.session.allow_writes:
        return f"{what}; creating one needs --allow-spend"
    created = pool._created.get((list_op.operation_id, auth, ctx.target.current_check))
    return f"{what}, and {created}" if isinstance(created, str) else what


def _create(ctx: Context, list_op: Operation, auth: str) -> list[str] | str:
    op = next(
        (o for o in ctx.held.operations.values() if o.method == "POST" and o.path == list_op.path),
        None,
    )
    if op is None:
        return "the interface offers no way to create one"
    if reason := ctx.why_not_send(op):
        return f"{op.label} may not be sent ({reason})"
    key = ctx.new_key() if op.idempotency_key is not None else None
    prepared = ctx.sample(op, salt="own-record", idempotency_key=key, auth=auth)
    if prepared is None:
        return f"no request to {op.label} could be generated"
    exchange = ctx.send(prepared, op, auth=auth)
    record_id = resource_id(exchange.json()) if 200 <= exchange.status < 300 else None
    if record_id is None:
        return payment_refused(exchange) or f"{op.label} answered {exchange.answered}"
    return [record_id]
