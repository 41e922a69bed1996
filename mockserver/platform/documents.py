"""The world's tree cut into documents: the unit a store reads and writes as one row.

A document is named by a :data:`DocKey`, a tuple whose first item is its kind::

    ("rec", workspace_id, collection, record_id)  data["workspaces"][ws]["collections"][c][id]
    ("ws", workspace_id)      data["workspaces"][ws], without its "collections"
    ("key", digest)           data["keys"][digest]
    ("cap", name)             data["capabilities"][name]
    ("idem", workspace_id, key)   data["idempotency"][ws][key]
    ("dlv", delivery_id)      data["deliveries"][id]
    ("counter", prefix)       data["counters"][prefix]      (an int)
    ("seq",)                  data["seq"]                   (an int)
    ("section", name)         data[name], any other top-level entry (fixtures, discovery, ...)

Counters and ``seq`` are documents of their own (not one section) because nearly every write
takes a number: a store then updates one small row per prefix. They are the documents that
commute (:data:`COMMUTING`): numbers that only grow, so a store shared by several processes
keeps the greatest one written, and two writes that each took the next number do not collide
(each process numbers with a slot of its own: world.py ``number``). Deliveries are one document
each, not one section, because the delivery worker changes one delivery per attempt.

Everything inside a document belongs to it, at any depth. The containers between the root
and the documents are *indexes* (the root, ``workspaces``, a workspace's ``collections``, a
collection, ``keys``, ``capabilities``, ``counters``, ``idempotency`` and its per-workspace
dicts, ``deliveries``): they hold no data of their own, and adding or removing one of their
keys creates or deletes the documents below that key. A workspace is both a document and the
holder of an index (its ``collections``). Indexes are dicts (JSON objects); any other value at
an index position holds no documents, and nothing inside it belongs to one.

:class:`Place` describes where a container that holds documents sits; the tracked containers
(transactions.py) carry either a DocKey (their document) or a Place, so that every change
names the documents it touches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DocKey = tuple[Any, ...]
ANY = "*"
COMMUTING = frozenset({"counter", "seq"})  # kinds of document a store keeps the greatest of

# (path pattern, key template): ANY matches one key; an int in the template is the position
# of the path part it takes. Every prefix of a pattern that is not itself listed is an index.
LAYOUT: tuple[tuple[tuple[str, ...], tuple[Any, ...]], ...] = (
    (("seq",), ("seq",)),
    (("counters", ANY), ("counter", 1)),
    (("capabilities", ANY), ("cap", 1)),
    (("keys", ANY), ("key", 1)),
    (("workspaces", ANY), ("ws", 1)),
    (("workspaces", ANY, "collections", ANY, ANY), ("rec", 1, 3, 4)),
    (("idempotency", ANY, ANY), ("idem", 1, 2)),
    (("deliveries", ANY), ("dlv", 1)),
    ((ANY,), ("section", 0)),
)


class Node:
    """One level of the layout: the document a path ending here is (if any), and below it."""

    __slots__ = ("children", "kind", "picks")

    def __init__(self) -> None:
        self.kind: str | None = None
        self.picks: tuple[int, ...] = ()
        self.children: dict[str, Node] = {}

    def key(self, path: tuple[Any, ...]) -> DocKey | None:
        if self.kind is None:
            return None
        return (self.kind, *(path[i] for i in self.picks))


def _build(layout: tuple[tuple[tuple[str, ...], tuple[Any, ...]], ...]) -> Node:
    root = Node()
    for pattern, (kind, *picks) in layout:
        node = root
        for part in pattern:
            node = node.children.setdefault(part, Node())
        node.kind, node.picks = kind, tuple(picks)
    _check(root)
    return root


def _check(node: Node) -> None:
    """An index must name every key below it (else a key would belong to no document)."""
    if node.kind is None and ANY not in node.children:
        raise ValueError("an index of the layout has no '*' entry")
    for child in node.children.values():
        if child.children:
            _check(child)


class Place:
    """Where a container holding documents sits: an index (``doc`` None), or a document with
    an index inside it (a workspace)."""

    __slots__ = ("doc", "node", "path")

    def __init__(self, path: tuple[Any, ...], node: Node) -> None:
        self.path = path
        self.node = node
        self.doc: DocKey | None = node.key(path)

    def child(self, key: Any) -> DocKey | Place:
        """What the value under ``key`` is: a document (its key), or a further Place. A key the
        layout does not name is part of this container's own document."""
        children = self.node.children
        node = children.get(key)
        if node is None:
            node = children.get(ANY)
            if node is None:
                return self.doc  # type: ignore[return-value]  # a document's own field
        path = (*self.path, key)
        if node.children:
            return Place(path, node)
        return node.key(path)  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        return type(other) is Place and other.path == self.path and other.node is self.node

    def __hash__(self) -> int:
        return hash(self.path)

    def __repr__(self) -> str:
        return f"Place({self.path!r})"


