"""The inspector: a web page over the control plane (``GET /_mock/ui``).

Plain HTML, CSS and JavaScript shipped in the package (``ui/`` beside this module): no build
step, nothing fetched from another site, so it works offline. The page reads and steers the
mock only through the control plane's own operations; it writes every value it shows as text
(never as markup), and the files are served with a Content-Security-Policy that allows
nothing but this origin and no inline script.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from starlette.responses import Response

from mockserver.platform.errors import not_found

OPERATIONS = frozenset({"inspector", "inspectorIndex", "inspectorFile"})
INDEX = "index.html"
FILES = {
    INDEX: "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


@cache
def _read(name: str) -> bytes:
    return (resources.files("mockserver.control") / "ui" / name).read_bytes()


def serve(operation_id: str, path_params: dict[str, str]) -> Response:
    """The page (``inspector``, ``inspectorIndex``) or one of its files (``inspectorFile``)."""
    name = path_params.get("file") or INDEX  # /_mock/ui/ is the page too
    if name not in FILES:
        raise not_found(f"inspector file {name!r}")
    return Response(_read(name), media_type=FILES[name], headers=HEADERS)
