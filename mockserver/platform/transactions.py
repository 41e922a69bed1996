"""Transactions over the world's JSON tree: a request's changes are all kept or none are.

The world holds its state as dicts and lists; handlers change them in place. To make every
request one transaction without copying the world, the tree is built of :class:`TrackedDict` and
:class:`TrackedList`: subclasses whose *mutating* methods write an undo entry into the
transaction open in the current context (reads are the builtin ones, at full speed).

- :func:`transaction` opens one (or joins the one already open in this context). Leaving it
  normally commits; leaving it by any exception (an ``ApiError``, a bug, a cancelled task)
  replays the undo entries backwards, so the tree is exactly as it was, insertion order
  included.
- A plain ``dict`` or ``list`` placed into the tree during a transaction (a new record, say) is
  turned into tracked containers at commit, when no handler holds it any more; outside a
  transaction (start-up, autocommit) it is turned at once.
- :func:`plain` copies a tree back into builtin containers (snapshots, deep copies).

Transactions live in a :class:`~contextvars.ContextVar`, so concurrent asyncio tasks each
have their own. A task that awaits in the middle of one lets other tasks run: handlers that
must wait (a DNS check) do so before their first change.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import Any, SupportsIndex

_ABSENT: Any = object()


class Transaction:
    """The undo log of one open transaction, and the slots whose new values need adopting."""

    __slots__ = ("_copied", "adopt_dicts", "adopt_lists", "open", "undo")

    def __init__(self) -> None:
        self.undo: list[tuple[Any, ...]] = []
        self.adopt_dicts: list[tuple[dict[Any, Any], Any]] = []
        self.adopt_lists: list[list[Any]] = []
        self._copied: set[int] = set()  # lists (by id) whose whole content is already saved
        self.open = True

    # -- logging -------------------------------------------------------------------------

    def log_set(self, container: dict[Any, Any], key: Any) -> None:
        self.undo.append(("set", container, key, dict.get(container, key, _ABSENT)))
        self.adopt_dicts.append((container, key))

    def log_dict(self, container: dict[Any, Any]) -> None:
        """Before a removal: keep the whole dict, so a rollback restores its order too."""
        self.undo.append(("dict", container, dict(container)))

    def log_list(self, container: list[Any]) -> None:
        if id(container) not in self._copied:
            self._copied.add(id(container))
            self.undo.append(("list", container, list(container)))
            self.adopt_lists.append(container)

    # -- ending ----------------------------------------------------------------------------

    def rollback(self) -> None:
        for entry in reversed(self.undo):
            kind, container = entry[0], entry[1]
            if kind == "set":
                if entry[3] is _ABSENT:
                    dict.pop(container, entry[2], None)
                else:
                    dict.__setitem__(container, entry[2], entry[3])
            elif kind == "dict":
                dict.clear(container)
                dict.update(container, entry[2])
            else:
                list.__setitem__(container, slice(None), entry[2])
        self._end()

    def commit(self) -> None:
        memo: dict[int, Any] = {}
        for container, key in self.adopt_dicts:
            value = dict.get(container, key, _ABSENT)
            if type(value) in (dict, list):
                dict.__setitem__(container, key, adopt(value, memo))
        for container in self.adopt_lists:
            for index, value in enumerate(container):
                if type(value) in (dict, list):
                    list.__setitem__(container, index, adopt(value, memo))
        self._end()

    def _end(self) -> None:
        self.open = False
        self.undo.clear()
        self.adopt_dicts.clear()
        self.adopt_lists.clear()
        self._copied.clear()


_current: ContextVar[Transaction | None] = ContextVar("mockserver_transaction", default=None)


def active() -> Transaction | None:
    """The transaction open in this context, if any."""
    tx = _current.get()
    return tx if tx is not None and tx.open else None


@contextlib.contextmanager
def transaction() -> Iterator[Transaction]:
    """Open a transaction, or join the one already open in this context."""
    joined = active()
    if joined is not None:
        yield joined
        return
    tx = Transaction()
    token = _current.set(tx)
    try:
        yield tx
    except BaseException:
        tx.rollback()
        raise
    else:
        tx.commit()
    finally:
        _current.reset(token)


# -- tracked containers ------------------------------------------------------------------------


def adopt(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """``value`` with every builtin dict and list in it replaced by a tracked one.

    Tracked containers are kept as they are (they are already part of the tree); ``memo``
    keeps one plain container placed in two slots one container after adoption.
    """
    kind = type(value)
    if kind is not dict and kind is not list:
        return value
    if memo is None:
        memo = {}
    found = memo.get(id(value))
    if found is not None:
        return found
    if kind is dict:
        tracked: Any = TrackedDict()
        memo[id(value)] = tracked
        dict.update(tracked, ((k, adopt(v, memo)) for k, v in value.items()))
    else:
        tracked = TrackedList()
        memo[id(value)] = tracked
        list.extend(tracked, (adopt(v, memo) for v in value))
    return tracked


def plain(value: Any) -> Any:
    """A deep copy of ``value`` made of builtin dicts and lists only."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


