"""The command line: starts, says where it is and which keys work, and stops cleanly."""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import time
from importlib import metadata

import httpx
import pytest

from mockserver import cli


def start(
    *args: str, command: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str, list[str]]:
    """A mock in its own process, its banner read through the fixture keys; ``env`` is its whole
    environment (default: the test's, less ``$MOCKSERVER_CONTROL_TOKEN``). ``base`` is where to
    reach it: on 127.0.0.1 when it binds every address."""
    argv = [sys.executable, "-m", "mockserver", *command, "--port", "0", "--log-level", "warning"]
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != "MOCKSERVER_CONTROL_TOKEN"}
    process = subprocess.Popen(
        [*argv, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
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
    base = base.replace("://0.0.0.0:", "://127.0.0.1:")
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
    failed = subprocess.run(  # on a free port: a mock the developer runs on 8080 is no matter
        [sys.executable, "-m", "mockserver", "--port", "0", "--fixtures", "/nonexistent.yaml"],
        capture_output=True,
        text=True,
    )
    assert failed.returncode == 2 and "cannot read fixtures" in failed.stderr


def test_a_taken_port_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["--host", "127.0.0.1", "--port", str(port)])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2
    assert out == ""  # nothing claims to listen
    assert err == (
        f"mockserver: port {port} is in use; pick another with --port N, "
        "or --port 0 for a free one\n"
    )


def test_a_host_it_cannot_listen_on_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--host", "192.0.2.1", "--port", "0"])  # TEST-NET-1: never this machine's
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == ""
    assert err.startswith("mockserver: cannot listen on 192.0.2.1:0: ") and err.count("\n") == 1


def test_version_is_the_kits(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"mockserver {metadata.version('cgcas-kit')}\n"


def test_the_package_and_its_metadata_agree_on_the_version():
    import mockserver

    assert metadata.version("cgcas-kit") == mockserver.__version__


def test_port_0_prints_the_port_it_listens_on_and_the_clock():
    process, base, lines = start("--clock", "manual")
    try:
        port = int(base.rsplit(":", 1)[1])
        assert port != 0
        with socket.socket() as probe, pytest.raises(OSError):  # the printed port is taken
            probe.bind(("127.0.0.1", port))
        clock = httpx.get(f"{base}/_mock/clock").json()
        assert clock["now"] == "2026-11-20T09:00:00Z"  # the fixtures' start
        assert f"  clock:         manual, now {clock['now']}\n" in lines
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_serve_is_the_default_command_and_may_be_named():
    process, base, lines = start("--seed", "1", command=("serve",))
    try:
        assert lines[0] == f"mockserver listening on {base}\n"
        assert lines[3] == f"  inspector:     {base}/_mock/ui  (what the mock did, in a browser)\n"
        assert re.fullmatch(
            r"  clock:         real, now \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n", lines[4]
        )
        assert httpx.get(f"{base}/v1/openapi.json").status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0


def test_help_names_the_commands(capsys: pytest.CaptureFixture[str]):
    for argv in (["--help"], ["serve", "--help"]):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(argv)
        out = capsys.readouterr().out
        assert exit_info.value.code == 0
        assert out.startswith("usage: mockserver [serve] [options]")
        assert "--port PORT" in out and "serve      serve the mock" in out


def test_an_unknown_command_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["frobnicate", "--port", "0"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        "mockserver: unknown command 'frobnicate' "
        "(commands: serve, listen, trigger, proxy; default: serve)\n"
    )


def test_a_registered_command_gets_its_own_arguments(monkeypatch: pytest.MonkeyPatch):
    """The hook ``listen`` and ``trigger`` plug into: COMMANDS[name] = (build_parser, run)."""
    seen: list[argparse.Namespace] = []

    def build_parser(prog: str) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(prog=prog)
        parser.add_argument("--port", type=int)
        return parser

    def run(args: argparse.Namespace) -> int:
        seen.append(args)
        return 7

    monkeypatch.setitem(cli.COMMANDS, "listen", (build_parser, run))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["listen", "--port", "9"])
    assert exit_info.value.code == 7 and seen[0].port == 9
