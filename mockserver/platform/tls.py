"""One TLS context for every HTTP client the kit makes: webhook deliveries, ``listen`` and
``trigger``, the in-process fixture, the conformance suite.

httpx builds a context for each client it makes, and building one reads the whole CA bundle
(about 18 ms); a context is safe to share between clients and threads.
"""

from __future__ import annotations

import ssl
from functools import cache


@cache
def tls_context() -> ssl.SSLContext:
    """The default verifying context (``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` honoured)."""
    import httpx

    return httpx.create_ssl_context()
