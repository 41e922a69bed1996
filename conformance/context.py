"""What a check sees while it runs.

:class:`Session` holds what the checks of one run share (the target, the contract under the
profile, the generator, the id pool, the receiver, what was learned: operations whose capability
is unavailable). :class:`Context` is one check's handle on it: it records passes, skips (with a
reason), failures (with the rule, the contract's words, the exchange and the seed) and warnings.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from conformance.contract import Contract, Operation
from conformance.generation import Generator, Prepared, prepare
from conformance.idpool import IdPool, own_ids
from conformance.outcomes import CheckResult, Failure, Warning_
from conformance.passes import WHOLE, share
from conformance.polling import DEFAULT_JOB_WAIT
from conformance.receiver import Receiver
from conformance.requestcheck import RequestChecker
from conformance.responses import ResponseChecker
from conformance.skips import (
    CAPABILITY_UNAVAILABLE,
    INFERRED_OPERATION,
    NEEDS_CONTROL,
    NEEDS_CREATE,
    NEEDS_SPEND,
    Skip,
)
from conformance.target import Exchange, Target

if TYPE_CHECKING:
    from conformance.checks import Check


@dataclass
class MockIdentity:
    """Who the primary key is in the bundled mock's fixtures (for control-plane calls)."""

    workspace: str
    member: str


@dataclass
class Session:
    target: Target
    contract: Contract
    seed: int
    allow_spend: bool = False
    allow_faults: bool = False  # --allow-faults: faults may be injected through a known hook
    mock: MockIdentity | None = None
    receiver_listen: str = "127.0.0.1:0"
    receiver_url: str | None = None
    webhook_wait: float = 60.0
    job_wait: float = DEFAULT_JOB_WAIT  # --job-wait: how long a check polls a deployment's job
    long_video_url: str | None = None  # a video longer than the remix url source limit
    unavailable: set[str] = field(default_factory=set)
    prepared: dict[str, Any] = field(default_factory=dict)  # check -> what its prepare answered
    _generator: Generator | None = None
    _ids: IdPool | None = None
    _receiver: Receiver | None = None
    _checkers: dict[str, Any] = field(default_factory=dict)

    @property
    def profile(self) -> str:
        return self.contract.profile

    @property
    def allow_writes(self) -> bool:
        return self.allow_spend or self.mock is not None

    @property
    def generator(self) -> Generator:
        if self._generator is None:
            self._generator = Generator(self.contract, self.seed)
        return self._generator

    @property
    def ids(self) -> IdPool:
        if self._ids is None:
            self._ids = IdPool(self.target, self.contract.full)
        return self._ids

    @property
    def responses(self) -> ResponseChecker:
        if "responses" not in self._checkers:
            self._checkers["responses"] = ResponseChecker(self.contract.document, self.profile)
        return self._checkers["responses"]

    @property
    def request_checker(self) -> RequestChecker:
        if "requests" not in self._checkers:
            self._checkers["requests"] = RequestChecker(self.contract.held)
        return self._checkers["requests"]

    def receiver(self) -> Receiver:
        if self._receiver is None:
            self._receiver = Receiver(self.receiver_listen, self.receiver_url).start()
            self._receiver.on_wait = self.target.announce
        return self._receiver

    def close(self) -> None:
        if self._receiver is not None:
            self._receiver.stop()


T = TypeVar("T")


