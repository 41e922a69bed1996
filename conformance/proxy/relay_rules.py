"""What the webhook relay judges of each delivery, and what it remembers between deliveries.

Every judgement is one the suite's webhook checks make (conformance/checks/webhooks.py), named by
that check: ``webhooks-subscription-deliveries`` for a subscription's delivery,
``webhooks-callback-deliveries`` for a per-job callback. Read from the contract (the profile's
view): the delivery headers each event requires, its body schema, the timestamp's form, the
terminal job statuses.

One delivery:

* ``X-Service-Signature`` is the HMAC-SHA256 of ``<X-Service-Timestamp>.<raw body>`` under one of
  the secrets given (none given: not judged, counted as unverified);
* ``X-Service-Timestamp`` has the contract's form (UTC, ``Z``; whole seconds under ``full``). Its
  age is never judged: receivers "must not depend on the timestamp being recent";
* the headers the event's definition requires are there, and ``X-Service-Event``,
  ``X-Service-Event-Id`` (and a callback's ``X-Service-Job-Id``) agree with the body;
* the body is JSON, names an event of the contract and keeps its schema.

Across deliveries (state bounded: see :class:`Bounded`):

* an event delivered again keeps its ``eventId`` (``eventId``: "Stable; the same across retries
  and replays"): the same event (its name, job, ``data.sequence`` and status) seen under two
  ids is a finding; so is one ``eventId`` carrying two different events, since "receivers
  deduplicate by it";
* under ``full`` only (``data.sequence`` read as the order events happened, the job stream's
  inferred meaning): no event of a job follows, by sequence, its terminal event with another
  status (a terminal status is final).

Not findings, but notes: a delivery arriving with a lower ``data.sequence`` than one already
delivered for its job (the document states no delivery order: delivery is at least once, retried
with backoff, and replayed during recovery), and an event delivered again after the integrator
rejected it with a 4xx other than 408 and 429 (a replay during recovery looks alike).
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

import jsonschema_rs

from conformance.contract import ContractView
from conformance.signatures import verify

SUBSCRIPTION_RULE = "webhooks-subscription-deliveries"
CALLBACK_RULE = "webhooks-callback-deliveries"
RULES = (SUBSCRIPTION_RULE, CALLBACK_RULE)
MEMORY = 10_000  # events, event identities and jobs remembered, each (least recently seen go)
RETRIED = (408, 429)  # 4xx answers that are retried, not a permanent rejection

K = TypeVar("K")
V = TypeVar("V")


class Bounded(Generic[K, V]):
    """A mapping that keeps at most ``limit`` entries, forgetting the least recently used."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("the relay's memory must hold at least one entry")
        self.limit = limit
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        if key not in self._items:
            return None
        self._items.move_to_end(key)
        return self._items[key]

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.limit:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


@dataclass
class Broken:
    """One rule a delivery broke."""

    rule: str  # the suite's check whose rule it is
    part: str  # which part of the rule (signature, timestamp-format, body-schema, ...)
    message: str
    quote: str = ""


@dataclass
class Verdict:
    """What one delivery showed."""

    rule: str  # the check that judges deliveries of its kind
    operation_id: str | None  # the contract's name of the delivery (onJobProgressed, ...)
    event: str | None
    event_id: str | None
    broken: list[Broken] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    verified: bool | None = None  # the signature: None when no secret was given
    redelivery: bool = False  # this eventId was delivered before


@dataclass
class _Event:
    identity: tuple[Any, ...] | None
    rejected_with: int | None = None  # the integrator's last permanent rejection of it


