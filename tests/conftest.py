"""Shared fixtures: one mock per session (manual clock), reset before every test."""

from __future__ import annotations

import getpass
import itertools
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import settings

from conformance.gcpolicy import collect_less_often
from mockserver.app import MockApp, create_app
from mockserver.settings import Settings
from tests.support.client import ApiClient, ControlClient
from tests.support.inproc import InProcessClient
from tests.support.serve import Served
from tests.support.stores import test_store, with_test_store

TEST_SETTINGS = Settings(clock="manual", seed=7, allow_private_callbacks=True)

# No deadline per example: a deadline times the machine, not the code (CI's shared cores
# stalled one example of test_urlpolicy for 1.6 s). Speed is measured in bench/.
settings.register_profile("kit", deadline=None)
settings.load_profile("kit")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than there are cores. Many tests spend part of their time
    waiting (on a mock in another process, a socket, the database); the extra worker keeps the
    cores busy meanwhile."""
    return len(os.sched_getaffinity(0)) + 1


def keep_bytecode() -> None:
    """Where ``PYTHONDONTWRITEBYTECODE`` is set (as on many CI machines and container images),
    the test processes keep the bytecode of what they import all the same: under the test
    environment's own ``pycache`` folder (``PYTHONPYCACHEPREFIX``; a temporary folder outside a
    virtual environment), never beside the sources. The run starts dozens of Python processes
    (xdist's workers, mocks, the suite's runs and workers, pytest inside pytest) that import
    the kit, which pytest also rewrites as its plugin's distribution: compiling it anew in each
    cost about a fifth of the run's CPU (a fresh clone: 123 s of wall and 203 s of CPU, and 95 s
    and 150 s keeping it). Set in this process before xdist starts its workers, and passed on
    to every process the tests start."""
    if not sys.dont_write_bytecode:
        return  # Python keeps it beside the sources, as it does by default
    if sys.prefix != sys.base_prefix:
        prefix = Path(sys.prefix) / "pycache"
    else:
        try:
            user = getpass.getuser()
        except (KeyError, OSError):  # no user name to be had (a container's bare uid)
            user = "anyone"
        prefix = Path(tempfile.gettempdir()) / f"cgcas-kit-pycache-{user}"
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
    sys.pycache_prefix = str(prefix)
    sys.dont_write_bytecode = False


def pytest_configure(config: pytest.Config) -> None:
    """This process collects cyclic garbage as the suite's own do (conformance/gcpolicy.py): with
    CPython's default thresholds, full collections of a heap that only grows (the contracts,
    Hypothesis's caches, the session's mocks) took ~20% of a worker's CPU. It keeps bytecode
    (:func:`keep_bytecode`).

    Every app the tests make runs on the store MOCKSERVER_TEST_STORE names (its own)."""
    collect_less_often()
    keep_bytecode()
    if test_store() == "memory":
        return
    original = MockApp.__init__

    def on_test_store(self: MockApp, settings: Settings | None = None, **kwargs: object) -> None:
        original(self, with_test_store(settings or Settings()), **kwargs)  # type: ignore[arg-type]

    MockApp.__init__ = on_test_store  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def mock_app() -> MockApp:
    return create_app(TEST_SETTINGS)


@pytest.fixture(scope="session")
def asgi_http(mock_app: MockApp) -> Iterator[httpx.Client]:
    with InProcessClient(mock_app, base_url="http://mock.test") as client:
        yield client


@pytest.fixture
def control(asgi_http: httpx.Client) -> ControlClient:
    client = ControlClient(asgi_http)
    client.reset()
    return client


@pytest.fixture
def api(asgi_http: httpx.Client, control: ControlClient) -> ApiClient:
    """The emulated API through the ASGI app, state reset to the fixtures."""
    return ApiClient(asgi_http)


@pytest.fixture(scope="session")
def live_server() -> Iterator[Served]:
    """A mock served over real HTTP (its own instance, for tests that need sockets)."""
    with Served(create_app(TEST_SETTINGS)) as server:
        yield server


@pytest.fixture
def live(live_server: Served) -> Iterator[tuple[ApiClient, ControlClient]]:
    """The emulated API over real HTTP, and its control plane, state reset."""
    with httpx.Client(base_url=live_server.base_url, timeout=10) as http:
        control = ControlClient(http)
        control.reset()
        yield ApiClient(http), control


_RECEIVER_PREFIXES = itertools.count(1)


@pytest.fixture(scope="session")
def receiver_server():
    from tests.support.receiver import Receiver

    with Served(Receiver()) as server:
        yield server


@pytest.fixture
def receiver(receiver_server):
    """A webhook receiver on loopback (the test mock allows private callbacks): ``receiver.url``."""
    prefix = f"/t{next(_RECEIVER_PREFIXES)}"
    receiver_server.app.clear(prefix)
    receiver_server.app.url = receiver_server.base_url + prefix
    return receiver_server.app
