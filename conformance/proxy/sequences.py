"""The stated rules a sequence of exchanges shows, each judged by a small stateful judge.

Each judge sees every judged exchange in the order the proxy finished forwarding them
(:meth:`SequenceJudge.see`, as an :class:`Observed`) and answers its verdicts: ``None`` when
the exchange told it nothing to judge, else a list of findings (empty: judged and held). What
a judge remembers is bounded: a least-recently-used table (:class:`Bounded`) per key, caller,
cursor or job, so that a proxy left running for days keeps a bounded memory.

* :class:`IdempotentReplay` (``idempotency-replay``, ``idempotency-failed-call-frees-key``):
  the same caller's same ``Idempotency-Key`` with the same request replays the first success
  (the same resource; ``Idempotent-Replayed`` is the deployment's own mark and not required);
  a failed call does not hold its key;
* :class:`CursorWalk` (``pagination-walk``, ``pagination-cursors``): a walk from a first page
  along ``nextCursor`` never shows a record twice, and a cursor sent with another query (its
  filters or path changed) is refused;
* :class:`JobLife` (``jobs-status-closed-set``): a job's ``status`` stays in the contract's
  closed set (where the profile encloses it) and never leaves a terminal value on later reads
  (reads only: a create's answer shows the job as it was, and its replay repeats it);
* :class:`DeprecatedFields` (``schema-deprecated-fields``): a deprecated response field is still
  returned wherever its replacement is (a render job's ``artifacts.video``, known as a render
  from the answer that started it);
* :class:`CreatedReadable` (``schema-stateful``): what a create answered reads back by its
  id (not 404) until its caller deletes it;
* :class:`PaymentRequired` (``limits-payment-required``): the same request of the same caller
  refused with 402 stays refused until a top-up (``insufficient_credits``), and a top-up does
  not clear ``budget_capped``.

The proxy does not see a world change behind the interface, except one: the bundled mock's
control plane (``/_mock/``, conformance/target.py :class:`MockControl`) when its traffic passes
through the proxy, as a suite run's does. :func:`world_change` reads it: a reset or a snapshot
restored makes every judge forget what it saw; a change of credits is a top-up, a change of a
member's budget lifts a cap.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

from conformance.checks.jobs import RENDER, statuses
from conformance.contract import Contract, Operation
from conformance.idpool import resource_id
from conformance.proxy.findings import Finding
from conformance.target import Exchange

K = TypeVar("K")
V = TypeVar("V")

KEYS_KEPT = 10_000  # idempotency keys, jobs, requests refused with 402 (each table)
WALKS_KEPT = 1_000  # cursors issued, each with the records its walk showed before it
IDS_PER_WALK = 1_000  # records remembered of one walk (beyond: the walk is no longer judged)
_PAGING = {"cursor", "limit", "after", "offset"}
_RETRYABLE = {429, 503}

RESET, TOP_UP, BUDGET = "reset", "top-up", "budget"


class Bounded(OrderedDict[K, V], Generic[K, V]):
    """A table that forgets its least recently used entries beyond ``size``."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def get_fresh(self, key: K) -> V | None:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


@dataclass
class Observed:
    """A judged exchange, with what the sequence judges read of it."""

    exchange: Exchange
    operation: Operation | None  # under the profile held (None: outside the contract)
    caller: str | None  # a digest of the request's credential
    idempotency_key: str | None = None
    body_digest: str = ""
    valid: bool = True  # the request breaks no constraint the contract states

    @property
    def ok(self) -> bool:
        return 200 <= self.exchange.status < 300

    @property
    def query(self) -> list[tuple[str, str]]:
        return parse_qsl(urlsplit(self.exchange.url).query, keep_blank_values=True)


def digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()[:16]


