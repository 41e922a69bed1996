"""The delivery worker: the background task that attempts each delivery record when it falls due.

- An attempt signs ``<timestamp>.<body>`` (signing.py), checks the url again against the
  address rules and connects only to the address it checked (urlpolicy.py), never follows a
  redirect, and gives up after ``x-limits.webhookDelivery.attemptTimeoutSeconds``.
- Any 2xx is success. Network errors, timeouts, 408, 429 and 5xx are retried after
  ``backoffSeconds[n]`` (spread by ``jitterRatio``, deterministically per event) or, on a 429
  with ``Retry-After``, after exactly that long; other 4xx and every 3xx end the delivery.
  ``attempts`` bounds the tries. ``eventId`` never changes across retries and replays.
- Attempts run on the mock clock (due when the clock reaches them) but in a background task:
  a slow or dead receiver never holds up request handling.
- A ``mockserver listen`` subscription (``_listener``, made by ``POST /_mock/listeners``) and its
  deliveries may reach loopback (only loopback, plain http allowed) without
  ``--allow-private-callbacks``; every other delivery is held to the rules above.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import ipaddress
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mockserver.platform import urlpolicy
from mockserver.platform.delivery.records import SUBSCRIPTIONS
from mockserver.platform.envelope import iso_z
from mockserver.platform.tls import tls_context
from mockserver.platform.transactions import UnitOfWork, plain

if TYPE_CHECKING:
    from mockserver.platform.clock import Clock
    from mockserver.world import World

log = logging.getLogger("mockserver.delivery")
RETRYABLE_STATUSES = frozenset({408, 429})


def check_listener_address(url: str, ip_text: str) -> None:
    """A listener's delivery goes to loopback only (``mockserver listen`` runs beside the mock)."""
    try:
        ip = ipaddress.ip_address(ip_text)
    except ValueError:
        raise urlpolicy.refusal(url, "invalid_url", detail="unreadable address") from None
    embedded = urlpolicy.embedded_ipv4(ip) if isinstance(ip, ipaddress.IPv6Address) else None
    if not (embedded or ip).is_loopback:
        raise urlpolicy.UrlRefused(
            url, "not_loopback", f"a listener delivers to loopback only, not {ip}"
        )


async def check_listener_url(url: str) -> urlpolicy.ResolvedTarget:
    """A listener's url: http(s), resolving only to loopback addresses."""
    resolved = await urlpolicy.resolve_and_check(url, allow_private=True)
    for ip in resolved.addresses:
        check_listener_address(url, str(ip))
    return resolved


def retryable(status: int) -> bool:
    """An answer to retry: 408, 429 and 5xx (other 4xx and every 3xx end the delivery)."""
    return status in RETRYABLE_STATUSES or status >= 500


def jitter(event_id: str, attempt: int, ratio: float) -> float:
    """A deterministic spread in [-ratio, +ratio] for this event's n-th retry."""
    digest = hashlib.sha256(f"{event_id}:{attempt}".encode()).digest()
    return (int.from_bytes(digest[:4], "big") / 0xFFFFFFFF * 2 - 1) * ratio


TICK = 1.0  # seconds between two looks of the delivery loop at a real clock or a shared store


@dataclass
class Attempt:
    """One attempt of a delivery, as it was made: what it was signed with and what came back
    (a status, or an error; ``permanent`` when it must not be tried again)."""

    number: int
    sent_at: datetime
    status: int | None = None
    error: str | None = None
    retry_after: int | None = None
    permanent: bool = False
    latency: float = 0.0  # ms
    signed: dict[str, str | None] = field(
        default_factory=lambda: {"signature": None, "timestamp": None, "bodySha256": None}
    )


Record = dict[str, Any]


@dataclass(frozen=True)
class Attempting:
    """How attempts are made and judged: the contract's ``x-limits.webhookDelivery``
    (``policy``); the message a delivery carries and the statuses retried (seams.py:
    ``delivery_message``, ``retry_status``); what opens a delivery's sealed secret; whether
    private addresses may be reached (``--allow-private-callbacks``); the claim lease
    (``--delivery-lease``; None: the attempt timeout plus 5 s)."""

    policy: Mapping[str, Any]
    message: Callable[[Record, str, datetime, int], tuple[bytes, dict[str, str]]]
    retry_status: Callable[[int], bool]
    open_secret: Callable[[str], str | None]
    allow_private: bool = False
    lease: float | None = None


