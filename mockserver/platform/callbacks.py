"""Urls the service delivers to or fetches from, checked at request time.

- Per-job callbacks: ``callbackUrl`` and ``callbackSecret`` come together and the secret is 32
  to 512 characters (both enforced by the contract's schema); the url must be HTTPS and
  resolve only to public addresses (urlpolicy.py). So must a webhook subscription's url.
- A url the service fetches (a video, an image, an asset) is judged from the url alone: the
  mock fetches nothing, so it resolves nothing.

A refusal is ``400 invalid_request`` naming the field and the rule broken.
``--allow-private-callbacks`` lets loopback, private addresses and plain http through.
"""

from __future__ import annotations

from typing import Any, Protocol

from mockserver.platform import urlpolicy
from mockserver.platform.errors import ApiError, invalid_request
from mockserver.settings import Settings


class Configured(Protocol):
    """What holds a mock's settings (the runtime)."""

    @property
    def settings(self) -> Settings: ...


class UrlCall(Protocol):
    """What the url checks read of a call (mockserver/call.py's ``Call`` is one): its body,
    and ``--allow-private-callbacks`` from its runtime's settings."""

    @property
    def runtime(self) -> Configured: ...

    @property
    def body(self) -> Any: ...


def _refusal(refused: urlpolicy.UrlRefused, field: str) -> ApiError:
    return invalid_request(
        f"{field}: {refused.message}", reason="url_not_allowed", field=field, rule=refused.reason
    )


async def check_url(call: UrlCall, url: str, *, field: str) -> None:
    """Refuse a url the service would not deliver to (400 ``invalid_request``)."""
    try:
        await urlpolicy.resolve_and_check(
            url, allow_private=call.runtime.settings.allow_private_callbacks
        )
    except urlpolicy.UrlRefused as refused:
        raise _refusal(refused, field) from None


async def requested_callback(call: UrlCall) -> dict[str, str] | None:
    """The checked callback of a request body, or None when it asks for none."""
    body: dict[str, Any] = call.body
    if "callbackUrl" not in body:
        return None
    await check_url(call, body["callbackUrl"], field="callbackUrl")
    return {"url": body["callbackUrl"], "secret": body["callbackSecret"]}


def check_fetch_url(call: UrlCall, url: str, *, field: str) -> None:
    """Refuse a url the service would not fetch: HTTPS, no literal private address."""
    try:
        urlpolicy.parse_target(url, allow_private=call.runtime.settings.allow_private_callbacks)
    except urlpolicy.UrlRefused as refused:
        raise _refusal(refused, field) from None
