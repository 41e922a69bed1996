"""Secrets at rest (webhook and callback signing secrets): encrypted, never in clear.

Fernet (AES-128-CBC with HMAC-SHA256) from ``cryptography``. The data key comes from the
``MOCKSERVER_DATA_KEY`` environment variable (a Fernet key) when set, so a snapshot can be
restored into another process; otherwise each process makes its own.
"""

from __future__ import annotations

import os

from cryptography.fernet import Fernet, InvalidToken


class SecretBox:
    def __init__(self, key: bytes | None = None) -> None:
        env = os.environ.get("MOCKSERVER_DATA_KEY")
        self._fernet = Fernet(key or (env.encode() if env else Fernet.generate_key()))

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode()

    def open(self, sealed: str) -> str | None:
        """The secret, or None when it was sealed with another data key."""
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken:
            return None
