"""Off loopback the control plane is closed by default (issue 24 part 2).

Real processes, since what matters is what the mock binds: each binds 0.0.0.0 on a free port and
is reached on 127.0.0.1 (the mock decides by what it binds, not by who connects). Without a
token given, it makes one and prints it once in the banner, with an inspector address that hands
it to the page; ``--open-control-plane`` opens it on purpose and says so; loopback needs none.
"""

from __future__ import annotations

import ipaddress
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mockserver import cli
from mockserver.testing import mock_server
from tests.mock.test_cli import start
from tests.support.postgres import UNAVAILABLE, fresh_schema_url, server_url

ENV = "MOCKSERVER_CONTROL_TOKEN"
EVERYWHERE = ("--host", "0.0.0.0")
#: Control-plane reads, and the inspector's data calls among them.
READS = ("/_mock/clock", "/_mock/requests", "/_mock/workspaces", "/_mock/deliveries")


@contextmanager
def mock(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, str]]:
    """A mock process: where to reach it and its banner."""
    process, base, lines = start(*args, env=env)
    try:
        yield base, "".join(lines)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0


def env_with(**extra: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != ENV} | extra


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def assert_closed(base: str, token: str) -> None:
    """Every read needs ``token``: 401 with the standard error body without it or with another,
    and the answers never carry it."""
    for path in READS:
        for headers in ({}, bearer("not-" + token), {"Authorization": token}):
            refused = httpx.get(base + path, headers=headers)
            assert refused.status_code == 401, (path, headers, refused.text)
            body = refused.json()
            assert body["success"] is False and body["code"] == "unauthorized", body
            assert token not in refused.text
        opened = httpx.get(base + path, headers=bearer(token))
        assert opened.status_code == 200, (path, opened.text)
        assert token not in opened.text
    reset = httpx.post(f"{base}/_mock/reset")
    assert reset.status_code == 401
    # The page itself and the index (which says a token is needed) stay public.
    assert httpx.get(f"{base}/_mock/ui").status_code == 200
    assert httpx.get(f"{base}/_mock/").json()["tokenRequired"] is True


def assert_open(base: str) -> None:
    for path in READS:
        assert httpx.get(base + path).status_code == 200, path
    assert httpx.get(f"{base}/_mock/").json()["tokenRequired"] is False


def test_off_loopback_without_a_token_the_mock_makes_one_and_prints_it_once():
    with mock(*EVERYWHERE) as (base, banner):
        found = re.search(r"^  control token: (\S+)  \(made for this run", banner, re.M)
        assert found, banner
        token = found.group(1)
        assert len(token) >= 32 and re.fullmatch(r"[A-Za-z0-9_-]+", token)
        port = base.rsplit(":", 1)[1]
        assert f"http://0.0.0.0:{port}/_mock/ui#token={token}\n" in banner
        assert banner.count(token) == 2  # the token, and the inspector address that hands it
        assert_closed(base, token)
    with mock(*EVERYWHERE) as (_, again):
        assert token not in again, "a new token each run"


def test_open_control_plane_opens_it_and_the_banner_says_so():
    with mock(*EVERYWHERE, "--open-control-plane") as (base, banner):
        assert "control token" not in banner and "#token=" not in banner
        assert "the control plane is OPEN (--open-control-plane): anyone who reaches" in banner
        assert_open(base)


def test_a_given_token_is_used_and_never_printed():
    with mock(*EVERYWHERE, "--control-token", "given-T0ken") as (base, banner):
        assert "given-T0ken" not in banner and "#token=" not in banner
        assert "control token: the one given" in banner
        assert_closed(base, "given-T0ken")


def test_the_environment_gives_the_token():
    with mock(*EVERYWHERE, env=env_with(**{ENV: "from-the-env"})) as (base, banner):
        assert "from-the-env" not in banner and "#token=" not in banner
        assert_closed(base, "from-the-env")
    with mock(*EVERYWHERE, env=env_with(**{ENV: ""})) as (base, banner):  # compose's empty default
        token = re.search(r"control token: (\S+)  \(made", banner).group(1)  # type: ignore[union-attr]
        assert_closed(base, token)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "127.3.2.1"])
