"""Per-job callbacks at request time: ``callbackUrl`` and ``callbackSecret`` come together, the
secret is 32 to 512 characters (both enforced by the contract's schema), and the url must be
HTTPS and resolve only to public addresses (urlpolicy.py), else ``400 invalid_request``.
``--allow-private-callbacks`` lets loopback, private addresses and plain http through.
"""

from __future__ import annotations

from typing import Any

from mockserver.call import Call
from mockserver.platform import urlpolicy
from mockserver.platform.errors import invalid_request


async def check_url(call: Call, url: str, *, field: str) -> None:
    """Refuse a url the service would not deliver to or fetch from (400 ``invalid_request``)."""
    try:
        await urlpolicy.resolve_and_check(
            url, allow_private=call.runtime.settings.allow_private_callbacks
        )
    except urlpolicy.UrlRefused as refused:
        raise invalid_request(
            f"{field}: {refused.message}",
            reason="url_not_allowed",
            field=field,
            rule=refused.reason,
        ) from None


async def requested_callback(call: Call) -> dict[str, str] | None:
    """The checked callback of a request body, or None when it asks for none."""
    body: dict[str, Any] = call.body
    if "callbackUrl" not in body:
        return None
    await check_url(call, body["callbackUrl"], field="callbackUrl")
    return {"url": body["callbackUrl"], "secret": body["callbackSecret"]}


def check_fetch_url(call: Call, url: str, *, field: str) -> None:
    """A url the service fetches (a video, an image, an asset): HTTPS and no literal private
    address, judged from the url alone (the mock fetches nothing, so it resolves nothing)."""
    try:
        urlpolicy.parse_target(url, allow_private=call.runtime.settings.allow_private_callbacks)
    except urlpolicy.UrlRefused as refused:
        raise invalid_request(
            f"{field}: {refused.message}",
            reason="url_not_allowed",
            field=field,
            rule=refused.reason,
        ) from None
