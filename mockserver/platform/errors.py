"""The one error type of the mock, and the interface document's status table it obeys.

Every refusal is an :class:`ApiError` raised wherever the rule lives; the dispatcher turns it into
the standard error body in one place. A code's status is read from the contract's error
responses, so a code can never leave under a status the table does not list for it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from mockserver.contract import default_contract


@cache
def statuses_by_code() -> dict[str, tuple[int, ...]]:
    table: dict[str, list[int]] = {}
    for status, codes in sorted(default_contract().error_codes_by_status.items()):
        for code in codes:
            table.setdefault(code, []).append(status)
    return {code: tuple(statuses) for code, statuses in table.items()}


class ApiError(Exception):
    """A refusal with a stable ``code``; its status comes from the status table.

    ``status`` need only be given for a code the table lists under several statuses
    (``upstream_error``: 500 or 502); for other codes it must agree with the table.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        status: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        allowed = statuses_by_code().get(code)
        if allowed is None:
            raise ValueError(f"error code {code!r} is not in the contract's status table")
        if status is None:
            status = allowed[0]
        elif status not in allowed:
            raise ValueError(f"error code {code!r} may not leave under status {status}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.details = details
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"success": False, "error": self.message, "code": self.code}
        if self.details is not None:
            body["details"] = self.details
        return body


def invalid_request(message: str, *, reason: str | None = None, **details: Any) -> ApiError:
    if reason is not None:
        details = {"reason": reason, **details}
    return ApiError("invalid_request", message, details=details or None)


def not_found(what: str) -> ApiError:
    return ApiError("not_found", f"{what} was not found")


def conflict(message: str, *, reason: str, **details: Any) -> ApiError:
    return ApiError("conflict", message, details={"reason": reason, **details})


def forbidden(message: str, *, reason: str, **details: Any) -> ApiError:
    return ApiError("forbidden", message, details={"reason": reason, **details})


def upstream_unavailable(message: str, *, retry_after: int, **details: Any) -> ApiError:
    return ApiError(
        "upstream_unavailable",
        message,
        details=details or None,
        headers={"Retry-After": str(retry_after)},
    )
