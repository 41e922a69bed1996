"""Sandboxes: isolated worlds inside one mock, so parallel test runs never meet.

``POST /_mock/sandboxes`` makes one: a :class:`~mockserver.runtime.Runtime` of its own, built
from the fixtures (every workspace, or the one named), with new keys for every fixture key,
its own clock (manual unless asked otherwise, so time moves only when that sandbox's
``/_mock/clock/advance`` says), and its own records, credits, governance, jobs, deliveries,
rate-limit buckets, cursors (signed with its own key), idempotency keys, faults and journal.
Only the parsed contract, its compiled validators, the data key and the seams (seams.py)
are shared.

A sandbox key carries its sandbox's id (``sk_sbx_<id>_<secret>``), so a request finds its
sandbox without a lookup table; within the sandbox the key is checked (hashed) like any
other. A key of an ended sandbox answers ``401``. A sandbox that sees no call (API or control)
for ``ttl`` seconds of wall time ends; at most ``limit`` live at once.

Control-plane calls take ``?sandbox=<id>`` (``components/parameters/Sandbox``); without it
they act on the default world.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mockserver.platform.clock import parse_time
from mockserver.platform.envelope import iso_z
from mockserver.platform.errors import ApiError, not_found
from mockserver.runtime import Runtime

KEY_PREFIX = "sk_sbx_"
ID_PREFIX = "sbx_"
ID_HEX = 12  # hex digits of a sandbox id


@dataclass
class Sandbox:
    id: str
    runtime: Runtime
    keys: list[dict[str, str]]
    workspace: str | None
    used: float
    created: float = field(default_factory=time.time)

    def view(self, ttl: float, now: float) -> dict[str, Any]:
        """The sandbox as the control plane shows it (with its keys: it is a test fixture)."""
        idle = now - self.used
        return {
            "id": self.id,
            "workspace": self.workspace,
            "keys": self.keys,
            "clock": {"now": iso_z(self.runtime.clock.now()), "mode": self.runtime.clock.mode},
            "createdAt": iso_z_epoch(self.created),
            "expiresInSeconds": max(0, round(ttl - idle)),
        }


def iso_z_epoch(moment: float) -> str:
    return iso_z(datetime.fromtimestamp(moment, UTC))


def sandbox_id_of_key(token: str) -> str | None:
    """The sandbox a bearer token names, or None for a key of the default world."""
    if not token.startswith(KEY_PREFIX) or len(token) < len(KEY_PREFIX) + ID_HEX:
        return None
    return ID_PREFIX + token[len(KEY_PREFIX) : len(KEY_PREFIX) + ID_HEX]


class SandboxManager:
    """The live sandboxes of one mock, made from the default runtime's fixtures."""

    def __init__(self, parent: Runtime, *, ttl: float, limit: int) -> None:
        self.parent = parent
        self.ttl = ttl
        self.limit = limit
        self.now: Callable[[], float] = time.monotonic  # wall time, for idleness
        self._live: dict[str, Sandbox] = {}

    # -- lookup ------------------------------------------------------------------------------

    def get(self, sandbox_id: str) -> Sandbox:
        found = self._live.get(sandbox_id)
        if found is None:
            raise not_found(f"sandbox {sandbox_id!r} (it may have ended or expired)")
        found.used = self.now()
        return found

    def runtime_for_token(self, token: str) -> Runtime | None:
        """The runtime a sandbox key belongs to; None for other keys (and ended sandboxes)."""
        sandbox_id = sandbox_id_of_key(token)
        found = self._live.get(sandbox_id) if sandbox_id else None
        if found is None:
            return None
        found.used = self.now()
        return found.runtime

    def all(self) -> list[Sandbox]:
        return list(self._live.values())

    def view(self, sandbox: Sandbox) -> dict[str, Any]:
        return sandbox.view(self.ttl, self.now())

    def runtimes(self) -> list[Runtime]:
        return [sandbox.runtime for sandbox in self._live.values()]

    # -- lifecycle ---------------------------------------------------------------------------

    def create(
        self,
        *,
        workspace: str | None = None,
        clock: str = "manual",
        start: str | None = None,
        seed: int | None = None,
    ) -> Sandbox:
        self.expire()
        if len(self._live) >= self.limit:
            raise ApiError(
                "conflict",
                f"{self.limit} sandboxes are live; end one (DELETE /_mock/sandboxes/{{id}}) "
                "or let idle ones expire",
                details={"reason": "sandbox_limit", "limit": self.limit},
            )
        sandbox_id = ID_PREFIX + secrets.token_hex(ID_HEX // 2)
        fixtures, keys = self._fixtures(sandbox_id, workspace)
        parent = self.parent
        settings = dataclasses.replace(
            parent.settings, clock=clock, seed=parent.settings.seed if seed is None else seed
        )
        runtime = Runtime(
            settings,
            parent.contract,
            fixtures=fixtures,
            validators=parent.validators,
            secrets=parent.secrets,
            start=parse_time(start) if start else None,
            seams=parent.seams,
        )
        runtime.delivery.start()
        if clock == "real":
            runtime.scheduler.tick(force=True)
        sandbox = Sandbox(sandbox_id, runtime, keys, workspace, used=self.now())
        self._live[sandbox_id] = sandbox
        return sandbox

    def _fixtures(
        self, sandbox_id: str, workspace: str | None
    ) -> tuple[dict[str, Any], list[dict[str, str]]]:
        """The parent's fixtures (one workspace, if named) with a new key for every key."""
        fixtures = copy.deepcopy(self.parent.fixtures)
        if workspace is not None:
            chosen = [w for w in fixtures["workspaces"] if w["slug"] == workspace]
            if not chosen:
                raise not_found(f"fixture workspace {workspace!r}")
            fixtures["workspaces"] = chosen
        keys = []
        for spec in fixtures["workspaces"]:
            for key in spec.get("keys", []):
                key["key"] = KEY_PREFIX + sandbox_id[len(ID_PREFIX) :] + "_" + secrets.token_hex(12)
                keys.append(
                    {
                        "key": key["key"],
                        "workspace": spec["slug"],
                        "member": key["member"],
                        "role": spec["members"][key["member"]]["role"],
                    }
                )
        return fixtures, keys

    async def end(self, sandbox_id: str) -> None:
        sandbox = self._live.pop(sandbox_id, None)
        if sandbox is None:
            raise not_found(f"sandbox {sandbox_id!r}")
        await sandbox.runtime.delivery.stop()

    def expire(self) -> list[str]:
        """End the sandboxes idle for longer than the ttl; answers their ids."""
        now = self.now()
        ended = [s.id for s in self._live.values() if now - s.used > self.ttl]
        for sandbox_id in ended:
            sandbox = self._live.pop(sandbox_id)
            asyncio.get_running_loop().create_task(sandbox.runtime.delivery.stop())
        return ended

    async def close(self) -> None:
        for sandbox_id in list(self._live):
            await self.end(sandbox_id)
