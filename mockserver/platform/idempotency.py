"""Idempotency keys: one logical operation, executed once, replayed on retry.

- Scope: the workspace and the key. The same key with the same request (operation, path and
  canonical JSON body) replays the first answer, status and body bytes, with no second
  resource and no second charge.
- The same key with a different request answers ``409 conflict``, ``details.reason``
  ``idempotency_key_reused`` (inferred).
- Only successes are kept, and only when their transaction commits: a failed call does not
  hold its key (the entry is written inside the request's transaction).
- Concurrent requests with one key execute once: later ones wait in :meth:`Idempotency.slot`
  for the first to finish, then replay it.
- Kept for ``x-limits.idempotencyKeyRetentionSeconds`` on the mock clock (inferred), then
  swept by :meth:`Idempotency.sweep` (a scheduler ticker), so memory stays bounded by the
  keys of the last retention period.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Protocol

from mockserver.platform.clock import Clock
from mockserver.platform.errors import conflict
from mockserver.platform.scheduler import ticker

if TYPE_CHECKING:
    from datetime import datetime

    from mockserver.world import World


def fingerprint(operation_id: str, path_params: dict[str, Any], body: Any) -> str:
    canonical = json.dumps([operation_id, path_params, body], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class KeepsAnswers(Protocol):
    """What holds a mock's kept answers (the runtime)."""

    @property
    def idempotency(self) -> Idempotency: ...


class KeyedCall(Protocol):
    """What idempotency reads of a call (mockserver/call.py's ``Call`` is one)."""

    @property
    def runtime(self) -> KeepsAnswers: ...

    @property
    def workspace_id(self) -> str: ...


def find_replay(call: KeyedCall, key: str, print_: str) -> dict[str, Any] | None:
    """The kept answer a call with this key replays (nothing charged, nothing created), None to
    execute it; 409 for a key reused on another request."""
    return call.runtime.idempotency.lookup(call.workspace_id, key, print_)


class Idempotency:
    def __init__(
        self,
        world: Callable[[], World],
        clock: Clock,
        retention: int,
        due: Callable[[float], None],
    ) -> None:
        self._world = world  # the runtime's current world (reset and restore replace it)
        self._clock = clock
        self._retention = retention
        self._due = due  # tells the scheduler when a kept answer will need sweeping
        self._in_flight: dict[tuple[str, str], asyncio.Future[None]] = {}

    @contextlib.asynccontextmanager
    async def slot(self, workspace_id: str, key: str) -> AsyncIterator[None]:
        """Hold (workspace, key) while one request executes; others with it wait their turn."""
        slot = (workspace_id, key)
        while (waiting := self._in_flight.get(slot)) is not None:
            await asyncio.shield(waiting)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._in_flight[slot] = done
        try:
            yield
        finally:
            del self._in_flight[slot]
            done.set_result(None)

    def lookup(self, workspace_id: str, key: str, print_: str) -> dict[str, Any] | None:
        """The kept answer to replay, None to execute; 409 for a key reused on another request."""
        entry = self._world().kept(workspace_id, key)
        if entry is None or entry["expiresAt"] <= self._clock.timestamp():
            return None
        if entry["fingerprint"] != print_:
            raise conflict(
                "this Idempotency-Key was used for a different request",
                reason="idempotency_key_reused",
            )
        return entry

    def remember(self, workspace_id: str, key: str, print_: str, status: int, body: bytes) -> None:
        """Keep a success's answer (call inside the request's transaction)."""
        expires = self._clock.timestamp() + self._retention
        self._world().keep(
            workspace_id,
            key,
            {"fingerprint": print_, "status": status, "body": body.decode(), "expiresAt": expires},
        )
        self._due(expires)

    def sweep(self) -> float | None:
        """Forget expired entries; answers when the next one expires (or None)."""
        return self._world().sweep_kept(self._clock.timestamp())


@ticker("idempotency-sweep")
def _sweep(rt: KeepsAnswers, now: datetime) -> float | None:
    return rt.idempotency.sweep()
