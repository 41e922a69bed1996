"""What the proxy found: one broken rule, seen in live traffic, and whose mistake it was.

A finding names the suite's check whose rule it judged (``rule``: the check's name, as a suite
failure names it, so that a proxy finding and a suite failure read alike; ``conformance rules``
maps each check to the interface document's rules). ``side`` says who broke it: the *client*
(a request the contract refuses), the *deployment* (a response, or a sequence of responses,
that breaks a stated rule) or the bundled *mock* (an answer it gave in the deployment's stead,
under ``--fallback-mock``). A finding keeps the exchange that showed it, and that exchange's
``x-request-id``, so that it can be found in the deployment's own logs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from conformance.target import Exchange

Side = Literal["client", "deployment", "mock"]
SIDES: tuple[Side, ...] = ("client", "deployment")
#: The side of what the bundled mock answered in the deployment's stead (``--fallback-mock``):
#: a broken rule there is the mock's, never the deployment's.
MOCK: Side = "mock"


@dataclass
class Finding:
    rule: str  # the check whose rule was broken (a name of conformance/checks)
    side: Side
    message: str  # what was seen, in one sentence
    operation_id: str | None = None
    request_id: str | None = None  # the exchange's x-request-id, when it carried one
    exchange: Exchange | None = None
    quote: str = ""  # the document's (or contract's) words for the rule
    seen_at: float = field(default_factory=time.time)  # epoch seconds

    @classmethod
    def of(
        cls, rule: str, side: Side, message: str, exchange: Exchange | None, quote: str = ""
    ) -> Finding:
        """A finding shown by ``exchange`` (its operation and ``x-request-id`` taken from it)."""
        return cls(
            rule,
            side,
            message,
            operation_id=exchange.operation_id if exchange is not None else None,
            request_id=exchange.header("x-request-id") if exchange is not None else None,
            exchange=exchange,
            quote=quote,
        )

    def line(self) -> str:
        """The one line printed as the finding happens."""
        where = self.operation_id or (self.exchange.path if self.exchange else "-")
        request = f" [x-request-id {self.request_id}]" if self.request_id else ""
        return f"FINDING {self.side} {self.rule} {where}: {self.message}{request}"

    def to_dict(self) -> dict[str, Any]:
        """The finding as the JSON report lists it."""
        return {
            "rule": self.rule,
            "side": self.side,
            "operationId": self.operation_id,
            "requestId": self.request_id,
            "message": self.message,
            "quote": self.quote,
            "seenAt": self.seen_at,
            "exchange": self.exchange.to_dict() if self.exchange is not None else None,
        }