class Context:
    """One check's view of the session, and where its outcomes are recorded. One context
    serves a check's passes (conformance/plan.py): ``phase`` says which pass runs, ``kept``
    holds what a check keeps from one pass for the next."""

    def __init__(self, session: Session, check: Check, result: CheckResult) -> None:
        self.session = session
        self.check = check
        self.result = result
        self.phase = WHOLE
        self.kept: dict[str, Any] = {}
        self._seen: dict[tuple[Any, ...], Failure] = {}
        self._warned: dict[tuple[Any, ...], Warning_] = {}

    def share(self, items: Iterable[T], key: str = "") -> Iterator[T]:
        """The items of ``items`` (a deep check's operations, in a fixed order) this pass
        covers: all of them, except in a bounded run, whose breadth pass covers them up to the
        check's first judgement and whose depth pass covers the rest (see :func:`plan.share`)."""
        return share(list(items), self.phase, self.kept, key, lambda: self.result.judgements)

    # -- shortcuts ------------------------------------------------------------------------------

    @property
    def target(self) -> Target:
        return self.session.target

    @property
    def contract(self) -> Contract:
        return self.session.contract

    @property
    def held(self) -> Any:
        return self.session.contract.held

    @property
    def profile(self) -> str:
        return self.session.profile

    @property
    def seed(self) -> int:
        return self.session.seed

    @property
    def control(self) -> Any:
        return self.session.target.control

    @property
    def prepared(self) -> Any:
        """What this check's ``prepare`` returned (None: it has none)."""
        return self.session.prepared.get(self.check.name)

    def operation(self, operation_id: str) -> Operation:
        return self.contract.held.operations[operation_id]

    # -- outcomes -------------------------------------------------------------------------------

    def passed(self, n: int = 1) -> None:
        self.result.passed += n

    def skip(self, reason: str, n: int = 1) -> None:
        self.result.skipped[reason] += n

    def fail(
        self,
        rule: str,
        message: str,
        *,
        exchange: Exchange | None = None,
        quote: str = "",
        subject: str = "",
        key: tuple[Any, ...] | None = None,
        **extra: Any,
    ) -> None:
        """Record a broken rule; failures with the same ``key`` are counted once, shown once."""
        if not subject and exchange is not None:
            subject = exchange.operation_id or f"{exchange.method} {exchange.path}"
        dedupe = (rule, *key) if key is not None else None
        if dedupe is not None and dedupe in self._seen:
            self._seen[dedupe].occurrences += 1
            return
        failure = Failure(
            check=self.check.name,
            rule=rule,
            message=message,
            quote=quote,
            subject=subject,
            exchange=exchange,
            seed=self.seed,
            extra=extra,
        )
        self.result.failures.append(failure)
        if dedupe is not None:
            self._seen[dedupe] = failure

    def warn(self, message: str, *, subject: str = "", key: tuple[Any, ...] | None = None) -> None:
        if key is not None and key in self._warned:
            self._warned[key].occurrences += 1
            return
        warning = Warning_(self.check.name, message, subject)
        self.result.warnings.append(warning)
        if key is not None:
            self._warned[key] = warning

    def expect(
        self, condition: bool, rule: str, message: str | Callable[[], str], **kwargs: Any
    ) -> bool:
        """Pass when ``condition`` holds, else fail with ``rule``; answer the condition. A
        ``message`` that costs something to write (a body shown) may be given as a function:
        it is called only on failure."""
        if condition:
            self.passed()
        else:
            self.fail(rule, message() if callable(message) else message, **kwargs)
        return condition

    # -- gating ---------------------------------------------------------------------------------

    def why_not_send(self, op: Operation) -> str | None:
        """Why a valid request to ``op`` may not be sent in this run (None: it may)."""
        if not self.contract.applicable(op):
            return INFERRED_OPERATION
        if op.operation_id in self.session.unavailable:
            return CAPABILITY_UNAVAILABLE
        if self.session.allow_writes:
            return None
        if op.paid:
            return NEEDS_SPEND
        if op.creating:
            return NEEDS_CREATE
        return None

    def unavailable(self, exchange: Exchange) -> bool:
        """True (and the operation remembered, a skip recorded) on 503 capability_unavailable."""
        if exchange.capability_unavailable:
            if exchange.operation_id:
                self.session.unavailable.add(exchange.operation_id)
            self.skip(CAPABILITY_UNAVAILABLE)
            return True
        return False

    def require_control(self) -> Any:
        if self.control is None or self.session.mock is None:
            raise Skip(NEEDS_CONTROL)
        return self.control

    # -- requests -------------------------------------------------------------------------------

    def request(self, method: str, path: str, **kwargs: Any) -> Exchange:
        return self.target.request(method, path, **kwargs)

    def call(
        self,
        op: Operation,
        *,
        path_parameters: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> Exchange:
        """Send a request to ``op`` (its path template filled in)."""
        path = op.path
        for name, value in (path_parameters or {}).items():
            path = path.replace("{" + name + "}", _segment(value))
        return self.target.request(op.method, path, operation_id=op.operation_id, **kwargs)

    def probe(self, op: Operation, **sample_options: Any) -> Exchange | None:
        """Generate one request to ``op`` (see :meth:`sample`) and send it.

        None, with the reason recorded as a skip, when no request could be generated or the
        operation answered 503 ``capability_unavailable``.
        """
        prepared = self.sample(op, **sample_options)
        if prepared is None:
            self.skip("no request could be generated")
            return None
        exchange = self.send(prepared, op)
        return None if self.unavailable(exchange) else exchange

    def send(self, prepared: Prepared, op: Operation, **kwargs: Any) -> Exchange:
        return self.target.send(
            prepared.method,
            prepared.url,
            prepared.headers,
            prepared.body,
            operation_id=op.operation_id,
            **kwargs,
        )

    def sample(
        self,
        op: Operation,
        *,
        salt: str = "",
        real_ids: bool = True,
        path_parameters: dict[str, str] | None = None,
        auth: str = "primary",
        idempotency_key: str | None = None,
        body_update: Callable[[Any], Any] | None = None,
    ) -> Prepared | None:
        """One valid-looking request to ``op``: generated, with real ids where they are known."""
        if path_parameters is None and real_ids and op.path_parameters:
            path_parameters = self.session.ids.path_parameters(op, auth)
        case = self.session.generator.one_positive(op, salt=salt, path_parameters=path_parameters)
        if case is None:
            return None
        prepared = prepare(case, self.target.base_url)
        if prepared is not None and isinstance(case.body, dict):
            body = copy.deepcopy(case.body)  # generated cases are shared: never changed
            self._fix_body(body)
            if body_update is not None:
                body = body_update(body) or body
            prepared.body = json.dumps(body, ensure_ascii=False).encode("utf-8")
        if prepared is not None and idempotency_key is not None:
            prepared.headers = {
                k: v for k, v in prepared.headers.items() if k.lower() != "idempotency-key"
            }
            prepared.headers["Idempotency-Key"] = idempotency_key
        return prepared

    def _fix_body(self, body: dict[str, Any]) -> None:
        # Generated work is filed under a project the workspace owns (one created for the check
        # where it has none and writes are allowed); callbacks go nowhere.
        body.pop("callbackUrl", None)
        body.pop("callbackSecret", None)
        if "projectId" in body:
            ids = own_ids(self, "projectId")
            if ids:
                body["projectId"] = ids[0]

    @staticmethod
    def new_key() -> str:
        return f"conformance-{uuid.uuid4().hex}"


def _segment(value: str) -> str:
    from urllib.parse import quote

    return quote(str(value), safe="")
