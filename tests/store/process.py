"""A mock served by a real ``mockserver`` process (for kills, restarts and many workers)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

LISTENING = re.compile(r"listening on (http://\S+)")


class MockProcess:
    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.args = args
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[str] | None = None
        self.base_url = ""
        self.output: list[str] = []

    def start(self) -> MockProcess:
        command = [sys.executable, "-m", "mockserver", "--port", "0", "--log-level", "warning",
                   *self.args]  # fmt: skip
        self.proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.env,
            cwd=Path(__file__).resolve().parents[2],
        )
        deadline = time.monotonic() + 60
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("mockserver ended before listening:\n" + "".join(self.output))
            self.output.append(line)
            found = LISTENING.search(line)
            if found:
                self.base_url = found.group(1)
                break
        else:
            raise RuntimeError("mockserver did not start:\n" + "".join(self.output))
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base_url}/v1/openapi.json", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError("mockserver did not answer")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush, nothing."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


@contextmanager
def running(*args: str, env: dict[str, str] | None = None) -> Iterator[MockProcess]:
    mock = MockProcess(*args, env=env).start()
    try:
        yield mock
    finally:
        mock.stop()
