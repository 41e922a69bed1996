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
from typing import TYPE_CHECKING, Any

from mockserver.contract import Operation, default_contract
from mockserver.platform.errors import ApiError, upstream_unavailable
from mockserver.platform.faults import CredentialStoreOutage

if TYPE_CHECKING:
    from mockserver.world import World

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
        return person_identity(self.workspace_id, self.member)

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


def credential_store_unreachable(retry_after: int) -> ApiError:
    """The answer while the credential store cannot be reached: 503, never 401."""
    return upstream_unavailable(
        "the credential store cannot be reached right now; retry the same request",
        retry_after=retry_after,
        reason="credential_store_unreachable",
    )


def authenticate(
    world: World,
    authorization: str | None,
    outage: CredentialStoreOutage | None = None,
) -> Caller:
    """The caller a request's ``Authorization`` header names, or 401 ``unauthorized``.

    A well-formed key is looked up in the credential store; while ``outage`` says the store
    cannot be reached, that answers ``503 upstream_unavailable`` with ``Retry-After``.
    """
    if not authorization:
        raise unauthorized("missing API key: send Authorization: Bearer <API_KEY>")
    match = BEARER.fullmatch(authorization.strip())
    if match is None:
        raise unauthorized("malformed Authorization header: expected Bearer <API_KEY>")
    if outage is not None:
        outage.fired += 1
        raise credential_store_unreachable(outage.retry_after)
    record = world.key(hash_key(match.group(1)))
    if record is None or record.get("revoked"):
        raise unauthorized("invalid API key")
    workspace = world.workspace(record["workspace"])
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


def authorize(caller: Caller, op: Operation, writes: bool) -> None:
    """A key's role against an operation: a write needs a role that may write (paid calls check
    spending where they charge); every read is open to every role, usage included (reading
    usage never needs a key that can spend)."""
    if writes:
        require_write(caller)


def person_identity(workspace_id: str, member: str) -> str:
    """A person's identity: a member (by name) of a workspace (by id)."""
    return f"{workspace_id}/{member}"


def person_of(identity: str) -> tuple[str, str]:
    """The workspace id and member name of a :func:`person_identity`."""
    workspace_id, _, member = identity.partition("/")
    return workspace_id, member


def rate_identity(caller: Caller) -> str:
    """The rate-limit bucket a request counts in: the person behind the key (every key of one
    member shares it)."""
    return caller.identity


def revoke(key: dict[str, Any]) -> None:
    """Revoke a key (its stored record): it answers ``401 unauthorized`` from the next request
    on, well within the 30 seconds the interface document allows."""
    key["revoked"] = True
