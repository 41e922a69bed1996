"""Transactions over the world's JSON tree: a request's changes are all kept or none are.

The world holds its state as dicts and lists; handlers change them in place. To make every
request one transaction without copying the world, the tree is built of :class:`TrackedDict` and
:class:`TrackedList`: subclasses whose *mutating* methods write an undo entry into the
transaction open in the current context (reads are the builtin ones, at full speed).

- :func:`transaction` opens one (or joins the one already open in this context). Leaving it
  normally commits; leaving it by any exception (an ``ApiError``, a bug, a cancelled task)
  replays the undo entries backwards, so the tree is exactly as it was, insertion order
  included. State kept beside the tree (the World's paging indexes) follows it back through
  :meth:`Transaction.on_rollback`.
- A plain ``dict`` or ``list`` placed into the tree during a transaction (a new record, say) is
  turned into tracked containers at commit, when no handler holds it any more; outside a
  transaction (start-up, autocommit) it is turned at once. One exception: a dict placed where
  documents are indexed (a workspace, its ``collections``, a new collection, the kept answers
  of a workspace) is turned at once, so that what is added to it is seen: go on with the one
  in the tree (``setdefault`` returns it), not the dict placed. What it holds is not copied.
- :func:`plain` copies a tree back into builtin containers (snapshots, deep copies).

Every change also names the *document* it changes (documents.py: a record, a workspace's own
fields, a key, a kept answer, a counter, a section...), so that a store can write exactly
those at commit: :meth:`Transaction.changed` and :meth:`Transaction.deleted`. For that, each
tracked container carries a tag, set when it is adopted where it sits: the key of its
document, or, for a container that holds documents (an index such as a collection, or a
workspace), its :class:`~mockserver.platform.documents.Place`. A change inside a document
costs one ``set.add``; adding a key to an index creates the document under it, removing one
deletes the documents under it.

A container belongs to one document only: one placed in another document (or under another
key of an index) is copied when it is adopted there, never shared, just as a store would keep
two copies. A change made through a container after it left the tree names its old document
(already marked changed or deleted), never one it is not in: an index taken out is re-tagged
as outside any document (a rollback puts its tag back).

Transactions live in a :class:`~contextvars.ContextVar`, so concurrent asyncio tasks each
have their own. A task that awaits in the middle of one lets other tasks run: handlers that
must wait (a DNS check) do so before their first change.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any, Protocol, SupportsIndex, TypeVar

from mockserver.platform.documents import (
    ROOT,
    DocKey,
    Place,
    Tag,
    child_tag,
    item_tag,
    outside,
    own_doc,
)

_ABSENT: Any = object()
T = TypeVar("T")


class UnitOfWork(Protocol):
    """Runs ``work`` in one transaction of the world (joining one open in this context) and
    owns retrying it on the store: after a conflict with another process's write, caught up,
    it runs again. ``work`` cannot await (a tick, a delivery step). The runtime gives its
    services its :meth:`~mockserver.runtime.Runtime.unit_of_work`."""

    def __call__(self, work: Callable[[], T], /) -> T: ...


class Transaction:
    """The undo log of one open transaction, the slots whose new values need adopting, and
    the documents it changed."""

    __slots__ = (
        "_changed",
        "_copied",
        "_created",
        "_deleted",
        "adopt_dicts",
        "adopt_lists",
        "membership",
        "open",
        "undo",
    )

    def __init__(self) -> None:
        self.undo: list[tuple[Any, ...]] = []
        self.adopt_dicts: list[tuple[dict[Any, Any], Any]] = []
        self.adopt_lists: list[list[Any]] = []
        self._copied: set[int] = set()  # lists (by id) whose whole content is already saved
        self._changed: set[DocKey] = set()
        self._deleted: set[DocKey] = set()
        self._created: set[DocKey] = set()
        # Whether it read which documents an index holds (a list, a count, a search): what
        # a store shared by several processes serialises against every other write.
        self.membership = False
        self.open = True

    # -- what changed ------------------------------------------------------------------------

    def changed(self) -> set[DocKey]:
        """The documents this transaction changed, created or deleted so far (documents.py).

        A document is named by any change to it, even one that wrote back the value it had.
        """
        return set(self._changed)

    def deleted(self) -> set[DocKey]:
        """Those of :meth:`changed` that are gone now (removed, and not put back since)."""
        return set(self._deleted)

    def created(self) -> set[DocKey]:
        """Those of :meth:`changed` that this transaction made: no document was under their key
        when it began (a record inserted, an answer kept under a new key), and they are there
        now."""
        return self._created - self._deleted

    def _present(self, doc: DocKey) -> None:
        self._changed.add(doc)
        self._deleted.discard(doc)

    def _gone(self, doc: DocKey) -> None:
        self._changed.add(doc)
        self._deleted.add(doc)

    # -- logging -------------------------------------------------------------------------

    def log_set(self, container: dict[Any, Any], key: Any, doc: DocKey) -> None:
        """Before setting ``key`` of a container inside document ``doc``."""
        self.undo.append(("set", container, key, dict.get(container, key, _ABSENT)))
        self.adopt_dicts.append((container, key))
        self._changed.add(doc)

    def set_at_place(self, container: dict[Any, Any], key: Any, value: Any, place: Place) -> None:
        """Set ``key`` of a container that holds documents (an index, or a workspace).

        A document placed is created (or replaced); the documents under a replaced index are
        deleted. A new index is made tracked at once, so that what is added to it later is
        logged too (a reference to the plain dict placed no longer reaches the tree).
        """
        old = dict.get(container, key, _ABSENT)
        self.undo.append(("set", container, key, old))
        child = place.child(key)
        if type(child) is tuple:
            if child is place.doc:
                self._changed.add(child)  # a workspace's own field
            else:
                self._placed(child, old is _ABSENT)
            self.adopt_dicts.append((container, key))
        else:
            if old is not _ABSENT:
                self._removed(old, child)
            value = self._adopt_place(value, child, old is _ABSENT)  # type: ignore[arg-type]
        dict.__setitem__(container, key, value)

    def _placed(self, doc: DocKey, new: bool) -> None:
        """A document put under a key of an index (``new``: the key was free)."""
        if new and doc not in self._changed:
            self._created.add(doc)
        self._present(doc)

    def _adopt_place(self, value: Any, place: Place, new: bool = False) -> Any:
        """``value`` as a tracked container at ``place``, its documents marked present (and
        created, when ``new``: nothing was at ``place`` before).

        The documents themselves stay as they are (a handler may hold them) and are adopted
        at commit, like any value set inside a transaction.
        """
        if place.doc is not None:
            self._placed(place.doc, new)
        if not isinstance(value, dict):
            return adopt(value, None, place)
        tracked: Any = value
        if type(value) is not TrackedDict or value._doc != place:
            tracked = TrackedDict()
            tracked._doc = place
        for key, item in list(value.items()):
            child = place.child(key)
            if type(child) is tuple:
                if child is not place.doc:
                    self._placed(child, new)
                self.adopt_dicts.append((tracked, key))
            else:
                item = self._adopt_place(item, child, new)
            dict.__setitem__(tracked, key, item)
        return tracked

    def log_removal(self, container: dict[Any, Any], keys: Iterable[Any]) -> None:
        """Before removing ``keys``: keep the whole dict, so a rollback restores its order too;
        the documents under removed keys of an index are deleted."""
        self.undo.append(("dict", container, dict(container)))
        tag = container._doc  # type: ignore[attr-defined]
        if type(tag) is tuple:
            self._changed.add(tag)
            return
        for key in keys:
            child = tag.child(key)
            if child is tag.doc:
                self._changed.add(child)
            else:
                self._removed(dict.__getitem__(container, key), child)

    def _removed(self, value: Any, tag: Tag) -> None:
        """A value tagged ``tag`` leaves the tree: its documents are deleted, and its indexes
        are tagged :func:`~mockserver.platform.documents.outside`, so that a change made
        through one later (a handler still holding it) names no document."""
        if type(tag) is tuple:
            self._gone(tag)
            return
        place: Place = tag  # type: ignore[assignment]
        if place.doc is not None:
            self._gone(place.doc)
        if type(value) in _TRACKED and value._doc == place:  # not an alias of another index
            self.undo.append(("tag", value, value._doc))
            value._doc = outside(place.path)
        if isinstance(value, dict):
            for key, item in value.items():
                child = place.child(key)
                if child is not place.doc:
                    self._removed(item, child)

    def on_rollback(self, undo: Callable[[], None]) -> None:
        """Call ``undo`` if this transaction fails, in turn with the other undo entries (last
        logged, first replayed): for state kept beside the tree (an index of it) that must
        follow it back."""
        self.undo.append(("call", undo))

    def log_list(self, container: list[Any]) -> None:
        if id(container) not in self._copied:
            self._copied.add(id(container))
            self.undo.append(("list", container, list(container)))
            self.adopt_lists.append(container)
            doc = own_doc(container._doc)  # type: ignore[attr-defined]
            if doc is not None:
                self._changed.add(doc)

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
            elif kind == "tag":
                container._doc = entry[2]
            elif kind == "call":
                container()
            else:
                list.__setitem__(container, slice(None), entry[2])
        self._end()

    def commit(self) -> None:
        """Adopt what was placed in the tree: plain containers, and tracked ones moved from
        another document (copied, so that no container sits in two documents)."""
        memo: dict[int, Any] = {}
        for container, key in self.adopt_dicts:
            value = dict.get(container, key, _ABSENT)
            if type(value) in _CONTAINERS:
                tag = child_tag(container._doc, key)  # type: ignore[attr-defined]
                if _misplaced(value, tag):
                    dict.__setitem__(container, key, adopt(value, memo, tag))
        for container in self.adopt_lists:
            tag = item_tag(container._doc)  # type: ignore[attr-defined]
            for index, value in enumerate(container):
                if type(value) in _CONTAINERS and _misplaced(value, tag):
                    list.__setitem__(container, index, adopt(value, memo, tag))
        self._end()

    def _end(self) -> None:
        self.open = False
        self.undo.clear()
        self.adopt_dicts.clear()
        self.adopt_lists.clear()
        self._copied.clear()
        self._changed.clear()
        self._deleted.clear()


_current: ContextVar[Transaction | None] = ContextVar("mockserver_transaction", default=None)


def read_an_index() -> None:
    """Tell the transaction open here, if any, that it read which documents an index holds
    (world.py calls it where a collection is listed, counted or searched)."""
    tx = _current.get()
    if tx is not None:
        tx.membership = True


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


def _misplaced(value: Any, tag: Tag) -> bool:
    """Whether a container needs adopting to sit where ``tag`` says: a plain one, or a tracked
    one tagged for another place."""
    kind = type(value)
    if kind is dict or kind is list:
        return True
    return value._doc is not tag and value._doc != tag  # type: ignore[no-any-return]


def adopt(value: Any, memo: dict[int, Any] | None = None, tag: Tag = ROOT) -> Any:
    """``value`` with every builtin dict and list in it replaced by a tracked one, tagged for
    where it sits: ``tag`` is the value's own (documents.py; the default, the root, adopts a
    whole world).

    Tracked containers already tagged so are kept as they are (they are already part of the
    tree); one tagged for another place is copied. ``memo`` keeps one plain container placed
    in two slots of the same document one container after adoption.
    """
    kind = type(value)
    if kind is TrackedDict or kind is TrackedList:
        if value._doc is tag or value._doc == tag:
            return value
    elif kind is not dict and kind is not list:
        return value
    if memo is None:
        memo = {}
    found = memo.get(id(value))
    if found is not None and (found._doc is tag or found._doc == tag):
        return found
    tracked: Any
    if isinstance(value, dict):
        tracked = TrackedDict()
        tracked._doc = tag
        memo[id(value)] = tracked
        if type(tag) is tuple:
            dict.update(tracked, ((k, adopt(v, memo, tag)) for k, v in value.items()))
        else:
            place: Place = tag  # type: ignore[assignment]
            dict.update(tracked, ((k, adopt(v, memo, place.child(k))) for k, v in value.items()))
    else:
        tracked = TrackedList()
        tracked._doc = tag
        memo[id(value)] = tracked
        items = item_tag(tag)
        list.extend(tracked, (adopt(v, memo, items) for v in value))
    return tracked


def tag_of(container: TrackedDict | TrackedList) -> Tag:
    """The document a tracked container belongs to, or the Place of one that holds some."""
    return container._doc


def clone(value: Any) -> Any:
    """A deep copy of a tracked tree, every container tagged as its original is: a world made
    again from a pristine one, without adopting (and tagging) it anew. Tags are values, never
    changed, and are shared."""
    kind = type(value)
    if kind is TrackedDict:
        copied: Any = TrackedDict()
        copied._doc = value._doc
        dict.update(copied, {k: clone(v) for k, v in value.items()})
        return copied
    if kind is TrackedList:
        copied = TrackedList()
        copied._doc = value._doc
        list.extend(copied, [clone(v) for v in value])
        return copied
    if kind is dict or kind is list:
        return plain(value)  # not in a world adopt() made; copied as it is
    return value


def plain(value: Any) -> Any:
    """A deep copy of ``value`` made of builtin dicts and lists only."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


