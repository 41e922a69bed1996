"""The request journal: a bounded record of what the mock answered, newest last."""

from __future__ import annotations

from collections import deque
from typing import Any

JOURNAL_SIZE = 1000


class Journal:
    def __init__(self, size: int = JOURNAL_SIZE) -> None:
        self._entries: deque[dict[str, Any]] = deque(maxlen=size)

    def record(self, entry: dict[str, Any]) -> None:
        self._entries.append(entry)

    def entries(self) -> list[dict[str, Any]]:
        return list(self._entries)

    def clear(self) -> None:
        self._entries.clear()