def test_on_loopback_no_token_is_needed(host: str):
    with mock("--host", host) as (base, banner):
        assert "control token" not in banner and "OPEN" not in banner
        assert_open(base)


def test_open_control_plane_and_a_token_contradict(capsys: pytest.CaptureFixture[str]):
    failed = subprocess.run(
        [sys.executable, "-m", "mockserver", *EVERYWHERE, "--port", "0", "--open-control-plane"],
        capture_output=True,
        text=True,
        env=env_with(**{ENV: "t"}),
    )
    assert failed.returncode == 2
    assert "--open-control-plane" in failed.stderr and "choose one" in failed.stderr
    assert "t" not in failed.stderr.replace("--", " ").split()


@given(st.ip_addresses())
def test_loopback_is_127_0_0_0_8_and_1(address: ipaddress.IPv4Address | ipaddress.IPv6Address):
    assert cli.is_loopback(str(address)) == (
        address in ipaddress.ip_network("127.0.0.0/8") or str(address) == "::1"
    )


def test_names_other_than_localhost_are_off_loopback():
    assert cli.is_loopback("localhost") and cli.is_loopback("LOCALHOST.")
    assert not cli.is_loopback("mock.internal") and not cli.is_loopback("0.0.0.0")


def test_the_commands_and_mock_server_take_the_token_from_the_environment():
    """``mockserver trigger`` and ``mockserver.testing.mock_server`` reach a closed mock with
    ``$MOCKSERVER_CONTROL_TOKEN`` (``listen`` shares the option: webhook_cli.add_common)."""
    with mock(*EVERYWHERE, "--clock", "manual") as (base, banner):
        token = re.search(r"control token: (\S+)  \(made", banner).group(1)  # type: ignore[union-attr]
        trigger = [sys.executable, "-m", "mockserver", "trigger", "job.failed", "--url", base]
        refused = subprocess.run(trigger, capture_output=True, text=True, env=env_with())
        assert refused.returncode != 0 and "401" in refused.stderr + refused.stdout
        done = subprocess.run(trigger, capture_output=True, text=True, env=env_with(**{ENV: token}))
        assert done.returncode == 0, done.stderr
        by_option = subprocess.run(
            [*trigger, "--control-token", token], capture_output=True, text=True, env=env_with()
        )
        assert by_option.returncode == 0, by_option.stderr
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(ENV, token)
            with mock_server(base) as handle:
                assert handle.control("GET", "/clock")["mode"] == "manual"


def test_workers_share_the_made_token():
    if server_url() is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs a PostgreSQL server for this test: {UNAVAILABLE}")
        pytest.skip(UNAVAILABLE)
    args = (*EVERYWHERE, "--workers", "2", "--store", fresh_schema_url())
    with mock(*args) as (base, banner):
        token = re.search(r"control token: (\S+)  \(made", banner).group(1)  # type: ignore[union-attr]
        for _ in range(6):  # a new connection each time: the calls spread over the workers
            assert httpx.get(f"{base}/_mock/clock", headers=bearer(token)).status_code == 200
            assert httpx.get(f"{base}/_mock/clock").status_code == 401


def test_the_settings_never_show_the_token():
    from mockserver.settings import Settings

    assert "s3cr3t-token" not in repr(Settings(control_token="s3cr3t-token"))


def test_a_made_token_can_be_given_back_as_the_option_s_own_word():
    """The banner says to set a token with --control-token: every token the mock makes is
    taken as that option's value (one beginning with '-' would read as another option)."""
    parser = cli.build_serve_parser()
    args = parser.parse_args(["--host", "0.0.0.0"])
    for _ in range(300):
        token, made = cli.control_token(args)
        assert made and token is not None and len(token) >= 32
        assert parser.parse_args(["--control-token", token]).control_token == token
