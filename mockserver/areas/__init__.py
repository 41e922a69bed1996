"""Domain areas of the emulated API, in the spirit of Moto.

Each area is a package holding ``state.py`` (its records and the interface document's rules for
them) and ``handlers.py`` (thin HTTP handlers bound to operationIds with ``@handler``). Handlers
call the cross-cutting services in ``mockserver.platform`` rather than re-implement them.
"""

from __future__ import annotations

import importlib

AREAS = (
    "meta",
    "account",
    "projects",
    "products",
    "channels",
    "campaigns",
    "jobs",
    "generation",
    "webhooks",
    "community",
    "autopilots",
    "themes",
    "discovery",
    "review",
    "assets",
    "library",
    "workflow",
)
HANDLER_MODULES = tuple(f"mockserver.areas.{area}.handlers" for area in AREAS)


def load() -> None:
    """Import every area's handlers, registering them."""
    for name in HANDLER_MODULES:
        importlib.import_module(name)
