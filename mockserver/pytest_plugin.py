"""The ``mockserver`` pytest fixture: a fresh sandbox of the mock for every test.

Registered through the ``pytest11`` entry point, so any pytest in an environment holding the kit
has it; nothing starts unless a test asks for the fixture. One mock serves the session:
in-process (a thread on a free loopback port, manual clock, loopback callbacks allowed), or the
running mock at ``--mockserver-url URL`` (or ``MOCKSERVER_URL``). Each test gets its own sandbox
(its own keys, clock, credits, records and deliveries), ended after the test, so tests never see
each other's state, also under ``pytest -n 8`` against one shared mock. The
``webhook_receiver`` fixture is a receiver on loopback that verifies each delivery's signature.
See mockserver.testing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from mockserver.testing import MockServer, WebhookReceiver


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mockserver", "the bundled mock's fixture (cgcas-kit)")
    group.addoption(
        "--mockserver-url",
        metavar="URL",
        help="use the mock running at URL (a sandbox per test) instead of one in-process",
    )


@pytest.fixture(scope="session")
def mockserver_session(request: pytest.FixtureRequest) -> Iterator[MockServer]:
    """The session's mock itself (its default world); tests should use ``mockserver``."""
    from mockserver.testing import ENV_URL, mock_server

    url = request.config.getoption("--mockserver-url") or os.environ.get(ENV_URL)
    with mock_server(url, sandbox=False) as mock:
        yield mock


@pytest.fixture
def mockserver(mockserver_session: MockServer) -> Iterator[MockServer]:
    """A sandbox of the session's mock for this test, ended after it."""
    from mockserver.testing import sandbox_of

    with sandbox_of(mockserver_session) as mock:
        yield mock


@pytest.fixture
def webhook_receiver() -> Iterator[WebhookReceiver]:
    """A webhook receiver on loopback for this test (mockserver.testing.webhook_receiver): hand
    the mock ``webhook_receiver.url`` and ``webhook_receiver.secret``, then
    ``webhook_receiver.wait(n)``."""
    from mockserver.testing import webhook_receiver as receiving

    with receiving() as receiver:
        yield receiver
