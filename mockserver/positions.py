"""Where each record of a collection sits in paging order, so a page starts by bisection.

A collection (``{id: record}``) is in ``_seq`` order: a record made here is placed at its end
with the next sequence (``World.insert``); one that another process made at the same time may
come in with a lower one, and is placed where its sequence puts it (``World.put_document``).
An :class:`Index` keeps that order as two parallel lists, the sequences and the ids, so "the
first record after position ``p``" is a bisection (O(log n)) and reading a page from there
costs the page, however deep it is. A :class:`Ranking` keeps another order: a field,
descending, ties oldest first (a field that never changes once the record is stored).

An index holds ids, not records: the record stored under an id may be replaced by a copy of
itself (a transaction adopts what it placed at commit), so the collection is read for it.
The World builds an index when a collection is first queried and keeps it up to date
(world.py, ``# -- positions --``); an index whose length differs from its collection's is
stale and is built again.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping
from typing import Any

Record = dict[str, Any]
Collection = Mapping[str, Record]


class Ranking:
    """A collection's ids ordered by one field, highest first, ties by ``_seq`` (oldest
    first): ``keys`` are ``(-value, _seq)``, sorted, ``ids`` beside them."""

    __slots__ = ("field", "ids", "keys")

    def __init__(self, collection: Collection, field: str) -> None:
        self.field = field
        ranked = sorted(((-r[field], r["_seq"]), record_id) for record_id, r in collection.items())
        self.keys: list[tuple[Any, int]] = [key for key, _ in ranked]
        self.ids: list[str] = [record_id for _, record_id in ranked]

    def key(self, record: Record) -> tuple[Any, int]:
        return (-record[self.field], record["_seq"])

    def add(self, record: Record) -> None:
        key = self.key(record)
        at = bisect_right(self.keys, key)
        self.keys.insert(at, key)
        self.ids.insert(at, record["id"])

    def remove(self, record_id: str) -> bool:
        """Take a record out; False when it is not here."""
        try:
            at = self.ids.index(record_id)
        except ValueError:
            return False
        del self.ids[at], self.keys[at]
        return True

    def after(self, collection: Collection, key: tuple[Any, int] | None) -> Iterator[Record]:
        """The records ranked after ``key`` (from the first when None), in rank order."""
        ids = self.ids
        start = 0 if key is None else bisect_right(self.keys, key)
        for at in range(start, len(ids)):
            yield collection[ids[at]]


class Index:
    """One collection's ids in ``_seq`` order (``seqs`` and ``ids``, parallel), and the
    rankings asked of it so far."""

    __slots__ = ("guard", "ids", "rankings", "seqs")

    def __init__(self, collection: Collection) -> None:
        self.ids: list[str] = list(collection)
        self.seqs: list[int] = [record["_seq"] for record in collection.values()]
        self.rankings: dict[str, Ranking] = {}
        self.guard: object = None  # the transaction that forgets this index if it fails

    def append(self, record: Record) -> bool:
        """A record placed at the end of the collection; False when its ``_seq`` does not
        follow the last one (the index no longer describes the collection)."""
        seq = record["_seq"]
        if self.seqs and seq <= self.seqs[-1]:
            return False
        self.seqs.append(seq)
        self.ids.append(record["id"])
        for ranking in self.rankings.values():
            ranking.add(record)
        return True

    def place(self, record: Record) -> bool:
        """A record placed where its ``_seq`` puts it: at the end (:meth:`append`), or, made
        by another process at the same time as the last ones, before them. False when its
        ``_seq`` is here already (the index no longer describes the collection)."""
        seq = record["_seq"]
        if not self.seqs or seq > self.seqs[-1]:
            return self.append(record)
        at = bisect_left(self.seqs, seq)
        if self.seqs[at] == seq:
            return False
        self.seqs.insert(at, seq)
        self.ids.insert(at, record["id"])
        for ranking in self.rankings.values():
            ranking.add(record)
        return True

    def remove(self, record_id: str) -> bool:
        """A record taken out of the collection; False when it was not here."""
        try:
            at = self.ids.index(record_id)
        except ValueError:
            return False
        del self.ids[at], self.seqs[at]
        return all(ranking.remove(record_id) for ranking in self.rankings.values())

    def ranking(self, collection: Collection, field: str) -> Ranking:
        ranking = self.rankings.get(field)
        if ranking is None:
            ranking = self.rankings[field] = Ranking(collection, field)
        return ranking

    def after(self, collection: Collection, seq: int) -> Iterator[Record]:
        """The records after position ``seq`` (``_seq`` greater), in order."""
        ids = self.ids
        for at in range(bisect_right(self.seqs, seq), len(ids)):
            yield collection[ids[at]]

    def at(self, collection: Collection, seq: int) -> Record | None:
        """The record whose ``_seq`` is ``seq``, or None."""
        at = bisect_left(self.seqs, seq)
        if at < len(self.seqs) and self.seqs[at] == seq:
            return collection[self.ids[at]]
        return None

    def count_through(self, seq: int) -> int:
        """How many records sit at or before position ``seq``."""
        return bisect_right(self.seqs, seq)

    def seq_of(self, count: int) -> int:
        """The position after the first ``count`` records (all of them when fewer): the
        ``_seq`` of the last of those, 0 for none."""
        count = min(count, len(self.seqs))
        return self.seqs[count - 1] if count > 0 else 0
