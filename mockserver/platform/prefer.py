"""Per-request answers: ``Prefer: code=<status>[, reason=<code>]`` makes one request answer
one of the errors its operation states, as Prism's ``Prefer: code=`` picks a response.

The answer is the error a fault of that status and code would give (platform/faults.py): the
standard body, ``Retry-After`` for ``rate_limited`` and ``upstream_unavailable`` and, for a 429,
the rate-limit headers saying the window is spent. It also carries ``Preference-Applied``
(RFC 7240), which the request journal shows. The handler never runs: nothing is charged,
created or changed.

Like a fault, a 401 or 5xx answer comes before authentication (a 401 needs no key, as an
outage needs none); every other status after authentication, the rate limit and the workspace
header, like the refusals it imitates, so the request needs a valid key and is counted.

The statuses and codes come from the contract: the operation's error responses (4xx and 5xx)
and each one's ``x-known-codes``. ``code=`` alone answers the first code listed for the status;
``reason=`` picks another. A status the operation does not state, or a code its status does not
list, is refused with ``400 invalid_request`` naming the ones it does, where validation would
refuse (after authentication and the rate limit: a 400 carries the rate-limit headers). Only
honoured while the control plane is on (``--no-control-plane`` ignores the header, as a
deployment would).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mockserver.contract import Contract, Operation
from mockserver.platform.errors import ApiError, invalid_request
from mockserver.platform.faults import error_answer

HEADER = "prefer"


@dataclass(frozen=True)
class Refused:
    """A ``Prefer`` the operation cannot honour: its 400 comes where validation's would, after
    authentication and the rate limit."""

    refusal: ApiError
    before_auth = False

    def error(self) -> ApiError:
        return self.refusal


@dataclass(frozen=True)
class Preferred:
    """The error one request asked for."""

    status: int
    code: str
    applied: str  # the Preference-Applied value: what was honoured

    @property
    def before_auth(self) -> bool:
        return self.status == 401 or self.status >= 500

    def error(self) -> ApiError:
        return error_answer(
            self.status,
            self.code,
            f"answered as asked by Prefer: {self.applied}",
            details={"reason": "prefer", "prefer": self.applied},
            headers={"Preference-Applied": self.applied},
        )


def requested(
    contract: Contract, op: Operation, headers: Mapping[str, str], *, control_plane: bool
) -> Preferred | Refused | None:
    """The answer the request's ``Prefer`` header asks for (None: no ``code=`` preference, or
    the control plane is off: ``control_plane`` false); :class:`Refused` when it asks for one
    the operation does not state."""
    value = headers.get(HEADER)
    if value is None or not control_plane:
        return None
    try:
        return _chosen(contract, op, value)
    except ApiError as refusal:
        return Refused(refusal)


def _chosen(contract: Contract, op: Operation, value: str) -> Preferred | None:
    preferences = parse(value)
    status_text, reason = preferences.get("code"), preferences.get("reason")
    if status_text is None:
        if reason is not None:
            raise invalid_request(
                "Prefer: reason= picks among the codes of a status: give code=<status> too",
                reason="prefer_without_code",
            )
        return None
    stated = stated_errors(contract, op)
    statuses = sorted(stated)
    if not status_text.isdigit() or int(status_text) not in stated:
        raise invalid_request(
            f"Prefer: code={status_text} is not an error status {op.operation_id} states (Prefer"
            " answers errors only); its error statuses: "
            + (", ".join(map(str, statuses)) or "none"),
            reason="unstated_status",
            operationId=op.operation_id,
            statuses=statuses,
        )
    status = int(status_text)
    codes = stated[status]
    code = codes[0] if reason is None else reason
    if code not in codes:
        raise invalid_request(
            f"Prefer: reason={reason} is not a code {op.operation_id} states for {status};"
            f" it states {', '.join(codes)}",
            reason="unstated_code",
            operationId=op.operation_id,
            status=status,
            codes=list(codes),
        )
    return Preferred(status, code, f"code={status}, reason={code}")


def parse(value: str) -> dict[str, str]:
    """``Prefer``'s preferences (RFC 7240: ``name[=value]``, separated by commas; a
    preference's parameters after ``;`` are read as preferences too), names in lower case,
    quotes taken off; the first of a repeated name wins."""
    found: dict[str, str] = {}
    for part in value.replace(";", ",").split(","):
        name, _, token = part.partition("=")
        name = name.strip().lower()
        if name:
            found.setdefault(name, token.strip().strip('"'))
    return found


def stated_errors(contract: Contract, op: Operation) -> dict[int, tuple[str, ...]]:
    """The error statuses ``op`` states, each with the codes the contract lists for it."""
    return {
        int(status): contract.known_codes(response)
        for status, response in op.definition.get("responses", {}).items()
        if status.isdigit() and int(status) >= 400
    }
