"""What the mock's start-up leaves for later: packages only some requests need are imported when
first needed, and a process's own data key is made when a secret is first sealed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mockserver.platform.secretbox import SecretBox

STARTED = """
import sys
from mockserver.app import create_app
from mockserver.settings import Settings

create_app(Settings(port=1)).close()
print(" ".join(sorted(name for name in {NAMES} if name in sys.modules)))
"""
LATER = ("httpx", "jsonschema", "cryptography", "rich")


def test_a_started_mock_has_not_imported_what_only_some_requests_need() -> None:
    code = STARTED.replace("{NAMES}", repr(set(LATER)))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == []


def test_a_box_without_a_key_makes_its_own_when_first_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MOCKSERVER_DATA_KEY", raising=False)
    box, other = SecretBox(), SecretBox()
    sealed = box.seal("whsec_example")
    assert "whsec_example" not in sealed
    assert box.open(sealed) == "whsec_example"
    assert other.open(sealed) is None  # another process's (another box's) key
    assert other.open(other.seal("x")) == "x"


def test_a_key_given_is_used_and_checked_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from cryptography.fernet import Fernet

    key = Fernet.generate_key()
    monkeypatch.setenv("MOCKSERVER_DATA_KEY", key.decode())
    assert SecretBox().open(SecretBox().seal("shared")) == "shared"
    assert SecretBox(key).open(SecretBox().seal("shared")) == "shared"
    monkeypatch.setenv("MOCKSERVER_DATA_KEY", "not a key")
    with pytest.raises(ValueError):
        SecretBox()