class DeliveryWorker:
    """The background task that makes delivery attempts when they fall due.

    It reads the time from ``clock`` and the deliveries from ``world()`` (a reset or restore
    replaces the world); it changes them only in ``unit_of_work`` (one transaction, retried on
    the store), after ``catch_up`` (what other processes sharing the store wrote). With a store
    (``stored``), the loop looks every second, as on the real clock: other processes'
    deliveries and lapsed claims move no clock of this one.
    """

    def __init__(
        self,
        attempting: Attempting,
        clock: Clock,
        world: Callable[[], World],
        unit_of_work: UnitOfWork,
        catch_up: Callable[[], None],
        *,
        stored: bool = False,
    ) -> None:
        self.attempting = attempting
        self.policy = attempting.policy
        self._clock = clock
        self._world = world
        self._unit_of_work = unit_of_work
        self._catch_up = catch_up
        self._stored = stored
        self._wakeup: asyncio.Event | None = None
        # Attempts under way in this process, by claim token (a delivery being attempted
        # carries its claim: ``_claim``, below).
        self._in_flight: dict[str, asyncio.Task[None]] = {}
        self._task: asyncio.Task[None] | None = None
        self.holder = secrets.token_hex(6)  # this process, in claims
        # A claim lasts this many seconds of wall time, renewed while its attempt is under way
        # (_renew_claims); one left by a process that died mid-attempt lapses, and the delivery
        # is attempted again (--delivery-lease; default: the attempt timeout plus 5 s).
        lease = attempting.lease
        self.lease = float(self.policy["attemptTimeoutSeconds"]) + 5.0 if lease is None else lease

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._wakeup = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(
                self._run(), context=contextvars.Context()
            )

    async def stop(self) -> None:
        if self._task is not None:
            tasks = [self._task, *self._in_flight.values()]
            # Cancelled again until done: a cancellation an awaited library call swallows must
            # not leave the stop (and the request ending a sandbox) waiting forever.
            while not all(task.done() for task in tasks):
                for task in tasks:
                    task.cancel()
                await asyncio.wait(tasks, timeout=0.5)
            await asyncio.gather(*tasks, return_exceptions=True)
            self._task = None

    def wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    # -- the loop -------------------------------------------------------------------------

    def _deliveries(self) -> dict[str, Record]:
        return self._world().deliveries()

    def _due(self) -> list[dict[str, Any]]:
        now = self._clock.now().timestamp()
        wall = time.time()
        return [
            record
            for record in self._deliveries().values()
            if record["state"] == "pending"
            and record["nextAttemptAt"] is not None
            and record["nextAttemptAt"] <= now
            and (
                "_claim" not in record
                or (
                    record["_claim"]["until"] <= wall
                    and record["_claim"]["token"] not in self._in_flight  # never its own twice
                )
            )
        ]

    def _start_due(self) -> list[asyncio.Task[None]]:
        """Claim the deliveries due now and start an attempt for each (in a session: with a
        shared store, one process claims a delivery, and the others leave it)."""
        started = []
        for token, record in self._unit_of_work(self._claim_due):
            # A fresh context: an attempt never joins the transaction of whoever started it.
            task = asyncio.get_running_loop().create_task(
                self._attempt(record["id"], token), context=contextvars.Context()
            )
            self._in_flight[token] = task
            task.add_done_callback(lambda _t, token=token: self._in_flight.pop(token, None))
            started.append(task)
        return started

    def _renew_claims(self) -> None:
        """Extend the claims of this process's attempts under way that are past half their
        lease (every tick, once the lease is under two ticks), so that no other process takes
        over a delivery whose attempt is still running here."""
        wall = time.time()
        for record in self._deliveries().values():
            claim = record.get("_claim")
            if (
                claim is not None
                and claim["token"] in self._in_flight
                and claim["until"] - wall < max(self.lease / 2, 2 * TICK)
            ):
                record["_claim"] = {**claim, "until": wall + self.lease}

    def _claim_due(self) -> list[tuple[str, dict[str, Any]]]:
        """In the unit of work's transaction."""
        if self._in_flight:
            self._renew_claims()
        claimed = []
        for record in self._due():
            token = f"{self.holder}.{secrets.token_hex(6)}"
            record["_claim"] = {"token": token, "until": time.time() + self.lease}
            claimed.append((token, record))
        return claimed

    async def _run(self) -> None:
        assert self._wakeup is not None
        # The manual clock wakes the loop when it moves; the real clock, and a store that other
        # processes share (their deliveries, lapsed claims), are polled every second.
        timeout = TICK if self._clock.mode == "real" or self._stored else None
        while True:
            try:
                self._catch_up()
                self._start_due()
            except Exception:  # the store is down, say: try again at the next wake
                log.exception("delivery loop")
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancellation
            # that arrives as the wake-up does (a clock moved just before a sandbox ends), and
            # the loop would go on for a world that is gone while stop() waits for it forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wakeup.wait()
            self._wakeup.clear()

    async def flush(self, timeout: float) -> dict[str, int]:
        """Make every attempt that is due now, and wait (up to ``timeout``) for all in flight."""
        self._catch_up()
        self._start_due()
        waiting = list(self._in_flight.values())
        if waiting:
            await asyncio.wait(waiting, timeout=timeout)
        self._catch_up()
        pending = sum(1 for r in self._deliveries().values() if r["state"] == "pending")
        return {"inFlight": len(self._in_flight), "pending": pending}

    def release_claims(self) -> None:
        """Forget every claim (at start, when no other process can hold one: attempts a
        killed process had under way are made again, with the same eventId). Call in a
        transaction."""
        for record in self._deliveries().values():
            record.pop("_claim", None)

    # -- one attempt ----------------------------------------------------------------------

    def _claimed(self, delivery_id: str, token: str) -> dict[str, Any] | None:
        """The delivery while this attempt's claim holds it (not after a reset or restore
        made another one with its id, nor after another process took it over)."""
        record = self._deliveries().get(delivery_id)
        if record is None or record.get("_claim", {}).get("token") != token:
            return None
        return record

    async def _attempt(self, delivery_id: str, token: str) -> None:
        """One attempt of a claimed delivery: sent, and its result written while the claim
        still holds it (not after a reset, a restore or another process's takeover)."""
        self._catch_up()
        record = self._live_or_cancel(delivery_id, token)
        if record is None:
            return
        attempt = Attempt(number=len(record["attempts"]) + 1, sent_at=self._clock.now())
        await self._make(record, attempt)
        self._catch_up()

        def record_result() -> None:
            current = self._claimed(delivery_id, token)
            if current is not None:
                del current["_claim"]
                self._record(current, attempt)

        if self._claimed(delivery_id, token) is not None:  # no transaction for nothing to write
            self._unit_of_work(record_result)

    async def _make(self, record: dict[str, Any], attempt: Attempt) -> None:
        """Sign and send one attempt, and note on ``attempt`` what came of it (never raises:
        a receiver must never break the mock)."""
        import httpx  # here, not at start-up: only deliveries need it (~45 ms to import)

        started = time.perf_counter()
        try:
            secret = self.attempting.open_secret(record["secret"])
            if secret is None:
                raise PermissionError(
                    "the signing secret cannot be opened (snapshot from another data key)"
                )
            body, headers = self.attempting.message(record, secret, attempt.sent_at, attempt.number)
            attempt.signed = {
                "signature": headers.get("X-Service-Signature"),
                "timestamp": headers.get("X-Service-Timestamp"),
                "bodySha256": hashlib.sha256(body).hexdigest(),
            }
            attempt.status, attempt.retry_after = await self._send(record, body, headers)
        except urlpolicy.UrlRefused as refused:
            attempt.error, attempt.permanent = f"refused at delivery: {refused.message}", True
        except PermissionError as exc:
            attempt.error, attempt.permanent = str(exc), True
        except httpx.TimeoutException:
            attempt.error = "timeout"
        except httpx.HTTPError as exc:
            attempt.error = f"network error: {type(exc).__name__}: {exc}"
        except Exception as exc:
            log.exception("delivery attempt failed unexpectedly")
            attempt.error = f"network error: {type(exc).__name__}"
        attempt.latency = round((time.perf_counter() - started) * 1000, 1)

    def _live_or_cancel(self, delivery_id: str, token: str) -> dict[str, Any] | None:
        """A copy of the claimed delivery to send (the world may move on meanwhile), or None
        when the claim is gone or the target no longer takes deliveries (then cancelled, in a
        unit of work: a transaction only when there is something to write)."""
        record = self._claimed(delivery_id, token)
        if record is not None and not self._target_live(record):
            return self._unit_of_work(lambda: self._cancel_unless_live(delivery_id, token))
        return None if record is None else plain(record)

    def _cancel_unless_live(self, delivery_id: str, token: str) -> dict[str, Any] | None:
        """:meth:`_live_or_cancel`'s judgement made again in the unit of work's transaction (a
        run after a conflict sees the world caught up): cancelled, or a copy to send."""
        record = self._claimed(delivery_id, token)
        if record is None:
            return None
        if not self._target_live(record):
            record["state"], record["nextAttemptAt"] = "cancelled", None
            del record["_claim"]
            return None
        copied: dict[str, Any] = plain(record)
        return copied

    def _record(self, record: dict[str, Any], attempt: Attempt) -> None:
        """Write one attempt's result (in a transaction of its own), with the signature,
        timestamp and body digest it was sent with (None when it was never signed)."""
        outcome = self._outcome(attempt.status, attempt.permanent)
        record["attempts"].append(
            {
                "attempt": attempt.number,
                "at": iso_z(attempt.sent_at),
                "status": attempt.status,
                "error": attempt.error,
                "latencyMs": attempt.latency,
                "outcome": outcome,
                "signed": attempt.signed,
            }
        )
        if outcome == "delivered":
            record["state"], record["nextAttemptAt"] = "delivered", None
        elif outcome == "permanent" or attempt.number >= int(self.policy["attempts"]):
            record["state"], record["nextAttemptAt"] = "failed", None
        else:
            record["nextAttemptAt"] = self._clock.now().timestamp() + self._delay(
                record, attempt.number, attempt.retry_after
            )

    def _target_live(self, record: dict[str, Any]) -> bool:
        """A subscription delivery stops when its subscription is disabled or deleted."""
        if record["target"] != "subscription":
            return True
        subscription = self._world().get(record["workspaceId"], SUBSCRIPTIONS, record["targetId"])
        return subscription is not None and subscription["enabled"]

    async def _send(
        self, record: dict[str, Any], body: bytes, headers: dict[str, str]
    ) -> tuple[int, int | None]:
        import httpx

        allow_private = self.attempting.allow_private
        listener = bool(record.get("_listener")) and not allow_private
        if listener:
            resolved = await check_listener_url(record["url"])
        else:
            resolved = await urlpolicy.resolve_and_check(record["url"], allow_private=allow_private)
        url, host_headers, extensions = urlpolicy.pinned_request_args(resolved)
        timeout = float(self.policy["attemptTimeoutSeconds"])
        async with httpx.AsyncClient(
            follow_redirects=False, timeout=timeout, verify=tls_context()
        ) as client:
            response = await client.post(
                url,
                content=body,
                headers={**headers, **host_headers, "User-Agent": "mockserver-webhooks/1"},
                extensions=extensions,
            )
            stream = response.extensions.get("network_stream")
            peer = stream.get_extra_info("server_addr") if stream is not None else None
            if peer and listener:
                check_listener_address(record["url"], str(peer[0]))
            elif peer:
                urlpolicy.check_connected_address(
                    str(peer[0]), allow_private=allow_private, url=record["url"]
                )
        retry_after = response.headers.get("retry-after")
        seconds = int(retry_after) if retry_after and retry_after.isdigit() else None
        return response.status_code, seconds

    def _outcome(self, status: int | None, permanent: bool) -> str:
        if permanent:
            return "permanent"
        if status is None:
            return "retry"
        if 200 <= status < 300:
            return "delivered"
        if self.attempting.retry_status(status):
            return "retry"
        return "permanent"  # other 4xx, and every 3xx: redirects are never followed

    def _delay(self, record: dict[str, Any], number: int, retry_after: int | None) -> float:
        if retry_after is not None:
            return float(retry_after)
        schedule = self.policy["backoffSeconds"]
        base = float(schedule[min(number - 1, len(schedule) - 1)])
        return base * (1 + jitter(record["eventId"], number, float(self.policy["jitterRatio"])))
