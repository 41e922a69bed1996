"""The kit's test processes keep the bytecode of what they import (tests/conftest.py,
``keep_bytecode``), and never beside the sources when the environment forbids that."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_this_process_and_those_it_starts_keep_bytecode_away_from_the_sources():
    assert not sys.dont_write_bytecode
    asked = subprocess.run(
        [sys.executable, "-c", "import sys; print(sys.dont_write_bytecode, sys.pycache_prefix)"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        check=True,
    )
    assert asked.stdout.split() == ["False", str(sys.pycache_prefix)]
    if sys.pycache_prefix is not None:  # the environment forbade bytecode beside the sources
        prefix = Path(sys.pycache_prefix)
        assert not prefix.is_relative_to(ROOT) or prefix.is_relative_to(Path(sys.prefix))
        assert "PYTHONDONTWRITEBYTECODE" not in os.environ