class DeliveryJudge:
    """Judges deliveries one by one, remembering at most ``memory`` events, identities and jobs.
    Not thread-safe: the relay calls it under its lock."""

    def __init__(self, view: ContractView, secrets: list[str], memory: int = MEMORY) -> None:
        self.view = view
        self.secrets = [s for s in secrets if s]
        self.events: Bounded[tuple[Any, ...], _Event] = Bounded(memory)
        self.identities: Bounded[tuple[Any, ...], str] = Bounded(memory)
        # per job: the highest sequence delivered, and its terminal (sequence, status) if seen
        self.jobs: Bounded[tuple[Any, ...], dict[str, Any]] = Bounded(memory)
        self._validators: dict[int, Any] = {}
        schemas = view.document.get("components", {}).get("schemas", {})
        self.terminal = frozenset(
            view.resolve(schemas.get("JobTerminalStatus", {})).get("enum", [])
        )
        self._timestamp = self._validator(schemas.get("DeliveryTimestamp", {"type": "string"}))
        self._versions = {
            _const(view, schemas.get("AutomationEvent")): SUBSCRIPTION_RULE,
            _const(view, schemas.get("JobCallbackEvent")): CALLBACK_RULE,
        }
        self._versions.pop(None, None)

    # -- one delivery ------------------------------------------------------------------------

    def judge(self, headers: dict[str, str], body: bytes) -> Verdict:
        """``headers``: lower-case names. Judges one delivery and remembers it."""
        try:
            parsed = json.loads(body)
            is_json = True
        except ValueError:
            parsed, is_json = None, False
        payload = parsed if isinstance(parsed, dict) else {}
        rule = self._kind(headers, payload)
        event = payload.get("event") if isinstance(payload.get("event"), str) else None
        event = event or headers.get("x-service-event")
        event_id = payload.get("eventId") or headers.get("x-service-event-id")
        definition = self._definition(rule, event)
        verdict = Verdict(
            rule,
            definition.get("operationId") if definition else None,
            event,
            str(event_id) if event_id is not None else None,
        )
        where = f"delivery of {event or 'an unnamed event'} {verdict.event_id or '(no eventId)'}"
        self._signature(verdict, where, headers, body)
        if not is_json:
            verdict.broken.append(Broken(rule, "body", f"{where}: the body is not JSON"))
            return verdict
        if definition is None:
            verdict.broken.append(
                Broken(
                    rule,
                    "event-name",
                    f"{where}: event {json.dumps(event)} is not one the contract names",
                )
            )
        else:
            self._headers(verdict, where, definition, headers, payload)
            self._body(verdict, where, definition, parsed)
        if isinstance(parsed, dict):
            self._remember(verdict, where, headers, payload)
        return verdict

    def answered(self, verdict: Verdict, headers: dict[str, str], status: int | None) -> None:
        """The integrator answered ``status`` to the delivery (None: it could not be reached)."""
        entry = self.events.get(self._event_key(verdict, headers))
        if entry is None:
            return
        permanent = status is not None and 400 <= status < 500 and status not in RETRIED
        entry.rejected_with = status if permanent else None

    # -- the parts ---------------------------------------------------------------------------

    def _kind(self, headers: dict[str, str], payload: dict[str, Any]) -> str:
        if "x-service-subscription-id" in headers:
            return SUBSCRIPTION_RULE
        if "x-service-job-id" in headers:
            return CALLBACK_RULE
        version = payload.get("schemaVersion")
        if isinstance(version, str) and version in self._versions:
            return self._versions[version]
        hooks = self.view.document.get("webhooks", {})
        event = payload.get("event")
        return SUBSCRIPTION_RULE if isinstance(event, str) and event in hooks else CALLBACK_RULE

    def _definition(self, rule: str, event: str | None) -> dict[str, Any] | None:
        if rule == SUBSCRIPTION_RULE:
            hooks = self.view.document.get("webhooks", {})
            return hooks.get(event, {}).get("post") if event else None
        callbacks = self.view.document.get("components", {}).get("callbacks", {})
        for callback in callbacks.values():
            for item in self.view.resolve(callback).values():
                if "post" in item:
                    return dict(item["post"])
        return None

    def _signature(
        self, verdict: Verdict, where: str, headers: dict[str, str], body: bytes
    ) -> None:
        timestamp = headers.get("x-service-timestamp", "")
        if not self._timestamp_ok(timestamp):
            verdict.broken.append(
                Broken(
                    verdict.rule,
                    "timestamp-format",
                    f"{where}: X-Service-Timestamp {timestamp!r} is not "
                    + self.view.quote("#/components/schemas/DeliveryTimestamp", "UTC ending in Z"),
                    self.view.quote("#/components/parameters/DeliveryTimestamp"),
                )
            )
        if not self.secrets:
            return
        signature = headers.get("x-service-signature", "")
        verdict.verified = any(verify(s, timestamp, body, signature) for s in self.secrets)
        if not verdict.verified:
            shown = signature if len(signature) <= 80 else signature[:77] + "..."
            given = "the secret given" if len(self.secrets) == 1 else "any of the secrets given"
            verdict.broken.append(
                Broken(
                    verdict.rule,
                    "signature",
                    f"{where}: X-Service-Signature {shown!r} is not sha256= and the lowercase "
                    f"hex HMAC-SHA256, under {given}, of `{timestamp}.<the raw body bytes>`",
                    self.view.quote("#/components/parameters/DeliverySignature"),
                )
            )

    def _timestamp_ok(self, value: str) -> bool:
        if not self._timestamp.is_valid(value):
            return False
        whole = re.sub(r"\.\d+Z$", "Z", value)
        try:
            datetime.strptime(whole, "%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            return False
        return True

    def _headers(
        self,
        verdict: Verdict,
        where: str,
        definition: dict[str, Any],
        headers: dict[str, str],
        payload: dict[str, Any],
    ) -> None:
        required = []
        for raw in definition.get("parameters", []):
            param = self.view.resolve(raw)
            if param.get("in") == "header" and param.get("required"):
                required.append(param["name"])
        missing = [name for name in required if name.lower() not in headers]
        if missing:
            verdict.broken.append(
                Broken(verdict.rule, "headers", f"{where}: missing headers {', '.join(missing)}")
            )
        pairs = {
            "X-Service-Event": payload.get("event"),
            "X-Service-Event-Id": payload.get("eventId"),
        }
        if verdict.rule == CALLBACK_RULE:
            pairs["X-Service-Job-Id"] = payload.get("jobId")
        disagree = [
            f"{name} is {headers[name.lower()]!r} but the body's is {json.dumps(value)}"
            for name, value in pairs.items()
            if value is not None and name.lower() in headers and headers[name.lower()] != value
        ]
        if disagree:
            verdict.broken.append(
                Broken(
                    verdict.rule,
                    "headers-agree",
                    f"{where}: " + "; ".join(disagree),
                    self.view.quote("#/components/parameters/DeliveryEventId"),
                )
            )

    def _body(self, verdict: Verdict, where: str, definition: dict[str, Any], body: Any) -> None:
        content = self.view.resolve(definition.get("requestBody", {})).get("content", {})
        schema = content.get("application/json", {}).get("schema")
        if schema is None:
            return
        errors = [
            f"{'/'.join(map(str, e.instance_path)) or 'body'}: {e.message}"
            for e in self._validator(schema).iter_errors(body)
        ]
        if errors:
            verdict.broken.append(
                Broken(verdict.rule, "body-schema", f"{where}: " + "; ".join(errors[:5]))
            )

    def _validator(self, schema: dict[str, Any]) -> Any:
        key = id(schema)
        if key not in self._validators:
            root = {**schema, "components": self.view.document.get("components", {})}
            self._validators[key] = jsonschema_rs.Draft202012Validator(root)
        return self._validators[key]

    # -- across deliveries -------------------------------------------------------------------

    def _scope(self, verdict: Verdict, headers: dict[str, str]) -> tuple[Any, ...]:
        """Whose deliveries these are: a subscription's, or a job's callbacks (one endpoint may
        receive several subscriptions, each with ids of its own)."""
        owner = headers.get("x-service-subscription-id") or headers.get("x-service-job-id")
        return (verdict.rule, owner)

    def _event_key(self, verdict: Verdict, headers: dict[str, str]) -> tuple[Any, ...]:
        return (*self._scope(verdict, headers), verdict.event_id)

    def _identity(self, verdict: Verdict, payload: dict[str, Any]) -> tuple[Any, ...] | None:
        """What makes an event this event whatever its id: its name, its job, and (of a
        subscription's) its sequence and status; a callback is its job's one terminal event."""
        if verdict.rule == SUBSCRIPTION_RULE:
            data = payload.get("data")
            if not isinstance(data, dict) or data.get("jobId") is None:
                return None
            parts = (verdict.event, data.get("jobId"), data.get("sequence"), data.get("status"))
        else:
            if payload.get("jobId") is None:
                return None
            parts = (verdict.event, payload.get("jobId"), payload.get("status"))
        return tuple(json.dumps(p, sort_keys=True) for p in parts)

    def _remember(
        self, verdict: Verdict, where: str, headers: dict[str, str], payload: dict[str, Any]
    ) -> None:
        quote = self.view.quote(
            "#/components/schemas/AutomationEvent/properties/eventId",
            "Stable; the same across retries and replays.",
        )
        identity = self._identity(verdict, payload)
        scope = self._scope(verdict, headers)
        if verdict.event_id is not None:
            key = (*scope, verdict.event_id)
            seen = self.events.get(key)
            if seen is not None:
                verdict.redelivery = True
                if seen.rejected_with is not None:
                    verdict.notes.append(
                        f"{where} came again although the integrator rejected it with "
                        f"{seen.rejected_with} (a permanent rejection, unless this is a replay "
                        "during recovery)"
                    )
                if identity is not None and seen.identity is not None and seen.identity != identity:
                    verdict.broken.append(
                        Broken(
                            verdict.rule,
                            "event-id-stable",
                            f"eventId {verdict.event_id} was first delivered as "
                            f"{_shown(seen.identity)}, now as {_shown(identity)}: one id, two "
                            "events, and receivers deduplicate by it",
                            quote,
                        )
                    )
            else:
                self.events.put(key, _Event(identity))
        if identity is not None:
            first_id = self.identities.get((*scope, identity))
            if first_id is None:
                if verdict.event_id is not None:
                    self.identities.put((*scope, identity), verdict.event_id)
            elif verdict.event_id != first_id:
                verdict.redelivery = True
                verdict.broken.append(
                    Broken(
                        verdict.rule,
                        "retry-same-event-id",
                        f"{where}: {_shown(identity)} was first delivered as eventId "
                        f"{first_id}, and delivered again as {verdict.event_id}",
                        quote,
                    )
                )
        if verdict.rule == SUBSCRIPTION_RULE:
            self._order(verdict, where, scope, payload)

    def _order(
        self, verdict: Verdict, where: str, scope: tuple[Any, ...], payload: dict[str, Any]
    ) -> None:
        data = payload.get("data")
        if not isinstance(data, dict) or not isinstance(data.get("jobId"), str):
            return
        sequence, status = data.get("sequence"), data.get("status")
        if not isinstance(sequence, int) or isinstance(sequence, bool):
            return
        key = (*scope, data["jobId"])
        job = self.jobs.get(key)
        if job is None:
            job = {"highest": sequence, "at_highest": status, "terminal": None}
            self.jobs.put(key, job)
        elif sequence < job["highest"] and not verdict.redelivery:
            verdict.notes.append(
                f"{where} (sequence {sequence}) arrived after sequence {job['highest']} of job "
                f"{data['jobId']} (no delivery order is stated: retries and replays reorder)"
            )
        wrong = None
        terminal = job["terminal"]
        if terminal is not None and sequence > terminal[0] and status != terminal[1]:
            wrong = f"{status!r} at sequence {sequence} after {terminal[1]!r} at {terminal[0]}"
        if status in self.terminal and (terminal is None or sequence < terminal[0]):
            job["terminal"] = (sequence, status)
            if job["highest"] > sequence and job["at_highest"] != status:
                wrong = (
                    f"{job['at_highest']!r} at sequence {job['highest']} after {status!r} at "
                    f"{sequence}"
                )
        if sequence >= job["highest"]:
            job["highest"], job["at_highest"] = sequence, status
        if wrong and self.view.profile == "full":
            verdict.broken.append(
                Broken(
                    verdict.rule,
                    "terminal-final",
                    f"{where}: job {data['jobId']} was {wrong}: a terminal status is final",
                    "Job status | `done`, `cancelled`, `failed`, `qa_failed` (terminal)",
                )
            )


def _const(view: ContractView, schema: Any) -> Any:
    if schema is None:
        return None
    version = view.flatten(schema)["properties"].get("schemaVersion", {})
    return view.resolve(version).get("const")


def _shown(identity: tuple[Any, ...]) -> str:
    names = (
        ("event", "job", "sequence", "status") if len(identity) == 4 else ("event", "job", "status")
    )
    return "(" + ", ".join(f"{n} {v}" for n, v in zip(names, identity, strict=True)) + ")"
