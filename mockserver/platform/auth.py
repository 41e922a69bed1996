"""Who is calling: a bearer key resolves to a workspace, a member and a role.

Keys are stored as SHA-256 hashes only; the key itself is never kept, logged or returned.
Roles (inferred, ``x-roles`` in the contract): owner and admin may do everything, including
configuration in a governance-locked workspace; editors spend and change resources; viewers
only read.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from mockserver.contract import default_contract
from mockserver.platform.errors import ApiError

BEARER = re.compile(r"Bearer ([A-Za-z0-9._~+/=-]{1,512})")
GOVERNING_ROLES = frozenset({"owner", "admin"})
SPENDING_ROLES = frozenset({"owner", "admin", "editor"})


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_label(digest: str) -> str:
    """The non-secret label a key is known by (journal, usage), from its hash."""
    return f"key_{digest[:12]}"


@dataclass(frozen=True)
class Caller:
    workspace_id: str
    workspace_slug: str
    member: str
    role: str
    key_id: str

    @property
    def identity(self) -> str:
        """The person behind the key: every key of one member shares one rate-limit bucket."""
        return f"{self.workspace_id}/{self.member}"

    @property
    def can_write(self) -> bool:
        return self.role != "viewer"

    @property
    def can_spend(self) -> bool:
        return self.role in SPENDING_ROLES

    @property
    def governs(self) -> bool:
        """Owner, or admin of the owning organisation: may configure a locked workspace."""
        return self.role in GOVERNING_ROLES


def unauthorized(message: str) -> ApiError:
    return ApiError("unauthorized", message)


def authenticate(world_data: dict[str, Any], authorization: str | None) -> Caller:
    """The caller a request's ``Authorization`` header names, or 401 ``unauthorized``."""
    if not authorization:
        raise unauthorized("missing API key: send Authorization: Bearer <API_KEY>")
    match = BEARER.fullmatch(authorization.strip())
    if match is None:
        raise unauthorized("malformed Authorization header: expected Bearer <API_KEY>")
    record = world_data["keys"].get(hash_key(match.group(1)))
    if record is None or record.get("revoked"):
        raise unauthorized("invalid API key")
    workspace = world_data["workspaces"][record["workspace"]]
    member = workspace["members"][record["member"]]
    return Caller(
        workspace_id=workspace["id"],
        workspace_slug=workspace["slug"],
        member=member["name"],
        role=member["role"],
        key_id=record["keyId"],
    )


def check_workspace_slug(caller: Caller, slug: str | None) -> None:
    """An ``X-Workspace-Slug`` that disagrees with the key's workspace is refused (inferred)."""
    if slug is None or slug == caller.workspace_slug:
        return
    rule = default_contract().document["components"]["securitySchemes"]["apiKey"][
        "x-workspace-slug-mismatch"
    ]
    raise ApiError(
        rule["code"],
        "X-Workspace-Slug does not match the key's workspace; omit the header",
        status=rule["status"],
        details={"reason": rule["detailsReason"]},
    )


def require_write(caller: Caller) -> None:
    if not caller.can_write:
        raise ApiError(
            "forbidden", "this key's role may only read", details={"reason": "read_only_role"}
        )


def require_spend(caller: Caller) -> None:
    if not caller.can_spend:
        raise ApiError(
            "forbidden", "this key's role may not spend credits", details={"reason": "cannot_spend"}
        )
