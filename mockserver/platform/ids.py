"""Opaque, prefixed ids (``prj_1f0c...``), reproducible for a given ``--seed``.

An id is a keyed hash of its prefix and a per-prefix counter; the counters live in the world's
state, so a snapshot restored into a mock with the same seed goes on issuing the same ids.
Processes that share a store each number with a slot of their own (world.py ``number``): an id
made with slot n > 0 hashes the slot too, so two processes that took the same counter value
make two ids. Slot 0 (a single process) makes the ids it always made.
"""

from __future__ import annotations

import hashlib
import secrets


class IdFactory:
    def __init__(self, seed: int | None, counters: dict[str, int]) -> None:
        self._key = (str(seed) if seed is not None else secrets.token_hex(16)).encode()
        self.counters = counters
        self.slot = 0

    def rekey(self, key: bytes) -> None:
        """Use a key kept elsewhere (a store's), so ids stay distinct after a restart."""
        self._key = key

    def new(self, prefix: str) -> str:
        number = self.counters.get(prefix, 0) + 1
        self.counters[prefix] = number
        named = f"{prefix}:{number}" if not self.slot else f"{prefix}:{number}:{self.slot}"
        digest = hashlib.blake2b(named.encode(), key=self._key, digest_size=8)
        return f"{prefix}_{digest.hexdigest()}"