def world_change(method: str, path: str) -> str | None:
    """What a request outside the contract tells of the world behind it: the bundled mock's
    control plane resetting it (:data:`RESET`), changing credits (:data:`TOP_UP`) or a member's
    budget (:data:`BUDGET`); None for anything else."""
    if method in ("GET", "HEAD", "OPTIONS") or "/_mock/" not in path + "/":
        return None
    if path.endswith("/reset") or path.endswith("/snapshot"):
        return RESET
    if path.endswith("/credits"):
        return TOP_UP
    if path.endswith("/budget"):
        return BUDGET
    return None


class SequenceJudge:
    """One stated rule over a sequence of exchanges (see the module's description)."""

    checks: tuple[str, ...] = ()

    def see(self, seen: Observed) -> dict[str, list[Finding]]:
        """Judge one exchange: {check: its findings} for each check that judged (none: held)."""
        raise NotImplementedError

    def world(self, change: str) -> None:
        """The world changed behind the interface (:func:`world_change`)."""


@dataclass
class _First:
    fingerprint: tuple[str, str, str]  # method, path, body digest
    status: int
    resource: str | None
    failed: bool
    answer: str = ""  # a digest of the first answer's body (a failure's error body)
    valid: bool = True  # the first request was valid against the contract


class IdempotentReplay(SequenceJudge):
    checks = ("idempotency-replay", "idempotency-failed-call-frees-key")
    QUOTE = (
        "The same key with the same body from the same workspace replays the first response "
        "(status and body) without a second resource or a second charge. A failed call does not "
        "hold its key."
    )

    def __init__(self) -> None:
        self.firsts: Bounded[tuple[str | None, str], _First] = Bounded(KEYS_KEPT)

    def world(self, change: str) -> None:
        if change == RESET:
            self.firsts.clear()

    def see(self, seen: Observed) -> dict[str, list[Finding]]:
        ex = seen.exchange
        if seen.idempotency_key is None or seen.operation is None or ex.status in _RETRYABLE:
            return {}
        key = (seen.caller, seen.idempotency_key)
        fingerprint = (ex.method, ex.path, seen.body_digest)
        first = self.firsts.get_fresh(key)
        if first is None:
            if ex.status < 500:
                answer = digest(ex.response_body)
                self.firsts.put(
                    key,
                    _First(fingerprint, ex.status, _resource(ex), not seen.ok, answer, seen.valid),
                )
            return {}
        if first.failed:
            return self._after_failure(seen, key, first, fingerprint)
        if fingerprint != first.fingerprint or first.resource is None:
            return {}  # another request under the key: the contract's answer is inferred
        again = _resource(ex)
        if seen.ok and again == first.resource:
            return {"idempotency-replay": []}
        marked = " (marked Idempotent-Replayed)" if ex.header("idempotent-replayed") else ""
        return {
            "idempotency-replay": [
                Finding.of(
                    "idempotency-replay",
                    "deployment",
                    f"the same request under the same Idempotency-Key answered {ex.answered} "
                    f"with id {again or '(none)'}{marked}; the first answered {first.status} with "
                    f"id {first.resource}",
                    ex,
                    self.QUOTE,
                )
            ]
        }

    def _after_failure(
        self,
        seen: Observed,
        key: tuple[str | None, str],
        first: _First,
        fingerprint: tuple[str, str, str],
    ) -> dict[str, list[Finding]]:
        """A call under a key whose first call failed: the failure must have freed the key
        (neither ``idempotency_key_reused`` nor the first failure's answer again)."""
        ex = seen.exchange
        if seen.ok:  # a success now holds the key
            self.firsts.put(key, _First(fingerprint, ex.status, _resource(ex), False))
        reused = ex.status == 409 and _reason(ex) == "idempotency_key_reused"
        replayed = (
            first.status == 400  # an answer that names what was wrong with the first,
            and not first.valid  # a request the contract refuses: no valid one earns it
            and seen.valid
            and fingerprint != first.fingerprint
            and ex.status == first.status
            and digest(ex.response_body) == first.answer
        )  # the first failure's very answer, to another valid request: the key was held
        if not (reused or replayed):
            return {"idempotency-failed-call-frees-key": []}
        finding = Finding.of(
            "idempotency-failed-call-frees-key",
            "deployment",
            f"the call with this Idempotency-Key first failed ({first.status}); "
            f"a later call with another body answered {ex.answered}"
            + (" idempotency_key_reused" if reused else ", the first answer again")
            + ": the failed call held its key",
            ex,
            self.QUOTE,
        )
        return {"idempotency-failed-call-frees-key": [finding]}


