"""Injected faults: the next matching requests answer a chosen error, or are delayed.

A fault matches an ``operationId`` or a request path (``*`` wildcards allowed), and fires for
its next ``count`` matching requests (``null`` count: until cleared). A 401 or 5xx fault fires
before authentication, so a credential-store outage (``{"status": 503, "code":
"upstream_unavailable"}``) answers 503 with ``Retry-After`` to every key, valid or not, never 401.
Other 4xx faults fire after authentication and the rate limit, like the refusals they imitate,
so their responses carry the caller's rate-limit headers.

The credential store itself can be made unreachable (:class:`CredentialStoreOutage`, control
operation ``PUT /_mock/credential-store``): authentication then answers every well-formed bearer
key, valid or not, with ``503 upstream_unavailable`` and ``Retry-After`` (platform/auth.py); a
request without a key, or with a malformed header, still answers 401 (the store is not asked).
"""

from __future__ import annotations

import dataclasses
import fnmatch
from dataclasses import dataclass, field
from typing import Any

from mockserver.platform.errors import ApiError

DEFAULT_RETRY_AFTER = {429: 30, 503: 5}


@dataclass
class Fault:
    id: str
    operation_id: str | None
    path: str | None
    status: int | None
    code: str | None
    count: int | None
    retry_after: int | None
    delay_ms: int
    message: str | None
    fired: int = 0

    def matches(self, operation_id: str | None, path: str) -> bool:
        if self.operation_id is not None:
            return self.operation_id == operation_id
        return self.path is not None and fnmatch.fnmatchcase(path, self.path)

    @property
    def before_auth(self) -> bool:
        return self.status is not None and (self.status == 401 or self.status >= 500)

    def error(self) -> ApiError | None:
        if self.status is None or self.code is None:
            return None
        return error_answer(
            self.status,
            self.code,
            self.message or f"injected fault: {self.code}",
            retry_after=self.retry_after,
            details={"reason": "injected_fault", "faultId": self.id},
        )

    def view(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "match": {"operationId": self.operation_id}
            if self.operation_id
            else {"path": self.path},
            "status": self.status,
            "code": self.code,
            "remaining": self.count,
            "fired": self.fired,
            "retryAfter": self.retry_after,
            "delayMs": self.delay_ms,
        }


def error_answer(
    status: int,
    code: str,
    message: str,
    *,
    retry_after: int | None = None,
    details: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> ApiError:
    """The error a fault (or a ``Prefer: code=``, platform/prefer.py) answers: ``code`` under
    ``status``, with ``Retry-After`` when given (``rate_limited`` and ``upstream_unavailable``
    get one by default). A 429 also gets its rate-limit headers after authentication
    (:func:`with_rate_limit`)."""
    headers = dict(headers or {})
    if retry_after is None and (status, code) in (
        (429, "rate_limited"),
        (503, "upstream_unavailable"),
    ):
        retry_after = DEFAULT_RETRY_AFTER[status]
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return ApiError(code, message, status=status, headers=headers, details=details)


def with_rate_limit(error: ApiError, reset_seconds: int) -> ApiError:
    """An answered 429 says the window is spent: ``x-ratelimit-remaining: 0``, and a reset no
    sooner than its ``Retry-After`` (the caller's own window's reset when it has none)."""
    if error.status == 429:
        retry = error.headers.get("Retry-After", str(reset_seconds))
        error.headers.update({"x-ratelimit-remaining": "0", "x-ratelimit-reset": retry})
    return error


@dataclass
class CredentialStoreOutage:
    """The credential store cannot be reached, until cleared; ``Retry-After`` seconds."""

    retry_after: int = DEFAULT_RETRY_AFTER[503]
    fired: int = 0

    def view(self) -> dict[str, Any]:
        return {"reachable": False, "retryAfter": self.retry_after, "fired": self.fired}


@dataclass
class Faults:
    rules: list[Fault] = field(default_factory=list)
    credential_store: CredentialStoreOutage | None = None  # None: reachable
    _next: int = 0

    @property
    def active(self) -> bool:
        """Whether any fault or outage may answer a request."""
        return bool(self.rules) or self.credential_store is not None

    def add(self, spec: dict[str, Any]) -> Fault:
        """Add a fault from the control plane's body (already validated there)."""
        self._next += 1
        match = spec["match"]
        fault = Fault(
            id=f"flt_{self._next}",
            operation_id=match.get("operationId"),
            path=match.get("path"),
            status=spec.get("status"),
            code=spec.get("code"),
            count=spec.get("count", 1),
            retry_after=spec.get("retryAfter"),
            delay_ms=spec.get("delayMs", 0),
            message=spec.get("message"),
        )
        if fault.status is not None and fault.code is not None:
            fault.error()  # refuses a code under a status the table does not list for it
        self.rules.append(fault)
        return fault

    def take(self, operation_id: str | None, path: str) -> Fault | None:
        """The first live fault matching a request, used up by one."""
        for fault in self.rules:
            if fault.matches(operation_id, path):
                fault.fired += 1
                if fault.count is not None:
                    fault.count -= 1
                    if fault.count <= 0:
                        self.rules.remove(fault)
                return fault
        return None

    def remove(self, fault_id: str) -> bool:
        """Remove one fault; False when there is none with that id (any more)."""
        kept = [rule for rule in self.rules if rule.id != fault_id]
        removed = len(kept) < len(self.rules)
        self.rules[:] = kept
        return removed

    def clear(self) -> None:
        self.rules.clear()
        self.credential_store = None

    def dump(self) -> dict[str, Any]:
        """The faults as JSON (a store keeps them, and shares them between processes)."""
        outage = self.credential_store
        return {
            "rules": [dataclasses.asdict(rule) for rule in self.rules],
            "credentialStore": dataclasses.asdict(outage) if outage is not None else None,
            "next": self._next,
        }

    def load(self, dump: dict[str, Any]) -> None:
        """Take the faults :meth:`dump` gave (from a store)."""
        self.rules[:] = [Fault(**rule) for rule in dump["rules"]]
        outage = dump["credentialStore"]
        self.credential_store = CredentialStoreOutage(**outage) if outage is not None else None
        self._next = dump["next"]
