"""What a handler receives: the validated request, the caller and the running mock."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from mockserver.contract import Operation
from mockserver.platform.auth import Caller
from mockserver.platform.clock import Clock
from mockserver.platform.cursors import CursorCodec, Position, read_page
from mockserver.platform.envelope import iso_z, public
from mockserver.platform.idempotency import Idempotency
from mockserver.platform.scheduler import Scheduler
from mockserver.platform.secretbox import SecretBox
from mockserver.platform.validation import OperationValidator
from mockserver.settings import Settings
from mockserver.world import Query, World


class Running(Protocol):
    """The running mock as a handler sees it (runtime.py's Runtime, which holds more). Named
    here, not imported, so that the modules a runtime is made of (its seams, the areas' rules
    they default to) can name a call without importing the runtime."""

    settings: Settings
    clock: Clock
    world: World
    cursors: CursorCodec
    idempotency: Idempotency
    secrets: SecretBox
    scheduler: Scheduler
    validators: dict[str, OperationValidator]
    seams: Any  # seams.py's Seams, whose seams take a Call


@dataclass
class Call:
    runtime: Running
    operation: Operation
    request_id: str
    caller: Caller | None
    path: dict[str, Any]
    query: dict[str, Any]
    headers: dict[str, Any]
    body: Any

    @property
    def world(self) -> World:
        return self.runtime.world

    @property
    def workspace_id(self) -> str:
        assert self.caller is not None
        return self.caller.workspace_id

    @property
    def workspace(self) -> dict[str, Any]:
        return self.world.workspace(self.workspace_id)

    @property
    def now(self) -> datetime:
        return self.runtime.clock.now()

    @property
    def now_iso(self) -> str:
        return iso_z(self.now)

    def new_id(self, prefix: str) -> str:
        return self.world.ids.new(prefix)

    def records(
        self,
        name: str,
        equal: dict[str, Any] | None = None,
        where: Callable[[dict[str, Any]], bool] | None = None,
    ) -> Query:
        """The caller's workspace's records of a collection, as a list pages them
        (:class:`~mockserver.world.Query`)."""
        return Query(self.world, self.workspace_id, name, equal, where)

    def page(
        self,
        items: str,
        records: Query | Iterable[dict[str, Any]],
        *,
        visible: Callable[[dict[str, Any]], bool] | None = None,
        view: Callable[[dict[str, Any]], dict[str, Any]] = public,
        after_seq: int | None = None,
        check: Callable[[Position], None] | None = None,
    ) -> dict[str, Any]:
        """A cursor-paged list body: ``{items: [...], nextCursor, hasMore}``.

        The cursor is bound to this operation, its path parameters (a project's comments are
        another list than another project's) and every query value except ``cursor`` and
        ``limit`` (defaults included), and is checked here; ``check`` may refuse a position.
        ``visible`` filters after reading (a page may then be empty while more follow);
        ``after_seq`` overrides the position (deprecated offset-style parameters).

        ``records`` is a :class:`~mockserver.world.Query` (a collection, read from the position
        on: a deep page costs what the first costs), or any records in ``_seq`` order (read
        from their start: for the few lists that are not a collection).
        """
        filters = {k: v for k, v in self.query.items() if k not in ("cursor", "limit")}
        filters.update({f"path:{k}": v for k, v in self.path.items()})
        cursors = self.runtime.cursors
        scope = self.operation.operation_id
        if after_seq is None:
            after_seq = 0
            if "cursor" in self.query:
                position = cursors.open(self.query["cursor"], scope, filters)
                if check is not None:
                    check(position)
                after_seq = position.seq
        if isinstance(records, Query):
            records = records.after(after_seq)
        page = read_page(records, after_seq=after_seq, limit=self.query["limit"], visible=visible)
        next_cursor, has_more = self.runtime.seams.next_page(
            page, lambda seq: cursors.issue(scope, filters, seq)
        )
        return {
            items: [view(r) for r in page.records],
            "nextCursor": next_cursor,
            "hasMore": has_more,
        }
