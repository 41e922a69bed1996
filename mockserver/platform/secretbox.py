"""Secrets at rest (webhook and callback signing secrets): encrypted, never in clear.

Fernet (AES-128-CBC with HMAC-SHA256) from ``cryptography``. The data key comes from the
``MOCKSERVER_DATA_KEY`` environment variable (a Fernet key) when set, so a snapshot can be
restored into another process; otherwise each process makes its own, when it first seals or
opens a secret (``cryptography`` is imported then: ~13 ms and ~6 MiB a start does without).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.fernet import Fernet


class SecretBox:
    def __init__(self, key: bytes | None = None) -> None:
        env = os.environ.get("MOCKSERVER_DATA_KEY")
        given = key or (env.encode() if env else None)
        self._lock = threading.Lock()
        # A key given is checked now, as the mock starts; one of its own is made when needed.
        self._fernet: Fernet | None = _fernet(given) if given else None

    def _box(self) -> Fernet:
        if self._fernet is None:
            with self._lock:
                if self._fernet is None:
                    self._fernet = _fernet(None)
        return self._fernet

    def seal(self, secret: str) -> str:
        return self._box().encrypt(secret.encode()).decode()

    def open(self, sealed: str) -> str | None:
        """The secret, or None when it was sealed with another data key."""
        from cryptography.fernet import InvalidToken

        try:
            return self._box().decrypt(sealed.encode()).decode()
        except InvalidToken:
            return None


def _fernet(key: bytes | None) -> Fernet:
    """A Fernet with this key, or with a new one."""
    from cryptography.fernet import Fernet

    return Fernet(key or Fernet.generate_key())
