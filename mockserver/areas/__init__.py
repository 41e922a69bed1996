"""Domain areas of the emulated API, in the spirit of Moto.

Each area is a package holding ``state.py`` (its records and the interface document's rules for
them) and ``handlers.py`` (thin HTTP handlers bound to operationIds with ``@handler``). Handlers
call the cross-cutting services in ``mockserver.platform`` rather than re-implement them.
"""

from __future__ import annotations

import importlib

HANDLER_MODULES = (
    "mockserver.areas.meta.handlers",
    "mockserver.areas.account.handlers",
    "mockserver.areas.projects.handlers",
    "mockserver.areas.products.handlers",
    "mockserver.areas.channels.handlers",
    "mockserver.areas.campaigns.handlers",
    "mockserver.areas.not_built",
)


def load() -> None:
    """Import every area's handlers, registering them."""
    for name in HANDLER_MODULES:
        importlib.import_module(name)
