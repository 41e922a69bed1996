"""How a mock is configured (the command line's options, as data)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mockserver.resources import default_fixtures_path

# Two looks of the delivery loop (platform/delivery/worker.py: TICK), so that a live process renews
# its claims before they lapse.
MIN_DELIVERY_LEASE = 2.0


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8080
    fixtures: Path = field(default_factory=default_fixtures_path)
    seed: int | None = None
    clock: str = "real"  # real | manual
    rate_limit: int | None = None  # requests per minute per caller; None: the contract's
    allow_private_callbacks: bool = False
    control_plane: bool = True
    control_token: str | None = field(default=None, repr=False)  # a secret: never shown
    log_level: str = "info"
    sandbox_ttl: float = 3600.0  # seconds of wall time an idle sandbox lives
    max_sandboxes: int = 64
    # Seconds a process's claim on a webhook delivery lasts (renewed while its attempt is under
    # way): how long before another process sharing the store retries a delivery whose process
    # died mid-attempt. None: the contract's attempt timeout plus 5 s. At least
    # MIN_DELIVERY_LEASE.
    delivery_lease: float | None = None
    # Where the state lives (store/): in memory (None), a SQLite file (``state``), or the
    # store a URL names (``sqlite:///PATH``, ``postgresql://...``).
    state: Path | None = None
    store: str | None = None