def _resource(exchange: Exchange) -> str | None:
    return resource_id(exchange.json()) if 200 <= exchange.status < 300 else None


def _reason(exchange: Exchange) -> Any:
    body = exchange.json()
    details = body.get("details") if isinstance(body, dict) else None
    return details.get("reason") if isinstance(details, dict) else None


@dataclass(frozen=True)
class _Page:
    """Where a cursor leads: its walk's query and the records the walk showed before it."""

    bound: tuple[Any, ...]  # path and query, without the paging parameters
    ids: frozenset[str]  # empty once the walk held more than IDS_PER_WALK (no longer judged)
    judged: bool = True


class CursorWalk(SequenceJudge):
    """Each cursor remembers the records its walk showed up to it, so that a page fetched
    twice (a retry) or a walk forked (one cursor followed twice) is judged as its own walk."""

    checks = ("pagination-walk", "pagination-cursors")

    def __init__(self, contract: Contract) -> None:
        self.view = contract.held
        self.cursors: Bounded[tuple[str | None, str, str], _Page] = Bounded(WALKS_KEPT)
        self.quote = self.view.quote("#/components/schemas/CursorPage")

    def world(self, change: str) -> None:
        if change == RESET:
            self.cursors.clear()

    def see(self, seen: Observed) -> dict[str, list[Finding]]:
        op = seen.operation
        if op is None or not self.view.is_cursor_list(op):
            return {}
        field_name = self.view.items_field(op)
        ex = seen.exchange
        query = seen.query
        cursor = next((v for k, v in query if k == "cursor"), None)
        bound = (ex.path, tuple(sorted((k, v) for k, v in query if k not in _PAGING)))
        verdicts: dict[str, list[Finding]] = {}
        before: _Page | None = None
        if cursor:
            before = self.cursors.get_fresh((seen.caller, op.operation_id, cursor))
            if before is None:
                return {}  # a cursor this proxy did not see issued
            if before.bound != bound:
                return {"pagination-cursors": self._rebound(seen, before, bound)}
        body = ex.json()
        if ex.status != 200 or not isinstance(body, dict) or not field_name:
            return verdicts
        verdicts["pagination-walk"] = self._page(body, ex)
        items = body.get(field_name)
        ids = [str(i["id"]) for i in items or [] if isinstance(i, dict) and "id" in i]
        seen_ids = before.ids if before is not None else frozenset()
        judged = before.judged if before is not None else True
        if before is not None and judged:
            repeated = sorted(set(ids) & seen_ids) + sorted({i for i in ids if ids.count(i) > 1})
            verdicts["pagination-walk"] += (
                []
                if not repeated
                else [
                    Finding.of(
                        "pagination-walk",
                        "deployment",
                        f"ids seen twice in one walk along nextCursor: {', '.join(repeated[:5])}",
                        ex,
                        self.quote,
                    )
                ]
            )
        following = body.get("nextCursor")
        if isinstance(following, str) and following:
            after = seen_ids | frozenset(ids)
            if len(after) > IDS_PER_WALK:
                after, judged = frozenset(), False
            self.cursors.put((seen.caller, op.operation_id, following), _Page(bound, after, judged))
        return verdicts

    def _rebound(self, seen: Observed, before: _Page, bound: tuple[Any, ...]) -> list[Finding]:
        """A cursor sent with another query than it was issued for: must be refused."""
        if not seen.ok:
            return []
        ex = seen.exchange
        return [
            Finding.of(
                "pagination-cursors",
                "deployment",
                f"a cursor issued for {_query_text(before.bound)} was sent with "
                f"{_query_text(bound)} and answered {ex.status}; a cursor is bound to "
                "its query (400 expected)",
                ex,
                self.quote,
            )
        ]

    def _page(self, body: dict[str, Any], ex: Exchange) -> list[Finding]:
        """One page's own rules: ``nextCursor`` null or a non-empty cursor, and ``hasMore``
        true exactly when it is not null."""
        found = []
        following = body.get("nextCursor", "<absent>")
        if not (following is None or (isinstance(following, str) and following)):
            found.append(
                Finding.of(
                    "pagination-walk",
                    "deployment",
                    f"nextCursor is {following!r}: it must be null on the last page and a "
                    "non-empty cursor otherwise",
                    ex,
                    self.quote,
                )
            )
        if "hasMore" in body and body["hasMore"] is not (following not in (None, "")):
            found.append(
                Finding.of(
                    "pagination-walk",
                    "deployment",
                    f"hasMore is {body['hasMore']!r} while nextCursor is {following!r}",
                    ex,
                    self.view.quote("#/components/schemas/CursorPage/properties/hasMore"),
                )
            )
        return found


