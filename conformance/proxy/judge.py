"""Judging one exchange the proxy forwarded: the request, the response, and the sequences.

:class:`Judge` turns what passed (:class:`~conformance.proxy.forward.Seen`) into the suite's
:class:`~conformance.target.Exchange` (credentials masked, ``x-secret`` fields redacted, a
compressed body decoded for judging), then judges it:

* **the request** against the contract under the profile (conformance/requestcheck.py): a
  request that breaks a stated constraint is a *client* finding, named for the check whose rule
  it is (``idempotency-key-required`` for a missing key, else ``schema-negative``); when the
  deployment accepted it (2xx) that is also a *deployment* finding of the same check;
* **the response**, with every observer of the suite (``@observer`` checks: the envelope,
  ``x-request-id``, the rate-limit headers, ``Retry-After``, status/code pairs, the response
  schema, no unprovoked 5xx): each failure is a *deployment* finding of that check;
* **the sequences** (conformance/proxy/sequences.py).

Only requests below the contract's path prefix (``/v1``) are judged; the rest (the bundled
mock's control plane, a health check) are forwarded and counted, not judged. An exchange
whose body was longer than the proxy keeps, or whose encoding it cannot decode, has that body
left unjudged (its other rules are judged). It keeps, per check, how many judgements it made
(for rule coverage) and, per operation, how many exchanges and findings.

An exchange the bundled mock answered in the deployment's stead (``--fallback-mock``,
conformance/proxy/fallback.py) is judged as the client saw it, but nothing of it is counted as
the deployment's: its response and sequence findings are the *mock*'s (side ``mock``), its
sequences are judged in a world of their own (the mock's records are not the deployment's),
and its judgements count neither in the checks' tallies nor in rule coverage. A client's
mistake there is still the client's. Each fallback is counted by operation and by what the
upstream said (an operation the deployment lacks), and so is each exchange that could not fall
back, with why.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from conformance.checks import all_checks
from conformance.checks.limits import _judge_shortfall
from conformance.checks.pagination import _stream_pointer
from conformance.checks.schema import _carries_deprecated, _judge_deprecated
from conformance.context import Context, Session
from conformance.contract import Contract, Operation
from conformance.outcomes import CheckResult
from conformance.proxy.decoding import decoded
from conformance.proxy.findings import MOCK, SIDES, Finding
from conformance.proxy.forward import Seen
from conformance.proxy.redact import (
    API_KEY,
    REDACTED,
    caller,
    masked_headers,
    redacted_body,
    secret_fields,
    secret_values,
)
from conformance.proxy.sequences import (
    CreatedReadable,
    CursorWalk,
    DeprecatedFields,
    IdempotentReplay,
    JobLife,
    Observed,
    PaymentRequired,
    SequenceJudge,
    digest,
    world_change,
)
from conformance.target import Exchange, path_below

NOT_KEPT_WHOLE = "a body longer than the proxy keeps, or in an encoding it cannot decode"


@dataclass
class OperationCounts:
    exchanges: int = 0
    findings: Counter[str] = field(default_factory=Counter)  # side -> findings
    fallbacks: int = 0  # exchanges the bundled mock answered

    def to_dict(self) -> dict[str, Any]:
        counts = {"exchanges": self.exchanges, **{side: self.findings[side] for side in SIDES}}
        if self.fallbacks:
            counts |= {"fallbacks": self.fallbacks, MOCK: self.findings[MOCK]}
        return counts


class Judge:
    """Judges exchanges one at a time, in the order given (one thread)."""

    def __init__(self, contract: Contract, upstream: str) -> None:
        self.contract = contract
        self.base_path = urlsplit(upstream).path.rstrip("/")
        self.session = Session(target=None, contract=contract, seed=0)  # type: ignore[arg-type]
        checks = all_checks()
        self.checks = {c.name: c for c in checks}
        self.observers = [c for c in checks if c.observe is not None]
        self.results: dict[str, CheckResult] = {}  # check -> its judgements (failures counted)
        self.secrets = secret_fields(contract.document)
        self.prefix = _prefix(contract)
        self.sequences = self._world()
        self.operations: dict[str, OperationCounts] = {}
        self.index = 0
        self.judged = 0
        self.not_judged: Counter[str] = Counter()  # why an exchange (or its body) was not
        self.failed: Counter[str] = Counter()  # check -> deployment findings
        self._carries: dict[str, bool] = {}  # operation -> its success body can carry one
        self._streams: dict[str, list[str] | None] = {}  # operation -> where its nextAfter is
        self.fallbacks: Counter[tuple[str, int]] = Counter()  # (operation, upstream status)
        self.fell_back = 0  # exchanges the mock answered, in all
        self.not_fallen_back: Counter[tuple[str, int, str]] = Counter()  # (.., why)
        self._mock_sequences: list[SequenceJudge] | None = None  # the mock's world
        self._mocked = False  # judging an exchange the mock answered

    # -- what passed, as the suite's exchange ----------------------------------------------------

    def exchange(self, seen: Seen) -> Exchange:
        self.index += 1
        request_headers = masked_headers(seen.request_headers)
        response_headers = masked_headers(seen.response_headers)
        body = decoded(seen.response_body, response_headers.get("content-encoding"))
        request_body = seen.request_body if seen.request_whole else b""
        return Exchange(
            index=self.index,
            method=seen.method,
            url=seen.url,
            request_headers=request_headers,
            request_body=redacted_body(request_body, self.secrets),
            status=seen.status,
            response_headers=response_headers,
            response_body=redacted_body(body, self.secrets) if seen.response_whole else b"",
            elapsed=seen.elapsed,
            operation_id=None,
            auth=_auth(request_headers, seen.status),
            masks={},
            base_path=self.base_path,
        )

    # -- judging --------------------------------------------------------------------------------

    def judge(self, seen: Seen) -> tuple[Exchange, list[Finding]]:
        exchange = self.exchange(seen)
        path = exchange.path
        mark = seen.fallback
        self._mocked = mark is not None and mark.answered
        if not (path == self.prefix or path.startswith(self.prefix + "/")):
            change = world_change(seen.method, path_below(seen.url, self.base_path))
            if change is not None:
                for sequence in self.sequences:
                    sequence.world(change)
            self.not_judged["outside the contract's paths"] += 1
            return exchange, []
        self.judged += 1
        if mark is not None and mark.answered:
            self.fallbacks[(mark.operation_id, mark.upstream_status)] += 1
            self.fell_back += 1
        elif mark is not None:
            self.not_fallen_back[(mark.operation_id, mark.upstream_status, mark.why)] += 1
        op = self.contract.full.find(seen.method, path)
        if op is not None and self.contract.applicable(op):
            exchange.operation_id = op.operation_id
            held: Operation | None = self.contract.held.operations.get(op.operation_id)
        else:
            held = None
        counts = self.operations.setdefault(
            exchange.operation_id or "(no operation)", OperationCounts()
        )
        counts.exchanges += 1
        counts.fallbacks += self._mocked
        whole = seen.request_whole and seen.response_whole
        if not whole or (seen.response_body and not exchange.response_body):
            self.not_judged[NOT_KEPT_WHOLE] += 1
            whole = False
        findings: list[Finding] = []
        if held is not None and seen.request_whole:
            findings += self._request(held, seen, exchange)
        valid = not any(f.side == "client" for f in findings)
        if whole:
            findings += self._observe(exchange)
            if exchange.status == 402 and exchange.code == "insufficient_credits":
                findings += self._shortfall(exchange)
            if held is not None and exchange.status == 200:
                findings += self._stream(held, exchange)
            observed = Observed(
                exchange,
                held,
                caller(seen.request_headers),
                idempotency_key=exchange.request_headers.get("idempotency-key"),
                body_digest=digest(seen.request_body),
                valid=valid and seen.request_whole,
            )
            for sequence in self._mock_world() if self._mocked else self.sequences:
                for check, found in sequence.see(observed).items():
                    self._tally(check, found)
                    findings += found
        for finding in findings:
            if self._mocked and finding.side == "deployment":
                finding.side = MOCK
            counts.findings[finding.side] += 1
        return exchange, findings

    def _world(self) -> list[SequenceJudge]:
        """A world's sequence judges (what they remember is that world's)."""
        return [
            IdempotentReplay(),
            CursorWalk(self.contract),
            JobLife(self.contract),
            DeprecatedFields(self._deprecated),
            PaymentRequired(),
            CreatedReadable(),
        ]

    def _mock_world(self) -> list[SequenceJudge]:
        """The sequence judges of the exchanges the bundled mock answered."""
        if self._mock_sequences is None:
            self._mock_sequences = self._world()
        return self._mock_sequences

    def _request(self, op: Operation, seen: Seen, exchange: Exchange) -> list[Finding]:
        headers = dict(seen.request_headers)
        violations = self.session.request_checker.violations(
            op, seen.url, headers, seen.request_body
        )
        if not violations:
            return []
        missing_key = any(
            v.location == "header" and v.name.lower() == "idempotency-key" for v in violations
        )
        check = "idempotency-key-required" if missing_key else "schema-negative"
        what = "; ".join(self._said(v, seen.request_body) for v in violations[:3])
        quote = "A request that breaks a stated constraint is refused with 400 invalid_request."
        found = [
            Finding.of(
                check,
                "client",
                f"the request breaks the contract ({what}); answered {exchange.answered}",
                exchange,
                quote,
            )
        ]
        accepted = 200 <= exchange.status < 300
        if accepted:
            found.append(
                Finding.of(
                    check,
                    "deployment",
                    f"a request that breaks the contract ({what}) was accepted: "
                    f"{exchange.answered}; 400 expected",
                    exchange,
                    quote,
                )
            )
        self._tally(check, found[1:])
        return found

    def _said(self, violation: Any, body: bytes) -> str:
        """A violation in words, never with a secret field's value."""
        name = violation.name.rsplit("/", 1)[-1]
        if violation.location == "body" and name in self.secrets:
            return f"body {violation.name}: breaks its schema (a secret: value not shown)"
        text = f"{violation.location} {violation.name}: {violation.message}".replace("  ", " ")
        for value in secret_values(body, self.secrets):
            text = text.replace(value, REDACTED)
        return text

    def _shortfall(self, exchange: Exchange) -> list[Finding]:
        """A 402 ``insufficient_credits`` gives the shortfall (``limits-payment-required``)."""
        check = self.checks["limits-payment-required"]
        result = CheckResult(check.name, check.family, check.description)
        schema = self.contract.held.document["components"]["schemas"].get("CreditShortfall")
        quote = self.contract.held.quote("#/components/responses/PaymentRequired")
        _judge_shortfall(Context(self.session, check, result), exchange, schema, quote)
        found = [
            Finding.of(check.name, "deployment", f.message, exchange, f.quote)
            for f in result.failures
        ]
        if result.passed or found:
            self._tally(check.name, found)
        return found

    def _stream(self, op: Operation, exchange: Exchange) -> list[Finding]:
        """An ordered stream never goes backwards (``pagination-ordered-streams``): its
        ``nextAfter`` is not before the ``after`` sent, and its items' ``sequence`` rise, each
        above the ``after`` sent."""
        check = self.checks["pagination-ordered-streams"]
        if op.method != "GET" or op.parameter("after", "query") is None:
            return []
        sent = dict(parse_qsl(urlsplit(exchange.url).query)).get("after", "")
        after = int(sent) if sent.isdigit() else None
        if op.operation_id not in self._streams:
            ctx = Context(self.session, check, CheckResult(check.name, check.family, ""))
            self._streams[op.operation_id] = _stream_pointer(ctx, op)
        pointer = self._streams[op.operation_id]
        if pointer is None:
            return []
        body: Any = exchange.json()
        node = body
        for part in pointer:
            node = node.get(part) if isinstance(node, dict) else None
        problems = []
        if node is not None and after is not None and (not isinstance(node, int) or node < after):
            problems.append(f"nextAfter went from after={after} to {node!r}")
        field_name = self.contract.held.items_field(op)
        items = body.get(field_name) if isinstance(body, dict) and field_name else None
        numbers = [i.get("sequence") for i in items or [] if isinstance(i, dict)]
        numbers = [n for n in numbers if isinstance(n, int)]
        floor = after if after is not None else 0
        if any(b <= a for a, b in zip([floor, *numbers], numbers, strict=False)):
            problems.append(f"the sequences read {numbers[:8]} after {floor}")
        if node is None and not numbers:
            return []
        found = (
            [
                Finding.of(
                    check.name,
                    "deployment",
                    f"{'; '.join(problems)}: an ordered stream never goes backwards",
                    exchange,
                    self.contract.held.quote(_pointer(op)) or "An ordered stream never goes back.",
                )
            ]
            if problems
            else []
        )
        self._tally(check.name, found)
        return found

    def _observe(self, exchange: Exchange) -> list[Finding]:
        findings = []
        for check in self.observers:
            result = CheckResult(check.name, check.family, check.description)
            ctx = Context(self.session, check, result)
            try:
                assert check.observe is not None
                check.observe(ctx, exchange)
            except Exception as exc:  # a crashing rule is counted, never fatal to the proxy
                self.not_judged[f"{check.name} crashed: {exc!r}"[:200]] += 1
                continue
            found = [
                Finding.of(check.name, "deployment", f.message, exchange, f.quote)
                for f in result.failures
            ]
            self._tally(check.name, found, passed=result.passed)
            findings += found
        return findings

    def _deprecated(
        self, op: Operation, exchange: Exchange, renders: set[str]
    ) -> tuple[int, list[Finding]]:
        carries = self._carries.get(op.operation_id)
        if carries is None:
            schema = self.contract.held.success_schema(op)
            carries = schema is not None and _carries_deprecated(self.contract.held, schema, set())
            self._carries[op.operation_id] = carries
        if not carries:
            return 0, []
        check = self.checks["schema-deprecated-fields"]
        result = CheckResult(check.name, check.family, check.description)
        judged, _ = _judge_deprecated(Context(self.session, check, result), op, exchange, renders)
        found = [
            Finding.of(check.name, "deployment", f.message, exchange, f.quote)
            for f in result.failures
        ]
        return judged, found

    def _tally(self, name: str, found: list[Finding], passed: int | None = None) -> None:
        """Count one judgement of ``name`` (or ``passed`` passes): its deployment findings
        failed, the rest passed (rule coverage counts both). Nothing of an exchange the mock
        answered is counted."""
        if self._mocked:
            return
        result = self.results.get(name)
        if result is None:
            check = self.checks[name]
            result = self.results[name] = CheckResult(name, check.family, check.description)
            result.ran = True
        failed = [f for f in found if f.side == "deployment"]
        result.passed += (1 if not failed else 0) if passed is None else passed
        result.requests += 1
        self.failed[name] += len(failed)


def _pointer(op: Operation) -> str:
    """The JSON Pointer of an operation in the contract (for quoting its description)."""
    path = op.path.replace("~", "~0").replace("/", "~1")
    return f"#/paths/{path}/{op.method.lower()}"


def _prefix(contract: Contract) -> str:
    """The path prefix every operation of the contract shares (``/v1``)."""
    paths = [op.path.split("/") for op in contract.full.operations.values()]
    common: list[str] = []
    for parts in zip(*paths, strict=False):
        if len(set(parts)) != 1 or parts[0].startswith("{"):
            break
        common.append(parts[0])
    return "/".join(common) or "/"


def _auth(headers: dict[str, str], status: int) -> str:
    """Who the suite's observers take the caller for: a keyed caller (``primary``), one whose
    key was refused (``unknown``), or none."""
    if API_KEY not in headers.get("authorization", "") and "x-api-key" not in headers:
        return "none"
    return "unknown" if status == 401 else "primary"
