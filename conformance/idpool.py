"""Real ids for path parameters, read from the deployment's own lists.

A path parameter is filled from the list its path names, by REST convention: the list at the path
before the parameter (``/v1/projects`` for ``/v1/projects/{projectId}/comments``), or else the
list named after the parameter (``/v1/channels`` for ``channelId``). The first page of that list
is read once per key; items answer their ``id``.
"""

from __future__ import annotations

from typing import Any

from conformance.contract import ContractView, Operation
from conformance.target import Exchange, Target


class IdPool:
    def __init__(self, target: Target, view: ContractView, page_size: int = 10) -> None:
        self.target = target
        self.view = view
        self.page_size = page_size
        self._ids: dict[tuple[str, str], list[str]] = {}

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
        return self._ids[key]

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