def _query_text(bound: tuple[Any, ...]) -> str:
    path, query = bound
    return path + ("?" + "&".join(f"{k}={v}" for k, v in query) if query else "")


def _jobs(body: Any) -> Iterator[dict[str, Any]]:
    """The job objects of a body: ``job``, or each item of ``jobs``."""
    if not isinstance(body, dict):
        return
    job = body.get("job")
    if isinstance(job, dict) and isinstance(job.get("id"), str):
        yield job
    for item in body.get("jobs") or []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            yield item


class JobLife(SequenceJudge):
    checks = ("jobs-status-closed-set",)

    def __init__(self, contract: Contract) -> None:
        self.statuses = statuses(contract.held)
        self.terminal: Bounded[tuple[str | None, str], str] = Bounded(KEYS_KEPT)  # terminal read
        self.quote = contract.held.quote("#/components/schemas/JobStatus")

    def world(self, change: str) -> None:
        if change == RESET:
            self.terminal.clear()

    def see(self, seen: Observed) -> dict[str, list[Finding]]:
        ex = seen.exchange
        if seen.operation is None or not seen.ok or ex.method != "GET":
            return {}  # a create's answer is a snapshot: its replay repeats the first one
        found: list[Finding] | None = None
        for job in _jobs(ex.json()):
            status, job_id = job.get("status"), job["id"]
            found = found if found is not None else []
            known = self.statuses.known
            if known is not None and status not in known:
                found.append(
                    Finding.of(
                        "jobs-status-closed-set",
                        "deployment",
                        f"job {job_id} reads status {status!r}, outside the closed set "
                        f"{', '.join(sorted(known))}",
                        ex,
                        self.quote,
                    )
                )
            before = self.terminal.get_fresh((seen.caller, job_id))
            if before is not None and status != before:
                found.append(
                    Finding.of(
                        "jobs-status-closed-set",
                        "deployment",
                        f"job {job_id} read {before!r} (terminal) and later {status!r}",
                        ex,
                        self.quote,
                    )
                )
            elif before is None and status in self.statuses.terminal:
                self.terminal.put((seen.caller, job_id), str(status))
        return {} if found is None else {"jobs-status-closed-set": found}


class DeprecatedFields(SequenceJudge):
    checks = ("schema-deprecated-fields",)

    def __init__(self, judge_one: Any) -> None:
        self.judge_one = judge_one  # (operation, exchange, renders) -> (judged, findings)
        self.renders: Bounded[tuple[str | None, str], bool] = Bounded(KEYS_KEPT)

    def world(self, change: str) -> None:
        if change == RESET:
            self.renders.clear()

    def see(self, seen: Observed) -> dict[str, list[Finding]]:
        op = seen.operation
        if op is None or not seen.ok:
            return {}
        if op.operation_id == RENDER:
            for job in _jobs(seen.exchange.json()):
                self.renders.put((seen.caller, job["id"]), True)
        judged, found = self.judge_one(op, seen.exchange, _Of(self.renders, seen.caller))
        return {"schema-deprecated-fields": found} if judged else {}


