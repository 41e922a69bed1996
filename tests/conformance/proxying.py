"""``conformance proxy`` as a real process, for the proxy's tests."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"listening on (\S+),")


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")


@dataclass
class Proxy:
    """``with Proxy(upstream, tmp_path, *options) as proxy:`` runs the proxy for the block
    (stopped with SIGTERM); then ``proxy.status``, ``proxy.output``, ``proxy.report``."""

    upstream: str
    folder: Path
    options: tuple[str, ...] = ()
    url: str = ""
    status: int | None = None
    lines: list[str] = field(default_factory=list)

    def __init__(self, upstream: str, folder: Path, *options: str) -> None:
        self.upstream, self.folder, self.options = upstream, folder, options
        self.lines = []
        self.status = None

    @property
    def report_path(self) -> Path:
        return self.folder / "proxy.json"

    def __enter__(self) -> Proxy:
        command = [sys.executable, "-m", "conformance", "proxy", "--upstream", self.upstream,
                   "--listen", "127.0.0.1:0", "--report-json", str(self.report_path),
                   *self.options]  # fmt: skip
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            found = LISTENING.search(line)
            if found:
                self.url = found.group(1)
                break
        else:
            raise AssertionError("the proxy did not start:\n" + "".join(self.lines))
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def __exit__(self, *exc: object) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.status = self.process.wait(timeout=60)
        self._reader.join(timeout=10)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    @property
    def report(self) -> dict[str, Any]:
        return json.loads(self.report_path.read_text(encoding="utf-8"))


def wrapped(
    upstream: str, folder: Path, options: list[str], command: list[str], timeout: float = 900
) -> tuple[int, str, dict[str, Any]]:
    """``conformance proxy ... -- COMMAND``: (exit status, output, JSON report)."""
    report = folder / "wrapped.json"
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "proxy", "--upstream", upstream,
         "--listen", "127.0.0.1:0", "--report-json", str(report), *options, "--", *command],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    output = done.stdout + done.stderr
    loaded = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    return done.returncode, output, loaded


def suite_through_proxy(only: list[str] | None = None, *extra: str) -> list[str]:
    """The command that runs the suite against the proxy's address, as the mock's client
    (its control plane reached through the proxy too)."""
    selection = f" --only {','.join(only)}" if only else ""
    return [
        "sh", "-c",
        f'"{sys.executable}" -m conformance run --mock-url "$CONFORMANCE_PROXY_URL" --quiet '
        f"--seed 1{selection} {' '.join(extra)}",
    ]  # fmt: skip
