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

import contextlib
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
from mockserver.platform.transactions import plain
from mockserver.runtime import Runtime
from mockserver.store.sql import SqlStore

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
    """The live sandboxes of one mock, made from the default runtime's fixtures.

    With a SQL store (store/), the sandboxes are the store's: a registry row each (its spec,
    keys sealed) and a world of its own, so every process that shares the store serves every
    sandbox (it builds the sandbox's runtime the first time a request names it), and one that
    ends or expires is gone for all of them. Without one, they live in this process.
    """

    def __init__(
        self, parent: Runtime, *, ttl: float, limit: int, store: SqlStore | None = None
    ) -> None:
        self.parent = parent
        self.ttl = ttl
        self.limit = limit
        self.store = store
        self.now: Callable[[], float] = time.time  # wall time, for idleness
        self._live: dict[str, Sandbox] = {}
        self._swept = 0.0

    # -- lookup ------------------------------------------------------------------------------

    async def get(self, sandbox_id: str) -> Sandbox:
        found = await self._find(sandbox_id)
        if found is None:
            raise not_found(f"sandbox {sandbox_id!r} (it may have ended or expired)")
        return found

    async def runtime_for_token(self, token: str) -> Runtime | None:
        """The runtime a sandbox key belongs to; None for other keys (and ended sandboxes)."""
        sandbox_id = sandbox_id_of_key(token)
        found = await self._find(sandbox_id) if sandbox_id else None
        return found.runtime if found is not None else None

    async def _find(self, sandbox_id: str) -> Sandbox | None:
        """A live sandbox, marked used; with a store, as the registry says now."""
        now = self.now()
        found = self._live.get(sandbox_id)
        if self.store is None:
            if found is not None:
                found.used = now
            return found
        touch = found is None or now - found.used >= 1.0  # a write at most once a second
        row = self.store.sandbox(sandbox_id, now if touch else None)
        if row is None:
            if found is not None:  # ended by another process
                self._live.pop(sandbox_id, None)
                await found.runtime.delivery.stop()
            return None
        if found is None:
            found = self._adopt(sandbox_id, *row)
        found.used = now
        return found

    async def all(self) -> list[Sandbox]:
        if self.store is None:
            return list(self._live.values())
        found = []
        for sandbox_id, _used in self.store.sandboxes():
            sandbox = self._live.get(sandbox_id) or await self._find(sandbox_id)
            if sandbox is not None:
                found.append(sandbox)
        return found

    def view(self, sandbox: Sandbox) -> dict[str, Any]:
        return sandbox.view(self.ttl, self.now())

    def runtimes(self) -> list[Runtime]:
        """The sandbox runtimes this process holds."""
        return [sandbox.runtime for sandbox in self._live.values()]

    # -- lifecycle ---------------------------------------------------------------------------

    async def create(
        self,
        *,
        workspace: str | None = None,
        clock: str = "manual",
        start: str | None = None,
        seed: int | None = None,
    ) -> Sandbox:
        await self.expire()
        live = len(self.store.sandboxes()) if self.store is not None else len(self._live)
        if live >= self.limit:
            raise ApiError(
                "conflict",
                f"{self.limit} sandboxes are live; end one (DELETE /_mock/sandboxes/{{id}}) "
                "or let idle ones expire",
                details={"reason": "sandbox_limit", "limit": self.limit},
            )
        sandbox_id = ID_PREFIX + secrets.token_hex(ID_HEX // 2)
        keys = self._new_keys(sandbox_id, workspace)
        spec = {"workspace": workspace, "clock": clock, "start": start, "seed": seed}
        now = self.now()
        sandbox = self._build(sandbox_id, spec, keys, now)
        if self.store is not None:
            sealed = [{**key, "key": self.parent.secrets.seal(key["key"])} for key in keys]
            self.store.add_sandbox(sandbox_id, {**spec, "keys": sealed}, now)
        if clock == "real":
            sandbox.runtime.scheduler.tick(force=True)
        return sandbox

    def _adopt(self, sandbox_id: str, spec: dict[str, Any], created: float) -> Sandbox:
        """A sandbox another process made: its runtime here, over its world in the store."""
        keys = [{**key, "key": self.parent.secrets.open(key["key"]) or ""} for key in spec["keys"]]
        return self._build(sandbox_id, spec, keys, created)

    def _build(
        self, sandbox_id: str, spec: dict[str, Any], keys: list[dict[str, str]], created: float
    ) -> Sandbox:
        parent = self.parent
        seed = spec["seed"]
        settings = dataclasses.replace(
            parent.settings,
            clock=spec["clock"],
            seed=parent.settings.seed if seed is None else seed,
        )
        runtime = Runtime(
            settings,
            parent.contract,
            fixtures=self._fixtures(spec["workspace"], keys),
            validators=parent.validators,
            secrets=parent.secrets,
            start=parse_time(spec["start"]) if spec["start"] else None,
            seams=parent.seams,
            store=self.store.world(sandbox_id) if self.store is not None else None,
        )
        runtime.delivery.start()
        sandbox = Sandbox(sandbox_id, runtime, keys, spec["workspace"], used=self.now())
        sandbox.created = created
        self._live[sandbox_id] = sandbox
        return sandbox

    def _new_keys(self, sandbox_id: str, workspace: str | None) -> list[dict[str, str]]:
        """A new key for every fixture key of the sandbox's workspaces."""
        keys = []
        for spec in self._workspaces(workspace):
            for key in spec.get("keys", []):
                keys.append(
                    {
                        "key": KEY_PREFIX
                        + sandbox_id[len(ID_PREFIX) :]
                        + "_"
                        + secrets.token_hex(12),
                        "workspace": spec["slug"],
                        "member": key["member"],
                        "role": spec["members"][key["member"]]["role"],
                    }
                )
        return keys

    def _workspaces(self, workspace: str | None) -> list[dict[str, Any]]:
        workspaces = self.parent.fixtures["workspaces"]
        if workspace is None:
            return list(workspaces)
        chosen = [w for w in workspaces if w["slug"] == workspace]
        if not chosen:
            raise not_found(f"fixture workspace {workspace!r}")
        return chosen

    def _fixtures(self, workspace: str | None, keys: list[dict[str, str]]) -> dict[str, Any]:
        """The parent's fixtures (one workspace, if named) with the sandbox's keys in place
        of theirs, in the same order."""
        fixtures = plain(self.parent.fixtures)
        fixtures["workspaces"] = plain(self._workspaces(workspace))
        given = iter(keys)
        for spec in fixtures["workspaces"]:
            for key in spec.get("keys", []):
                key["key"] = next(given)["key"]
        return fixtures

    async def end(self, sandbox_id: str) -> None:
        sandbox = self._live.pop(sandbox_id, None)
        ended = sandbox is not None
        if self.store is not None:
            ended = self.store.end_sandbox(sandbox_id)
        if sandbox is not None:
            await sandbox.runtime.delivery.stop()
        if not ended:
            raise not_found(f"sandbox {sandbox_id!r}")

    def may_expire(self) -> bool:
        """Whether :meth:`expire` may find anything to end (cheap: called per request)."""
        return bool(self._live) or (self.store is not None and self.now() - self._swept >= 1.0)

    async def expire(self) -> list[str]:
        """End the sandboxes idle for longer than the ttl; answers their ids (with a store,
        looked at no more than once a second)."""
        now = self.now()
        if self.store is None:
            ended = [s.id for s in self._live.values() if now - s.used > self.ttl]
        else:
            if now - self._swept < 1.0:
                return []
            self._swept = now
            ended = [i for i, used in self.store.sandboxes() if now - used > self.ttl]
        for sandbox_id in ended:
            with contextlib.suppress(ApiError):
                await self.end(sandbox_id)
        return ended

    async def close(self) -> None:
        """Stop this process's sandbox runtimes (with a store, the sandboxes live on)."""
        for sandbox_id in list(self._live):
            if self.store is None:
                await self.end(sandbox_id)
            else:
                await self._live.pop(sandbox_id).runtime.delivery.stop()