class CreatedReadable(SequenceJudge):
    """What a create answered can be read back by its id (``schema-stateful``: a link's
    target exists), until the caller deletes it."""

    checks = ("schema-stateful",)
    QUOTE = "A link's target exists: the resource a create answered can be read by its id."

    def __init__(self) -> None:
        self.created: Bounded[tuple[str | None, str], str] = Bounded(KEYS_KEPT)

    def world(self, change: str) -> None:
        if change == RESET:
            self.created.clear()

    def see(self, seen: Observed) -> dict[str, list[Finding]]:
        ex, op = seen.exchange, seen.operation
        if op is None:
            return {}
        segments = [unquote(part) for part in ex.path.split("/") if part]
        if ex.method == "POST" and seen.ok and (made := _resource(ex)) is not None:
            self.created.put((seen.caller, made), op.operation_id)
            return {}
        if ex.method == "DELETE":
            for segment in segments:
                self.created.pop((seen.caller, segment), None)
            return {}
        if ex.method != "GET" or not op.path.endswith("}") or not segments:
            return {}
        by = self.created.get_fresh((seen.caller, segments[-1]))
        if by is None or not (seen.ok or ex.status == 404):
            return {}
        found = (
            []
            if seen.ok
            else [
                Finding.of(
                    "schema-stateful",
                    "deployment",
                    f"{segments[-1]}, which {by} answered, reads {ex.answered}",
                    ex,
                    self.QUOTE,
                )
            ]
        )
        return {"schema-stateful": found}


@dataclass(frozen=True)
class _Of:
    """The job ids of one caller in a table keyed by (caller, job id), as a set reads."""

    table: Bounded[tuple[str | None, str], bool]
    caller: str | None

    def __contains__(self, job_id: object) -> bool:
        return (self.caller, job_id) in self.table


@dataclass
class _Refused:
    code: str
    topped_up: bool = False
    budget_changed: bool = False


class PaymentRequired(SequenceJudge):
    checks = ("limits-payment-required",)
    QUOTE = "402 `insufficient_credits` (clears after a top-up), `budget_capped` (does not)."

    def __init__(self) -> None:
        self.refused: Bounded[tuple[str | None, str, str, str], _Refused] = Bounded(KEYS_KEPT)

    def world(self, change: str) -> None:
        if change == RESET:
            self.refused.clear()
        for refused in self.refused.values():
            refused.topped_up |= change == TOP_UP
            refused.budget_changed |= change == BUDGET

    def see(self, seen: Observed) -> dict[str, list[Finding]]:
        ex = seen.exchange
        op = seen.operation
        if op is None or not op.paid or ex.status in _RETRYABLE:
            return {}
        key = (seen.caller, ex.method, ex.path, seen.body_digest)
        if ex.status == 402 and ex.code in ("insufficient_credits", "budget_capped"):
            before = self.refused.get_fresh(key)
            self.refused.put(key, _Refused(str(ex.code)))
            return {} if before is None else {"limits-payment-required": []}
        before = self.refused.pop(key, None)
        if before is None or not seen.ok:
            return {}
        cleared = before.topped_up if before.code == "insufficient_credits" else False
        if before.budget_changed or cleared:
            return {"limits-payment-required": []}
        why = (
            "with no top-up seen"
            if before.code == "insufficient_credits"
            else "after a top-up, which does not clear budget_capped"
            if before.topped_up
            else "with no change of the budget seen"
        )
        return {
            "limits-payment-required": [
                Finding.of(
                    "limits-payment-required",
                    "deployment",
                    f"the same request was refused 402 {before.code}, then answered "
                    f"{ex.status} {why}",
                    ex,
                    self.QUOTE,
                )
            ]
        }
