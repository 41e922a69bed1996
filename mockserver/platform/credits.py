"""Credits, prices and capabilities: the one place a call is priced and charged.

The price table (``capabilities`` in the world, loaded from the fixtures and changed by the
control plane) is the same table ``GET /v1/capabilities`` quotes, so quote and charge agree.
A charge is all or nothing: it is refused before anything is written when the key may not
spend (403 ``forbidden``), a capability is unavailable (503 ``capability_unavailable``), a budget
policy caps the member (402 ``budget_capped``) or the balance is short (402
``insufficient_credits``, with the price, balance and shortfall in ``details``).

Capabilities come first. Anything ``GET /v1/capabilities`` reports unavailable (or does not offer)
answers ``503 capability_unavailable``, never ``404``; so every paid handler calls
:func:`require_capabilities` with the capabilities its request needs right after the body's own
checks (400) and before any lookup that could answer ``404`` (its project, source job or asset),
then runs its other checks and the charge. Only the capabilities this request would use are checked
(a remix from transcripts alone needs ``script``, or ``scene-plan`` for scenes, and is not refused
while ``video-analysis`` is down). When what a request needs depends on what a lookup finds, the
handler refuses before the lookup only when the request would be refused whatever the lookup finds,
i.e. every outcome needs some capability that is unavailable (so an unknown id answers 503, as the
interface document requires); otherwise it looks up first (an unknown id is ``404``: nothing says
the request would have used the unavailable capability) and checks what the found outcome needs
before its other checks. The one such operation today reduces to the plain check: an approval of a
footage edit costs ``video-render`` as a first approval and as a re-cut alike (generation/work.py
``APPROVAL_ITEMS``), so ``video-render`` is checked before the edit job is looked up.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from mockserver.platform.auth import Caller, require_spend
from mockserver.platform.envelope import iso_z
from mockserver.platform.errors import ApiError
from mockserver.world import World

Item = tuple[str, int]  # (capability name, quantity)


def capability(world: World, name: str) -> dict[str, Any]:
    """A capability of the price table; one the deployment does not offer is unavailable."""
    entry = world.capability(name)
    if entry is None:
        raise ApiError(
            "capability_unavailable",
            f"capability {name!r} is not offered by this deployment",
            details={"capability": name},
        )
    return entry


def require_available(world: World, name: str) -> dict[str, Any]:
    entry = capability(world, name)
    if not world.capability_available(entry):
        raise ApiError(
            "capability_unavailable",
            f"capability {name!r} is not available on this deployment right now",
            details={"capability": name},
        )
    return entry


def require_capabilities(world: World, items: Sequence[Item]) -> None:
    """503 ``capability_unavailable`` for the first of the items' capabilities that is not
    available now; a paid handler calls this before any lookup that could answer 404."""
    for name, _quantity in items:
        require_available(world, name)


def quote(world: World, items: Sequence[Item]) -> list[dict[str, Any]]:
    """Price lines for some work, from the live table (availability checked)."""
    lines = []
    for name, quantity in items:
        price = require_available(world, name)["price"]
        lines.append(
            {
                "capability": name,
                "quantity": quantity,
                "unitPrice": price,
                "credits": price * quantity,
            }
        )
    return lines


def total(lines: Sequence[dict[str, Any]]) -> int:
    return sum(line["credits"] for line in lines)


def check_affordable(world: World, caller: Caller, lines: Sequence[dict[str, Any]]) -> None:
    workspace = world.workspace(caller.workspace_id)
    if workspace["members"][caller.member].get("budgetCapped"):
        raise ApiError(
            "budget_capped",
            "a budget policy caps this member's spending; a top-up does not lift it",
            details={"member": caller.member},
        )
    price, balance = total(lines), workspace["credits"]
    if price > balance:
        raise ApiError(
            "insufficient_credits",
            f"this call costs {price} credits and the workspace has {balance}",
            details={
                "price": price,
                "balance": balance,
                "shortfall": price - balance,
                "capability": lines[0]["capability"] if len(lines) == 1 else None,
            },
        )


def catalogue(world: World, workspace: dict[str, Any]) -> dict[str, Any]:
    """What ``GET /v1/capabilities`` answers: the live catalogue, read from the table charges
    use, and the workspace's balance. Free: reading it is never billed."""
    capabilities = [
        {
            "name": name,
            "description": entry.get("description", ""),
            "available": entry["available"],
            "price": entry["price"],
            "unit": entry["unit"],
            **({"options": entry["options"]} if "options" in entry else {}),
        }
        for name, entry in world.capabilities().items()
    ]
    return {"capabilities": capabilities, "balance": {"credits": workspace["credits"]}}


def set_balance(workspace: dict[str, Any], balance: int) -> None:
    """Set a workspace's balance (the control plane's top-up); a budget cap stays as it is."""
    workspace["credits"] = balance


def charge(
    world: World,
    caller: Caller,
    items: Sequence[Item],
    *,
    operation_id: str,
    now: datetime,
    resource_id: str | None = None,
) -> dict[str, Any]:
    """Charge for some work and record it in the usage ledger; returns the contract's ``Cost``.

    Nothing is written unless every check passes. Give the resource's id (allocate it first)
    so the ledger says what each charge paid for.
    """
    require_spend(caller)
    lines = quote(world, items)
    check_affordable(world, caller, lines)
    workspace = world.workspace(caller.workspace_id)
    workspace["credits"] -= total(lines)
    for line in lines:
        world.insert(
            caller.workspace_id,
            "usage",
            {
                "id": world.ids.new("chg"),
                "capability": line["capability"],
                "quantity": line["quantity"],
                "credits": line["credits"],
                "operationId": operation_id,
                "resourceId": resource_id,
                "member": caller.member,
                "keyId": caller.key_id,
                "createdAt": iso_z(now),
            },
        )
    return {"credits": total(lines), "lines": lines, "balance": workspace["credits"]}
