"""Where a run sends its requests, and the bundled mock's sandboxes the suite runs in.

A :class:`Where` is what one run (or one worker of a run) talks to: the deployment's address,
the keys it uses and, for the bundled mock, who the primary key is and which sandbox it acts in.

A sandbox (``POST /_mock/sandboxes``, mockserver/sandboxes.py) is an isolated world inside one
mock: its own keys, clock, records, credits, rate-limit buckets and journal. A run against
``--mock-url`` makes one for itself (and each worker of ``--workers N`` one of its own) and ends
it at the end, so that several runs against one mock never disturb each other. Requests sent
without a key (or with a malformed one) cannot name a sandbox: the mock answers them (``401``,
or the public contract) from its base world, changing nothing there.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import httpx

from conformance.context import MockIdentity
from conformance.mockprocess import FixtureKey, owner_key, restricted_key
from conformance.target import TargetUnreachable
from mockserver.platform.tls import tls_context


class SandboxError(TargetUnreachable):
    """The mock would not make a sandbox (none offered, too many live, not answering)."""


@dataclass(frozen=True)
class Where:
    """The deployment a run talks to, and with which keys."""

    base_url: str
    api_key: str
    second_key: str | None = None
    restricted_key: str | None = None  # a lower role's key in the workspace of api_key
    same_person_key: str | None = None  # another key of the person who holds api_key
    identity: MockIdentity | None = None  # the bundled mock: who the primary key is
    keys: tuple[FixtureKey, ...] = field(default=(), repr=False)  # the mock's keys, if known
    sandbox: str | None = None  # the mock's sandbox the keys belong to
    # The mock's control token (off loopback its control plane needs one), never shown.
    control_token: str | None = field(default=None, repr=False)


def control_headers(token: str | None) -> dict[str, str]:
    """The headers of a call to the mock's control plane with ``token``, if any."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def mock_where(base_url: str, keys: list[FixtureKey]) -> Where:
    """The bundled mock with these keys: an owner key of the first workspace, an owner key of
    another workspace as the second key, and a lower role's key of the first as the restricted
    key."""
    primary = owner_key(keys)
    if primary is None:
        raise SandboxError(f"the mock at {base_url} has no owner key to run with")
    other = owner_key(keys, other_than=primary.workspace)
    lower = restricted_key(keys, primary.workspace)
    return Where(
        base_url=base_url.rstrip("/"),
        api_key=primary.key,
        second_key=other.key if other else None,
        restricted_key=lower.key if lower else None,
        identity=MockIdentity(primary.workspace, primary.member),
        keys=tuple(keys),
    )


def open_sandbox(
    base_url: str, seed: int, *, control_token: str | None = None, timeout: float = 60.0
) -> Where:
    """A new sandbox of the mock at ``base_url`` (ids seeded with ``seed``), with its keys."""
    url = base_url.rstrip("/") + "/_mock/sandboxes"
    try:
        response = httpx.post(
            url,
            json={"seed": seed},
            headers=control_headers(control_token),
            timeout=timeout,
            verify=tls_context(),
        )
    except httpx.TransportError as exc:
        raise SandboxError(f"POST {url}: {type(exc).__name__}: {exc}") from exc
    if response.status_code == 404:
        raise SandboxError(
            f"the mock at {base_url} makes no sandboxes (POST /_mock/sandboxes answered 404): "
            "run with --no-sandbox to use its base world"
        )
    if response.status_code != 200:
        raise SandboxError(
            f"the mock at {base_url} would not make a sandbox: {response.status_code} "
            f"{response.text[:300]}"
        )
    sandbox = response.json()["sandbox"]
    keys = [FixtureKey(k["key"], k["workspace"], k["member"], k["role"]) for k in sandbox["keys"]]
    return replace(mock_where(base_url, keys), sandbox=sandbox["id"], control_token=control_token)


def close_sandbox(where: Where, *, timeout: float = 30.0) -> bool:
    """End the sandbox (its keys answer 401 from now on); False when that could not be done.
    A sandbox already ended counts as closed."""
    if where.sandbox is None:
        return True
    try:
        response = httpx.delete(
            f"{where.base_url}/_mock/sandboxes/{where.sandbox}",
            headers=control_headers(where.control_token),
            timeout=timeout,
            verify=tls_context(),
        )
    except httpx.TransportError:
        return False
    return response.status_code in (200, 404)


@contextmanager
def sandboxed(base_url: str, seed: int, control_token: str | None = None) -> Iterator[Where]:
    """A sandbox of its own for the block; ended when the block ends, however it ends."""
    where = open_sandbox(base_url, seed, control_token=control_token)
    try:
        yield where
    finally:
        close_sandbox(where)
