"""Defects of state rules: the workspace boundary (``check_workspace_slug``, ``find_record``),
idempotency (``find_replay``; ``hold_key`` with a slow ``run_operation``: overlapping retries
executed), credits (``capability_available``, ``set_balance``, ``quote_catalogue``; with
``finish_response`` a refused call charged; with ``run_operation`` a charge lost when paid calls
overlap) and keys (``authorize``, ``revoke_key``, ``rate_identity``; with ``finish_response`` a
person's other key served during a 429's wait)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from starlette.responses import Response

from mockserver.call import Call
from mockserver.contract import Operation
from mockserver.platform.auth import Caller, require_spend
from mockserver.platform.idempotency import Idempotency
from mockserver.registry import Binding
from mockserver.seams import Seams
from mockserver.world import World
from tests.defects.defect import Defect

Record = dict[str, Any]


def _workspace_slug_ignored(seams: Seams) -> Seams:
    def check_workspace_slug(caller: Caller, slug: str | None) -> None:
        return None

    return replace(seams, check_workspace_slug=check_workspace_slug)


def _cross_workspace_readable(seams: Seams) -> Seams:
    previous = seams.find_record

    def find_record(world: World, workspace_id: str, name: str, record_id: str) -> Record | None:
        found = previous(world, workspace_id, name, record_id)
        for other in world.workspaces:
            found = found or previous(world, other, name, record_id)
        return found

    return replace(seams, find_record=find_record)


def _replay_creates_again(seams: Seams) -> Seams:
    def find_replay(call: Call, key: str, print_: str) -> Record | None:
        return None  # every retry executes again

    return replace(seams, find_replay=find_replay)


def _replay_charges_twice(seams: Seams) -> Seams:
    previous = seams.find_replay

    def find_replay(call: Call, key: str, print_: str) -> Record | None:
        entry = previous(call, key, print_)
        if entry is not None:
            cost = json.loads(entry["body"]).get("cost")
            if cost:
                call.workspace["credits"] -= cost["credits"]
        return entry

    return replace(seams, find_replay=find_replay)


def _unavailable_capability_served(seams: Seams) -> Seams:
    def capability_available(capability: Record) -> bool:
        return True

    return replace(seams, capability_available=capability_available)


def _budget_cap_lifted_by_top_up(seams: Seams) -> Seams:
    previous = seams.set_balance

    def set_balance(workspace: Record, balance: int) -> None:
        previous(workspace, balance)
        for member in workspace["members"].values():
            member["budgetCapped"] = False

    return replace(seams, set_balance=set_balance)


def _unowned_project_filed(seams: Seams) -> Seams:
    previous = seams.find_record

    def find_record(world: World, workspace_id: str, name: str, record_id: str) -> Record | None:
        found = previous(world, workspace_id, name, record_id)
        if found is None and name == "projects":  # filed under the workspace's first project
            found = next(iter(world.records(workspace_id, "projects")), None)
        return found

    return replace(seams, find_record=find_record)


def _capabilities_billed(seams: Seams) -> Seams:
    previous = seams.quote_catalogue

    def quote_catalogue(world: World, workspace: Record) -> Record:
        workspace["credits"] = max(0, workspace["credits"] - 1)  # a credit per read
        return previous(world, workspace)

    return replace(seams, quote_catalogue=quote_catalogue)


def _usage_needs_spend(seams: Seams) -> Seams:
    previous = seams.authorize

    def authorize(caller: Caller, op: Operation, writes: bool) -> None:
        previous(caller, op, writes)
        if op.operation_id == "getUsage":
            require_spend(caller)

    return replace(seams, authorize=authorize)


def _revocation_ignored(seams: Seams) -> Seams:
    def revoke_key(key: Record) -> None:
        return None  # the key keeps working

    return replace(seams, revoke_key=revoke_key)


def _bucket_per_key(seams: Seams) -> Seams:
    def rate_identity(caller: Caller) -> str:
        return caller.key_id

    return replace(seams, rate_identity=rate_identity)


def _other_key_not_paused(seams: Seams) -> Seams:
    """A person's keys count in one bucket until one of them is refused; from then on only that
    key waits: the person's other keys are served from buckets of their own (each request's
    caller is told by ``rate_identity`` and its 429 seen by ``finish_response``, the requests
    taken one at a time)."""
    previous_identity, previous_finish = seams.rate_identity, seams.finish_response
    refused: dict[str, str] = {}  # person -> the key that earned their last 429
    current: list[Caller | None] = [None]

    def rate_identity(caller: Caller) -> str:
        current[0] = caller
        person = previous_identity(caller)
        held = refused.get(person)
        return person if held in (None, caller.key_id) else f"{person}+{caller.key_id}"

    def finish_response(op: Operation | None, response: Response) -> Response:
        caller, current[0] = current[0], None
        if caller is not None:
            person = previous_identity(caller)
            if response.status_code == 429:
                refused[person] = caller.key_id
            elif refused.get(person) == caller.key_id:  # its wait is over
                del refused[person]
        return previous_finish(op, response)

    return replace(seams, rate_identity=rate_identity, finish_response=finish_response)


#: How long a slow deployment takes before it runs an operation: overlapping calls all reach
#: that point before the first of them has changed anything.
SLOW_SECONDS = 0.05


def _slow(seams: Seams) -> Seams:
    previous = seams.run_operation

    async def run_operation(binding: Binding, call: Call) -> Any:
        await asyncio.sleep(SLOW_SECONDS)
        return await previous(binding, call)

    return replace(seams, run_operation=run_operation)


def _overlapping_retries_execute(seams: Seams) -> Seams:
    """Keys are looked up when a request arrives and kept when it is answered, and nothing
    holds a key in between: retries that overlap the first call all execute (sequential
    retries still replay)."""

    @contextlib.asynccontextmanager
    async def hold_key(held: Idempotency, workspace_id: str, key: str) -> AsyncIterator[None]:
        yield

    return _slow(replace(seams, hold_key=hold_key))


def _overlapping_charges_lost(seams: Seams) -> Seams:
    """The balance is read when a call arrives and written, less the call's own charge, when it
    is answered: of paid calls that overlap, only the last write counts (calls one after
    another are charged right)."""
    previous = seams.run_operation

    async def run_operation(binding: Binding, call: Call) -> Any:
        workspace = call.workspace
        read = workspace["credits"]
        await asyncio.sleep(SLOW_SECONDS)
        before = workspace["credits"]
        result = await previous(binding, call)
        workspace["credits"] = read - (before - workspace["credits"])
        return result

    return replace(seams, run_operation=run_operation)


REFUSAL_FEE = 10  # credits a refused paid call costs under refused-call-charged


def _refused_call_charged(seams: Seams) -> Seams:
    """A paid call refused with a 4xx is charged all the same: the fee is taken from the balance
    before the next ``GET /v1/capabilities`` quotes it."""
    refused: list[int] = [0]
    previous_finish, previous_quote = seams.finish_response, seams.quote_catalogue

    def finish(op: Operation | None, response: Response) -> Response:
        response = previous_finish(op, response)
        paid = op is not None and op.method != "GET" and "402" in op.definition.get("responses", {})
        if paid and 400 <= response.status_code < 500:
            refused[0] += 1
        return response

    def quote_catalogue(world: World, workspace: Record) -> Record:
        workspace["credits"] -= REFUSAL_FEE * refused[0]
        refused[0] = 0
        return previous_quote(world, workspace)

    return replace(seams, finish_response=finish, quote_catalogue=quote_catalogue)


DEFECTS: dict[str, Defect] = {
    "workspace-slug-ignored": Defect(
        "a disagreeing X-Workspace-Slug is refused", _workspace_slug_ignored
    ),
    "cross-workspace-readable": Defect(
        "ids of other workspaces answer 404 not_found", _cross_workspace_readable
    ),
    "replay-creates-again": Defect(
        "a retry with the same key answers the same resource", _replay_creates_again
    ),
    "replay-charges-twice": Defect(
        "an idempotent replay is not charged again", _replay_charges_twice
    ),
    "unavailable-capability-served": Defect(
        "an unavailable capability answers 503", _unavailable_capability_served
    ),
    "budget-cap-lifted-by-top-up": Defect(
        "budget_capped does not clear with a top-up", _budget_cap_lifted_by_top_up
    ),
    "unowned-project-filed": Defect(
        "a project the workspace does not own answers not_found; the work is never filed elsewhere",
        _unowned_project_filed,
    ),
    "capabilities-billed": Defect(
        "GET /v1/capabilities is free, never billed", _capabilities_billed
    ),
    "usage-needs-spend": Defect(
        "reading usage never needs a key that can spend", _usage_needs_spend
    ),
    "revocation-ignored": Defect(
        "revoking a key takes effect within 30 seconds", _revocation_ignored
    ),
    "bucket-per-key": Defect("all keys of one person share the rate-limit bucket", _bucket_per_key),
    "other-key-not-paused": Defect(
        "a 429 earned with one key of a person pauses their other keys during Retry-After",
        _other_key_not_paused,
    ),
    "refused-call-charged": Defect(
        "nothing is charged for a paid call that was refused", _refused_call_charged
    ),
    "overlapping-retries-execute": Defect(
        "an Idempotency-Key identifies the logical operation: overlapping retries execute once",
        _overlapping_retries_execute,
    ),
    "overlapping-charges-lost": Defect(
        "the workspace is billed every call: paid calls at once are all charged",
        _overlapping_charges_lost,
    ),
}