class TrackedDict(dict):  # type: ignore[type-arg]
    """A dict whose changes are undone when the transaction they were made in fails, and name
    the documents they change. Made by :func:`adopt`, which sets its tag."""

    __slots__ = ("_doc",)
    _doc: Tag

    def __setitem__(self, key: Any, value: Any) -> None:
        tx = active()
        tag = self._doc
        if tx is None:
            dict.__setitem__(self, key, adopt(value, None, child_tag(tag, key)))
        elif type(tag) is tuple:
            tx.log_set(self, key, tag)
            dict.__setitem__(self, key, value)
        else:
            tx.set_at_place(self, key, value, tag)  # type: ignore[arg-type]

    def __delitem__(self, key: Any) -> None:
        if key in self and (tx := active()) is not None:
            tx.log_removal(self, (key,))
        dict.__delitem__(self, key)

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self and (tx := active()) is not None:
            tx.log_removal(self, (key,))
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[Any, Any]:
        if self and (tx := active()) is not None:
            tx.log_removal(self, (next(reversed(self)),))
        return dict.popitem(self)

    def clear(self) -> None:
        if self and (tx := active()) is not None:
            tx.log_removal(self, tuple(self))
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
    """A list whose changes are undone when the transaction they were made in fails, and name
    the document they change. Made by :func:`adopt`, which sets its tag."""

    __slots__ = ("_doc",)
    _doc: Tag

    def _changing(self) -> bool:
        """Save the content before a change; True when outside any transaction."""
        tx = active()
        if tx is None:
            return True
        tx.log_list(self)
        return False

    def _adopt(self, value: Any) -> Any:
        return adopt(value, None, item_tag(self._doc))

    def append(self, value: Any) -> None:
        list.append(self, self._adopt(value) if self._changing() else value)

    def extend(self, values: Iterable[Any]) -> None:
        outside = self._changing()
        list.extend(self, (self._adopt(v) for v in values) if outside else values)

    def insert(self, index: SupportsIndex, value: Any) -> None:
        list.insert(self, index, self._adopt(value) if self._changing() else value)

    def __setitem__(self, index: Any, value: Any) -> None:
        outside = self._changing()
        if outside:
            if isinstance(index, slice):
                value = [self._adopt(v) for v in value]
            else:
                value = self._adopt(value)
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


_CONTAINERS = frozenset((dict, list, TrackedDict, TrackedList))
_TRACKED = frozenset((TrackedDict, TrackedList))
