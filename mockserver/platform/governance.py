"""Workspace governance: the agent-configuration lock, the kill switch, and policy reads.

- Lock: when the workspace locks agent configuration, community-campaign create and PATCH and
  autopilot PUT answer ``403 forbidden`` to a key whose creator is neither an owner nor an admin
  of the owning organisation; when the lock cannot be read, ``503 upstream_unavailable``.
- Kill switch: while on, autopilot manual runs, approvals and retries answer ``409 conflict``;
  while the policy cannot be read, ``503 upstream_unavailable`` (retry the same request).

The control plane sets ``agentConfigLocked``, ``killSwitch`` and ``policyReadable``.
"""

from __future__ import annotations

from typing import Any

from mockserver.platform.auth import Caller
from mockserver.platform.errors import ApiError, conflict, upstream_unavailable

POLICY_RETRY_AFTER = 5


def _unreadable() -> ApiError:
    return upstream_unavailable(
        "the workspace governance policy cannot be read right now; retry the same request",
        retry_after=POLICY_RETRY_AFTER,
        reason="governance_unreadable",
    )


def config_locked_for(workspace: dict[str, Any], caller: Caller) -> bool:
    """True when the lock applies to this caller (503 when the lock cannot be read)."""
    governance = workspace["governance"]
    if not governance["policyReadable"]:
        raise _unreadable()
    return governance["agentConfigLocked"] and not caller.governs


def require_config_access(workspace: dict[str, Any], caller: Caller) -> None:
    if config_locked_for(workspace, caller):
        raise ApiError(
            "forbidden",
            "this workspace locks agent configuration to owners and admins",
            details={"reason": "governance_locked"},
        )


def require_kill_switch_off(workspace: dict[str, Any]) -> None:
    governance = workspace["governance"]
    if not governance["policyReadable"]:
        raise _unreadable()
    if governance["killSwitch"]:
        raise conflict(
            "the workspace governance kill switch is on", reason="governance_kill_switch"
        )
