"""Rate-limit buckets on the control plane (``ratelimits.yaml`` beside this module): each
person's bucket (used, limit, when its window ends on the mock clock), emptying one, and the
limit itself (set for the world, or a sandbox; a reset puts back the start-up limit).

A bucket belongs to a person, a member of a workspace (platform/auth.py ``person_identity``),
so it is shown by workspace and member, never by key.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from mockserver.control.plane import control
from mockserver.platform.auth import person_identity, person_of
from mockserver.platform.envelope import iso_z
from mockserver.platform.errors import not_found
from mockserver.platform.ratelimit import WINDOW_SECONDS, Bucket
from mockserver.platform.validation import Validated
from mockserver.runtime import Runtime


@control("listRateLimits")
def list_rate_limits(rt: Runtime, call: Validated) -> dict[str, Any]:
    return {
        "limit": rt.rate.limit,
        "windowSeconds": WINDOW_SECONDS,
        "clock": rt.clock.mode,
        "now": iso_z(rt.clock.now()),
        "buckets": [_view(rt, bucket) for bucket in rt.rate.buckets()],
    }


@control("setRateLimit")
def set_rate_limit(rt: Runtime, call: Validated) -> dict[str, Any]:
    rt.rate.set_limit(int(call.body["limit"]))
    return {
        "limit": rt.rate.limit,
        "startLimit": rt.rate.start_limit,
        "windowSeconds": WINDOW_SECONDS,
    }


def _view(rt: Runtime, bucket: Bucket) -> dict[str, Any]:
    workspace_id, member = person_of(bucket.identity)
    workspace = rt.world.workspaces.get(workspace_id)
    limit = rt.rate.limit
    used = min(bucket.count, limit)
    ends = bucket.start + WINDOW_SECONDS
    return {
        "workspace": workspace["slug"] if workspace is not None else workspace_id,
        "member": member,
        "used": used,
        "limit": limit,
        "remaining": limit - used,
        "windowStartedAt": iso_z(datetime.fromtimestamp(bucket.start, UTC)),
        "resetsAt": iso_z(datetime.fromtimestamp(ends, UTC)),
        "resetsInSeconds": max(1, math.ceil(ends - rt.clock.timestamp())),
    }


@control("resetRateLimit")
def reset_rate_limit(rt: Runtime, call: Validated) -> dict[str, Any]:
    workspace = rt.world.workspace_by_slug(call.path["workspace"])
    if workspace is None:
        raise not_found(f"workspace {call.path['workspace']!r}")
    member = workspace["members"].get(call.path["member"])
    if member is None:
        raise not_found(f"member {call.path['member']!r}")
    rt.rate.reset(person_identity(workspace["id"], member["name"]))
    return {"workspace": workspace["slug"], "member": member["name"], "remaining": rt.rate.limit}