Tag = DocKey | Place
ROOT = Place((), _build(LAYOUT))

# Below a list at an index position (not a layout the world uses): no document, at any depth.
_NOWHERE = Node()
_NOWHERE.children[ANY] = _NOWHERE


def outside(path: tuple[Any, ...]) -> Place:
    """The tag of an index taken out of the tree (or of anything below a list where an index
    should be): nothing in it belongs to a document."""
    return Place(path, _NOWHERE)


def child_tag(tag: Tag, key: Any) -> Tag:
    """The tag of the value under ``key`` in a dict tagged ``tag``."""
    return tag if type(tag) is tuple else tag.child(key)  # type: ignore[union-attr]


def item_tag(tag: Tag) -> Tag:
    """The tag of the items of a list tagged ``tag``: lists hold no documents, so its own
    document's (or none, for a list where an index should be)."""
    if type(tag) is tuple:
        return tag
    place: Place = tag  # type: ignore[assignment]
    return place.doc if place.doc is not None else outside(place.path)


def own_doc(tag: Tag) -> DocKey | None:
    """The document a change to a container tagged ``tag`` changes (None: an index)."""
    return tag if type(tag) is tuple else tag.doc  # type: ignore[union-attr,return-value]


def locate(path: tuple[Any, ...]) -> Tag:
    """The tag of the value at ``path`` from the root: its document, or its Place."""
    tag: Tag = ROOT
    for part in path:
        tag = child_tag(tag, part)
    return tag


def path_of(doc: DocKey) -> tuple[Any, ...]:
    """Where a document sits in the tree: the path :func:`locate` answers ``doc`` for."""
    pattern, template = _PATTERNS[doc[0]]
    parts = dict(zip(template[1:], doc[1:], strict=True))
    return tuple(parts[i] if part == ANY else part for i, part in enumerate(pattern))


_PATTERNS = {template[0]: (pattern, template) for pattern, template in LAYOUT}


def document(tree: Mapping[str, Any], doc: DocKey) -> Any:
    """The value of one document of a tree, as :func:`documents` gives it (KeyError when the
    tree has no such document): what a store writes for each document a commit changed."""
    path = path_of(doc)
    value: Any = tree
    for part in path:
        if not isinstance(value, dict):
            raise KeyError(doc)
        value = value[part]
    tag = locate(path)
    if type(tag) is tuple or not isinstance(value, dict):
        return value
    place: Place = tag  # type: ignore[assignment]
    return {key: item for key, item in value.items() if place.child(key) is place.doc}


def documents(value: Mapping[str, Any], tag: Tag = ROOT) -> dict[DocKey, Any]:
    """Every document of a tree and its value (the live objects; a workspace's is a new dict
    without its ``collections``): what a store writes for a whole world."""
    found: dict[DocKey, Any] = {}
    _split(value, tag, found)
    return found


def _split(value: Any, tag: Tag, found: dict[DocKey, Any]) -> None:
    if type(tag) is tuple:
        found[tag] = value
        return
    place: Place = tag  # type: ignore[assignment]
    if not isinstance(value, dict):
        if place.doc is not None:
            found[place.doc] = value
        return
    own = {}
    for key, item in value.items():
        child = place.child(key)
        if child is place.doc:
            own[key] = item
        else:
            _split(item, child, found)
    if place.doc is not None:
        found[place.doc] = own


def place(tree: dict[str, Any], doc: DocKey, value: Any) -> bool:
    """Put one document's value into a tree (tracked or plain), making the indexes on its
    path: the inverse of :func:`document`. A workspace's own fields replace those it had and
    keep its ``collections``. Answers whether the document is new to the tree."""
    *parents, last = path_of(doc)
    holder: dict[str, Any] = tree
    for part in parents:
        holder = holder.setdefault(part, {})
    old = holder.get(last)
    if doc[0] == "ws" and isinstance(old, dict):
        for field in [name for name in old if name != "collections" and name not in value]:
            del old[field]
        for field, item in value.items():
            old[field] = item
        return False
    holder[last] = {**value, "collections": {}} if doc[0] == "ws" else value
    return old is None


def remove(tree: dict[str, Any], doc: DocKey) -> bool:
    """Take one document out of a tree (and an index it leaves empty, for kept answers);
    answers whether it was there."""
    *parents, last = path_of(doc)
    holder: Any = tree
    chain = []
    for part in parents:
        if not isinstance(holder, dict) or part not in holder:
            return False
        chain.append((holder, part))
        holder = holder[part]
    if not isinstance(holder, dict) or last not in holder:
        return False
    del holder[last]
    if doc[0] == "idem" and not holder:
        parent, part = chain[-1]
        del parent[part]
    return True
