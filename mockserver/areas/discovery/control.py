"""Control operations of the discovery area: the status of discovery sources."""

from __future__ import annotations

from typing import Any

from mockserver.areas.discovery.plan import DEFAULT_SOURCES
from mockserver.areas.discovery.state import set_source_status, source_status
from mockserver.control.plane import control
from mockserver.platform.errors import not_found
from mockserver.platform.validation import Validated
from mockserver.runtime import Runtime


@control("listDiscoverySources")
def list_sources(rt: Runtime, call: Validated) -> dict[str, Any]:
    return {
        "sources": [
            {"source": name, "status": source_status(rt.world, name)} for name in DEFAULT_SOURCES
        ]
    }


@control("setDiscoverySource")
def set_source(rt: Runtime, call: Validated) -> dict[str, Any]:
    name = call.path["source"]
    if name not in DEFAULT_SOURCES:
        raise not_found(f"discovery source {name!r}")
    set_source_status(rt.world, name, call.body["status"])
    return {"source": name, "status": source_status(rt.world, name)}
