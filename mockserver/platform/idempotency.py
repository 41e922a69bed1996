"""Idempotency keys: one logical operation, executed once, replayed on retry.

- Scope: the workspace and the key. The same key with the same request (operation, path and
  canonical JSON body) replays the first answer, status and body, with no second resource and
  no second charge.
- The same key with a different request answers ``409 conflict``, ``details.reason``
  ``idempotency_key_reused`` (inferred).
- Only successes are kept: a failed call does not hold its key.
- Concurrent requests with one key execute once: later ones wait for the first to finish.
- Kept for ``x-limits.idempotencyKeyRetentionSeconds`` on the mock clock (inferred).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from mockserver.platform.clock import Clock
from mockserver.platform.envelope import Reply
from mockserver.platform.errors import conflict


def fingerprint(operation_id: str, path_params: dict[str, Any], body: Any) -> str:
    canonical = json.dumps([operation_id, path_params, body], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class Idempotency:
    def __init__(self, store: Callable[[], dict[str, Any]], clock: Clock, retention: int) -> None:
        self._store = store  # the world's "idempotency" section (replaced with the world)
        self._clock = clock
        self._retention = retention
        self._in_flight: dict[tuple[str, str], asyncio.Future[None]] = {}

    def _lookup(self, workspace_id: str, key: str) -> dict[str, Any] | None:
        entries = self._store().get(workspace_id, {})
        entry = entries.get(key)
        if entry and entry["expiresAt"] <= self._clock.timestamp():
            del entries[key]
            return None
        return entry

    async def run(
        self,
        workspace_id: str,
        key: str,
        print_: str,
        execute: Callable[[], Awaitable[Reply]],
    ) -> tuple[Reply, bool]:
        """Execute once per (workspace, key); returns the reply and whether it was a replay."""
        slot = (workspace_id, key)
        while True:
            entry = self._lookup(workspace_id, key)
            if entry is not None:
                if entry["fingerprint"] != print_:
                    raise conflict(
                        "this Idempotency-Key was used for a different request",
                        reason="idempotency_key_reused",
                    )
                return Reply(entry["status"], entry["body"]), True
            waiting = self._in_flight.get(slot)
            if waiting is None:
                break
            await asyncio.shield(waiting)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._in_flight[slot] = done
        try:
            reply = await execute()
            if 200 <= reply.status < 300:
                self._store().setdefault(workspace_id, {})[key] = {
                    "fingerprint": print_,
                    "status": reply.status,
                    "body": reply.body,
                    "expiresAt": self._clock.timestamp() + self._retention,
                }
            return reply, False
        finally:
            del self._in_flight[slot]
            done.set_result(None)
