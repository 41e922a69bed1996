"""Shared fixtures: one mock per session (manual clock), reset before every test."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from starlette.testclient import TestClient

from mockserver.app import MockApp, create_app
from mockserver.settings import Settings
from tests.support.client import ApiClient, ControlClient

TEST_SETTINGS = Settings(clock="manual", seed=7, allow_private_callbacks=True)


@pytest.fixture(scope="session")
def mock_app() -> MockApp:
    return create_app(TEST_SETTINGS)


@pytest.fixture(scope="session")
def asgi_http(mock_app: MockApp) -> Iterator[TestClient]:
    with TestClient(mock_app, base_url="http://mock.test", raise_server_exceptions=True) as client:
        yield client


@pytest.fixture
def control(asgi_http: TestClient) -> ControlClient:
    client = ControlClient(asgi_http)
    client.reset()
    return client


@pytest.fixture
def api(asgi_http: TestClient, control: ControlClient) -> ApiClient:
    """The emulated API through the ASGI app, state reset to the fixtures."""
    return ApiClient(asgi_http)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LiveServer:
    """A mock served by uvicorn on loopback, in a thread, for tests over real HTTP."""

    def __init__(self, settings: Settings) -> None:
        self.port = free_port()
        self.app = create_app(settings)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.base_url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the live mock did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def live_server() -> Iterator[LiveServer]:
    with LiveServer(TEST_SETTINGS) as server:
        yield server


@pytest.fixture
def live(live_server: LiveServer) -> Iterator[tuple[ApiClient, ControlClient]]:
    """The emulated API over real HTTP, and its control plane, state reset."""
    with httpx.Client(base_url=live_server.base_url, timeout=10) as http:
        control = ControlClient(http)
        control.reset()
        yield ApiClient(http), control


@pytest.fixture(scope="session")
def receiver_server():
    from tests.support.receiver import ReceiverServer

    server = ReceiverServer()
    with server:
        yield server


@pytest.fixture
def receiver(receiver_server):
    """A webhook receiver on loopback (the test mock allows private callbacks): ``receiver.url``."""
    receiver_server.app.clear()
    receiver_server.app.url = receiver_server.url
    return receiver_server.app
