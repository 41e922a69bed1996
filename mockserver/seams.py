"""The named seams of one mock: the functions the product calls where it decides a rule of the
contract, gathered in one value so that an app can be built with some of them replaced.

Every field's default is the product's own behaviour (a plain function from the module that owns
the rule, or an identity hook). ``create_app(settings, seams=...)`` gives them to the app; every
runtime (the default one and each sandbox's) reaches them as ``rt.seams``; the cursor codec and
the world are constructed with the ones they call. A seam call is one attribute lookup and a
call: nothing is looked up by name per request.

Only tests replace seams (with :func:`dataclasses.replace`), to make a mock that breaks one
rule on purpose and so prove the conformance suite able to notice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from mockserver.areas.autopilots import state as autopilots
from mockserver.areas.generation import rules as generation
from mockserver.areas.review import wordcursor
from mockserver.platform import auth, credits, cursors, delivery, idempotency, ratelimit
from mockserver.platform.envelope import public
from mockserver.registry import Binding, run_handler
from mockserver.world import World, marked_available, own_record

if TYPE_CHECKING:
    from mockserver.call import Call, Running
    from mockserver.contract import Operation

Query = list[tuple[str, str]]
Headers = dict[str, str]
Record = dict[str, Any]


def finished(op: Operation | None, response: Response) -> Response:
    """A finished response leaves as it is."""
    return response


def as_sent(op: Operation, query: Query, headers: Headers, body: Any) -> tuple[Query, Headers, Any]:
    """A request is validated as it was sent."""
    return query, headers, body


def open_to_all(op: Operation, headers: Mapping[str, str]) -> None:
    """A public operation (the contract itself) needs no key."""


def only_done(status: str) -> bool:
    """Only a ``done`` job carries artifacts: a ``qa_failed`` one has none, so no media is ever
    published from it (the rule of the jobs area, areas/jobs/engine.py)."""
    return status == "done"


def subscription_view(rt: Running, subscription: Record) -> Record:
    """A webhook subscription as the API shows it: its public fields, never its secret."""
    return public(subscription)


@dataclass(frozen=True)
class Seams:
    # -- the request pipeline (dispatch.py) ---------------------------------------------------
    #: Every finished response (the API's, errors included) passes through here last, after
    #: ``x-request-id`` and the rate-limit headers; ``op`` is None for an unknown path.
    finish_response: Callable[[Operation | None, Response], Response] = finished
    #: The query, headers and parsed body of an authenticated request, before validation.
    prepare_request: Callable[[Operation, Query, Headers, Any], tuple[Query, Headers, Any]] = (
        as_sent
    )
    #: A public operation's admission (raises an ApiError to refuse it).
    admit_public: Callable[[Operation, Mapping[str, str]], None] = open_to_all
    #: A public operation's count toward the rate limit (its state, or None: never counted).
    count_public: Callable[[Running, Operation, Mapping[str, str]], ratelimit.RateState | None] = (
        ratelimit.never_counted
    )
    #: The rate-limit bucket an authenticated request counts in (the person behind the key).
    rate_identity: Callable[[auth.Caller], str] = auth.rate_identity
    #: The key's role against the operation (raises 403 ``forbidden``); ``True``: it writes.
    authorize: Callable[[auth.Caller, Operation, bool], None] = auth.authorize
    #: The control plane's revocation of a key (its stored record).
    revoke_key: Callable[[Record], None] = auth.revoke
    #: The ``X-Workspace-Slug`` rule: one that disagrees with the key's workspace is refused.
    check_workspace_slug: Callable[[auth.Caller, str | None], None] = auth.check_workspace_slug
    #: The kept answer a request with an Idempotency-Key replays, or None to execute it.
    find_replay: Callable[[Call, str, str], Record | None] = idempotency.find_replay
    #: A request with an Idempotency-Key holds (workspace, key) while it executes: another with
    #: the same key waits its turn, then replays (concurrent retries execute once).
    hold_key: Callable[[idempotency.Idempotency, str, str], AbstractAsyncContextManager[None]] = (
        idempotency.Idempotency.slot
    )
    #: The operation's handler run on the call, inside its transaction.
    run_operation: Callable[[Binding, Call], Awaitable[Any]] = run_handler
    # -- records, paging and streams ----------------------------------------------------------
    #: The world's record lookup: which records a workspace sees.
    find_record: Callable[[World, str, str, str], Record | None] = own_record
    #: The cursor codec's verification: a cursor token to its position, or 400.
    open_cursor: cursors.OpenCursor = cursors.open_cursor
    #: A cursor page's ``nextCursor`` and ``hasMore``.
    next_page: Callable[[cursors.Page, Callable[[int], str]], tuple[str | None, bool]] = (
        cursors.next_page
    )
    #: An ordered stream's ``nextAfter`` from the page's events and the ``after`` asked.
    stream_next_after: Callable[[list[Record], int], int] = cursors.stream_next_after
    # -- credits ------------------------------------------------------------------------------
    #: Whether a capability of the price table is available now.
    capability_available: Callable[[Record], bool] = marked_available
    #: The control plane's setting of a workspace's balance (a top-up).
    set_balance: Callable[[Record, int], None] = credits.set_balance
    #: What ``GET /v1/capabilities`` answers (world, the caller's workspace): free.
    quote_catalogue: Callable[[World, Record], Record] = credits.catalogue
    # -- webhooks -----------------------------------------------------------------------------
    #: A webhook subscription as the API shows it.
    show_subscription: Callable[[Running, Record], Record] = subscription_view
    #: The body and headers of one delivery attempt (record, opened secret, sent at, number).
    delivery_message: Callable[[Record, str, datetime, int], tuple[bytes, Headers]] = (
        delivery.signed_delivery
    )
    #: Whether a delivery answered with this (non-2xx) status is retried.
    retry_status: Callable[[int], bool] = delivery.retryable
    #: Whether a job's event goes to webhook subscriptions (job record, event name).
    for_subscriptions: Callable[[Record, str], bool] = delivery.for_subscriptions
    # -- jobs ---------------------------------------------------------------------------------
    #: Whether a job ending in this terminal status carries its artifacts.
    carries_artifacts: Callable[[str], bool] = only_done
    # -- workflows ----------------------------------------------------------------------------
    #: A paused autopilot's refusal of manual runs, approvals and retries (409 conflict).
    refuse_paused_autopilot: Callable[[Record], None] = autopilots.refuse_if_paused
    #: An approval's ``expectedGeneration`` held to the proposal's generation (409 if stale).
    check_expected_generation: Callable[[int | float, int], None] = (
        generation.check_expected_generation
    )
    #: A remix's capability items (url sources, transcript sources, outputFormat).
    remix_work_items: Callable[[int, int, str], list[tuple[str, int]]] = generation.remix_items
    #: A word cursor's composition version held to the current one (409 ``stale_cursor``).
    refuse_stale_word_cursor: Callable[[int, int], None] = wordcursor.refuse_stale

    def world(self, data: dict[str, Any], *, seed: int | None) -> World:
        """A world over ``data`` that finds records and judges capabilities with these seams."""
        return World(
            data,
            seed=seed,
            find_record=self.find_record,
            capability_available=self.capability_available,
        )
