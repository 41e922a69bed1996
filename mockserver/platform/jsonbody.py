"""Reading a JSON request body, and refusing what the service does not represent.

The emulated API and the control plane read bodies through :class:`JsonReader`. A body is
refused with ``400 invalid_request`` and a ``details.reason`` naming the cause:

- ``unsupported_content_encoding``: a body sent with a ``Content-Encoding`` other than
  ``identity`` (gzip, br, ...): the mock reads bodies as sent, never decompressed, and says so
  before anything else reads the body (the contract states no 415, so it is a 400);
- ``unsupported_media_type``: a body sent as anything but ``application/json`` (or ``+json``);
- ``malformed_json``: not JSON (including ``NaN``, ``Infinity``), or not UTF-8 (a leading
  byte order mark is ignored, as RFC 8259 allows);
- ``nesting_too_deep``: arrays and objects nested deeper than ``x-limits.maxJsonNestingDepth``;
- ``lone_surrogate``: a string (or key) holding an unpaired UTF-16 surrogate escape such as
  ``\\ud800``, which no UTF-8 response could carry back;
- ``number_out_of_range``: an integer outside ``x-limits.integerRange`` or a number too large
  for a double (``1e400``).

Duplicate keys are not refused: the last one wins, as in most JSON parsers. The checks cost
nothing for ordinary bodies: the tree is walked only when the raw bytes could hold a problem.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from mockserver.platform.errors import ApiError, invalid_request
from mockserver.platform.validation import MISSING, pointer


class _Unrepresentable:
    """Stands in, while parsing, for a number the service cannot hold."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def unread_encoding(content_encoding: str) -> str | None:
    """A ``Content-Encoding`` this mock does not read (anything but ``identity``), as it is
    named in answers (lowercase, at most 40 characters); None when there is none."""
    encoding = content_encoding.strip().lower()
    return None if encoding in ("", "identity") else encoding[:40]


class JsonReader:
    """Parses bodies under the contract's limits (read once, at start-up)."""

    def __init__(self, limits: dict[str, Any]) -> None:
        self.max_depth = int(limits["maxJsonNestingDepth"])
        low, high = (int(v) for v in limits["integerRange"])
        self.low, self.high = low, high
        self._max_digits = max(len(str(low)), len(str(high)))

    def read(self, raw: bytes, headers: Mapping[str, str]) -> Any:
        """A request body: MISSING when none was sent, else JSON (400 for anything else).
        ``headers`` are the request's (lowercase names, as Starlette's)."""
        if not raw:
            return MISSING
        encoding = unread_encoding(headers.get("content-encoding", ""))
        if encoding is not None:
            raise invalid_request(
                f"the body is sent with Content-Encoding: {encoding}; this mock reads "
                "only unencoded (identity) bodies: send the JSON uncompressed, without "
                "Content-Encoding",
                reason="unsupported_content_encoding",
                contentEncoding=encoding,
            )
        if not raw.strip():
            return MISSING
        media_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type != "application/json" and not media_type.endswith("+json"):
            raise invalid_request(
                f"send the body as application/json, not {media_type or 'no content type'}",
                reason="unsupported_media_type",
            )
        return self.parse(raw)

    def parse(self, raw: bytes) -> Any:
        """The body as Python values, or an ``ApiError`` (400) saying why not."""
        flagged: list[bool] = []

        def parse_int(text: str) -> Any:
            if len(text) <= self._max_digits:
                value = int(text)
                if self.low <= value <= self.high:
                    return value
            flagged.append(True)
            return _Unrepresentable(text)

        def parse_float(text: str) -> Any:
            value = float(text)
            if math.isinf(value):
                flagged.append(True)
                return _Unrepresentable(text)
            return value

        try:
            # UTF-8 only (RFC 8259 8.1): no UTF-16 or UTF-32 guessing; a leading BOM is ignored.
            text = raw.decode("utf-8-sig")
            body = json.loads(
                text, parse_constant=_no_constants, parse_int=parse_int, parse_float=parse_float
            )
        except RecursionError:
            raise self._too_deep() from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise invalid_request(
                f"the body is not valid JSON: {exc}", reason="malformed_json"
            ) from None
        brackets = raw.count(b"[") + raw.count(b"{")
        escapes = b"\\u" in raw or b"\\U" in raw
        if flagged or escapes:
            self._check(body, surrogates=escapes)
        elif brackets > self.max_depth and not self._shallow(body):
            raise self._too_deep()
        return body

    def _shallow(self, body: Any) -> bool:
        """Whether no array or object lies deeper than the limit (level by level, no paths:
        ~5x quicker than :meth:`_check` on a 30 KB list answer the journal shows)."""
        level, depth = [body], 1
        while level := [v for v in level if isinstance(v, dict | list)]:
            if depth > self.max_depth:
                return False
            level = [i for v in level for i in (v.values() if isinstance(v, dict) else v)]
            depth += 1
        return True

    def _check(self, body: Any, *, surrogates: bool) -> None:
        """Walk the tree (iteratively): depth, surrogates, unrepresentable numbers."""
        stack: list[tuple[Any, int, tuple[Any, ...]]] = [(body, 1, ())]
        while stack:
            value, depth, path = stack.pop()
            if isinstance(value, dict):
                if depth > self.max_depth:
                    raise self._too_deep()
                for key, item in value.items():
                    if surrogates:
                        self._check_text(key, (*path, key))
                    stack.append((item, depth + 1, (*path, key)))
            elif isinstance(value, list):
                if depth > self.max_depth:
                    raise self._too_deep()
                stack.extend((item, depth + 1, (*path, i)) for i, item in enumerate(value))
            elif isinstance(value, str):
                if surrogates:
                    self._check_text(value, path)
            elif isinstance(value, _Unrepresentable):
                raise invalid_request(
                    f"the number at {pointer(list(path)) or 'the top'} is out of range: "
                    f"integers from {self.low} to {self.high}, and numbers a double can hold",
                    reason="number_out_of_range",
                    path=pointer(list(path)),
                )

    def _check_text(self, text: str, path: tuple[Any, ...]) -> None:
        if text.isascii():
            return
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            where = pointer([p if isinstance(p, int) else _safe(p) for p in path])
            raise invalid_request(
                f"the string at {where or 'the top'} holds an unpaired UTF-16 surrogate",
                reason="lone_surrogate",
                path=where,
            ) from None

    def _too_deep(self) -> ApiError:
        return invalid_request(
            f"the body nests arrays and objects deeper than {self.max_depth} levels",
            reason="nesting_too_deep",
            maxDepth=self.max_depth,
        )


def _safe(text: str) -> str:
    """A key fit for a message: unpaired surrogates replaced."""
    return text.encode("utf-8", "replace").decode("utf-8")
