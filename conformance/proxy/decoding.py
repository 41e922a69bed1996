"""A body as the proxy judges it: decoded from its ``content-encoding`` (the client gets it as
it came). The judge (conformance/proxy/judge.py) and the fallback (conformance/proxy/fallback.py)
read bodies through it.
"""

from __future__ import annotations

import zlib


def decoded(body: bytes, encoding: str | None) -> bytes:
    """A copy of a body decoded for judging (the client got it as it came); b"" when it is
    in an encoding the proxy cannot decode."""
    if not body or not encoding or encoding.strip().lower() == "identity":
        return body
    try:
        if encoding.strip().lower() in ("gzip", "x-gzip"):
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if encoding.strip().lower() == "deflate":
            try:
                return zlib.decompress(body)
            except zlib.error:
                return zlib.decompress(body, -zlib.MAX_WBITS)
    except zlib.error:
        return b""
    return b""
