"""The command line: starts, says where it is and which keys work, and stops cleanly."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import httpx
import pytest


def start(*args: str) -> tuple[subprocess.Popen[str], str, list[str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "mockserver", "--port", "0", "--log-level", "warning", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    assert process.stdout is not None
    while True:
        line = process.stdout.readline()
        if not line:
            raise AssertionError("mockserver exited: " + "".join(lines))
        lines.append(line)
        if line.startswith("  fixture keys:"):
            break
    for _ in range(6):
        lines.append(process.stdout.readline())
    base = re.search(r"listening on (http://\S+)", lines[0]).group(1)  # type: ignore[union-attr]
    deadline = time.monotonic() + 15
    while True:
        try:
            httpx.get(f"{base}/v1/openapi.json", timeout=1)
            break
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    return process, base, lines


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_it_prints_its_urls_and_keys_serves_and_stops_cleanly(stop):
    process, base, lines = start("--clock", "manual", "--seed", "3")
    try:
        text = "".join(lines)
        assert f"{base}/v1/openapi.json" in text and f"{base}/_mock/" in text
        for key in (
            "sk_test_acme_owner ",
            "sk_test_acme_owner_2",
            "sk_test_acme_viewer",
            "sk_test_globex_owner",
        ):
            assert key in text
        response = httpx.get(
            f"{base}/v1/campaigns", headers={"Authorization": "Bearer sk_test_acme_owner"}
        )
        assert response.status_code == 200 and response.headers["x-request-id"]
        assert httpx.get(f"{base}/_mock/clock").json()["mode"] == "manual"
    finally:
        process.send_signal(stop)
        assert process.wait(timeout=15) == 0


def test_no_control_plane_and_a_bad_fixtures_path():
    process, base, lines = start("--no-control-plane")
    try:
        assert "_mock" not in "".join(lines)
        assert httpx.post(f"{base}/_mock/reset").status_code == 404
    finally:
        process.terminate()
        process.wait(timeout=15)
    failed = subprocess.run(
        [sys.executable, "-m", "mockserver", "--fixtures", "/nonexistent.yaml"],
        capture_output=True,
        text=True,
    )
    assert failed.returncode == 2 and "cannot read fixtures" in failed.stderr
