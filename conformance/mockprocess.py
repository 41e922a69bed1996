"""``conformance run --mock``: the bundled mock started as a subprocess on a free loopback port.

The mock runs with the manual clock and private callbacks allowed (the suite's receiver listens on
loopback). Its fixture keys are read from the banner it prints at start
(``KEY  workspace / member (role)``): the run uses an owner key of the first workspace, an
owner key of another workspace as the second key, and a lower role's key (an editor's) of the
first workspace as the restricted key.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

import httpx

from mockserver.platform.tls import tls_context

_LISTENING = re.compile(r"mockserver listening on (\S+)")
_KEY = re.compile(r"^\s+(\S+)\s+(\S+) / (\S+) \((\w+)\)\s*$")


class MockStartError(RuntimeError):
    pass


@dataclass(frozen=True)
class FixtureKey:
    key: str
    workspace: str
    member: str
    role: str


def fixture_keys() -> list[FixtureKey]:
    """The keys of the bundled default fixtures (for a mock already running: ``--mock-url``)."""
    from mockserver.fixtures import load_fixtures
    from mockserver.resources import default_fixtures_path

    keys = []
    for workspace in load_fixtures(default_fixtures_path())["workspaces"]:
        for key in workspace.get("keys", []):
            role = workspace["members"][key["member"]]["role"]
            keys.append(FixtureKey(key["key"], workspace["slug"], key["member"], role))
    return keys


def owner_key(keys: list[FixtureKey], *, other_than: str | None = None) -> FixtureKey | None:
    for key in keys:
        if key.role == "owner" and (other_than is None or key.workspace != other_than):
            return key
    return None


RESTRICTED_ROLES = ("editor", "viewer")  # roles below owner and admin, the most capable first


def restricted_key(keys: list[FixtureKey], workspace: str) -> FixtureKey | None:
    """A key of a lower role in ``workspace`` (an editor's, else a viewer's): ``--restricted-key``
    for a run against the mock."""
    for role in RESTRICTED_ROLES:
        for key in keys:
            if key.workspace == workspace and key.role == role:
                return key
    return None


START_SECONDS = 30.0  # the longest the bundled mock may take to start and answer


@dataclass
class MockProcess:
    seed: int
    options: tuple[str, ...] = ()  # more ``mockserver`` options (a store, say), given last
    base_url: str = ""
    keys: list[FixtureKey] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    process: subprocess.Popen[str] | None = None

    def start(self, timeout: float = START_SECONDS) -> MockProcess:
        command = [
            sys.executable, "-m", "mockserver", "--host", "127.0.0.1", "--port", "0",
            "--clock", "manual", "--allow-private-callbacks", "--seed", str(self.seed),
            "--log-level", "warning", *self.options,
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        threading.Thread(target=self._pump, daemon=True, name="mock-output").start()
        deadline = time.monotonic() + timeout
        while not self.base_url:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise MockStartError("the bundled mock did not start:\n" + "\n".join(self.lines))
            time.sleep(0.02)
        self._wait_ready(deadline)
        self.keys = [FixtureKey(*m.groups()) for line in self.lines if (m := _KEY.match(line))]
        if not self.keys:
            self.stop()
            raise MockStartError("the bundled mock printed no fixture keys")
        return self

    def _pump(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            line = line.rstrip("\n")
            self.lines.append(line)
            if not self.base_url and (match := _LISTENING.search(line)):
                self.base_url = match.group(1)

    def _wait_ready(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            try:
                answer = httpx.get(
                    self.base_url + "/v1/openapi.json", timeout=2, verify=tls_context()
                )
                if answer.status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.stop()
        raise MockStartError("the bundled mock did not answer in time")

    def owner_key(self, *, other_than: str | None = None) -> FixtureKey | None:
        return owner_key(self.keys, other_than=other_than)

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush, nothing."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)

    def __enter__(self) -> MockProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