class TrackedDict(dict):  # type: ignore[type-arg]
    """A dict whose changes are undone when the transaction they were made in fails."""

    __slots__ = ()

    def __setitem__(self, key: Any, value: Any) -> None:
        tx = active()
        if tx is None:
            dict.__setitem__(self, key, adopt(value))
            return
        tx.log_set(self, key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        if key in self and (tx := active()) is not None:
            tx.log_dict(self)
        dict.__delitem__(self, key)

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self and (tx := active()) is not None:
            tx.log_dict(self)
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[Any, Any]:
        if self and (tx := active()) is not None:
            tx.log_dict(self)
        return dict.popitem(self)

    def clear(self) -> None:
        if self and (tx := active()) is not None:
            tx.log_dict(self)
        dict.clear(self)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other: Any) -> TrackedDict:  # type: ignore[override,misc]
        self.update(other)
        return self

    def __copy__(self) -> dict[Any, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return plain(self)

    def __reduce__(self) -> Any:
        return (dict, (plain(self),))


class TrackedList(list):  # type: ignore[type-arg]
    """A list whose changes are undone when the transaction they were made in fails."""

    __slots__ = ()

    def _changing(self) -> bool:
        """Save the content before a change; True when outside any transaction."""
        tx = active()
        if tx is None:
            return True
        tx.log_list(self)
        return False

    def append(self, value: Any) -> None:
        list.append(self, adopt(value) if self._changing() else value)

    def extend(self, values: Iterable[Any]) -> None:
        outside = self._changing()
        list.extend(self, (adopt(v) for v in values) if outside else values)

    def insert(self, index: SupportsIndex, value: Any) -> None:
        list.insert(self, index, adopt(value) if self._changing() else value)

    def __setitem__(self, index: Any, value: Any) -> None:
        outside = self._changing()
        if outside:
            value = [adopt(v) for v in value] if isinstance(index, slice) else adopt(value)
        list.__setitem__(self, index, value)

    def __delitem__(self, index: Any) -> None:
        self._changing()
        list.__delitem__(self, index)

    def __iadd__(self, values: Iterable[Any]) -> TrackedList:  # type: ignore[override,misc]
        self.extend(values)
        return self

    def __imul__(self, times: SupportsIndex) -> TrackedList:  # type: ignore[override,misc]
        self._changing()
        return list.__imul__(self, times)  # type: ignore[return-value]

    def pop(self, index: SupportsIndex = -1) -> Any:
        self._changing()
        return list.pop(self, index)

    def remove(self, value: Any) -> None:
        self._changing()
        list.remove(self, value)

    def clear(self) -> None:
        self._changing()
        list.clear(self)

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self._changing()
        list.sort(self, *args, **kwargs)

    def reverse(self) -> None:
        self._changing()
        list.reverse(self)

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return plain(self)

    def __reduce__(self) -> Any:
        return (list, (plain(self),))
