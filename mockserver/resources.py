"""Where the kit's bundled data lives: the contract and the default fixtures.

Both are package data (``mockserver/_bundled`` links to ``spec/`` and ``fixtures/`` at the top of
the repository), so an installed kit works from any directory.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_BUNDLED = resources.files("mockserver") / "_bundled"


def spec_path() -> Path:
    """Path of the contract, ``spec/openapi.yaml``."""
    return Path(str(_BUNDLED / "openapi.yaml"))


def fixtures_dir() -> Path:
    """Directory of the bundled fixtures (``fixtures/``)."""
    return Path(str(_BUNDLED / "fixtures"))


def default_fixtures_path() -> Path:
    """Path of the default fixtures, ``fixtures/default.yaml``."""
    return fixtures_dir() / "default.yaml"
