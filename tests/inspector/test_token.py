"""The inspector of a mock started with --control-token: only the token form until the token
is given; then kept for the tab's session and sent as the bearer of every control call."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest

from mockserver.app import create_app
from tests.conftest import TEST_SETTINGS
from tests.inspector.conftest import Mock, Watched, screenshot
from tests.support.control_check import CheckedControl
from tests.support.serve import Served

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips, saying why (under CI, fails)
    expect = None

TOKEN = "inspector-control-token"


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    app = create_app(replace(TEST_SETTINGS, seed=None, control_token=TOKEN))
    with Served(app, lifespan="on") as server:
        yield server
    app.close()


@pytest.fixture
def mock(served: Served) -> Iterator[Mock]:
    with httpx.Client(base_url=served.base_url, timeout=30) as http:
        handle = Mock(served.base_url, http)
        handle.control = CheckedControl(http, TOKEN)
        handle.control.call("POST", "/reset")
        yield handle


def test_only_the_form_shows_until_the_token_is_given_then_it_is_kept(watched: Watched, mock: Mock):
    page = watched.page
    sent: list[str | None] = []
    page.on(
        "request",
        lambda request: (
            sent.append(request.headers.get("authorization"))
            if "/_mock/" in request.url and "/_mock/ui" not in request.url
            else None
        ),
    )
    page.goto("/_mock/ui")
    expect(page.locator("#login")).to_be_visible()
    expect(page.locator("#app")).to_be_hidden()
    expect(page.locator("#controls")).to_be_hidden()
    screenshot(page, "token", clip={"x": 0, "y": 0, "width": 640, "height": 200})

    watched.allowed.append("status of 401")  # the browser logs the refusal of a wrong token
    page.fill("#token", "not-the-token")
    page.get_by_role("button", name="Open the inspector").click()
    expect(page.locator("#login-error")).to_have_text("That token was refused.")
    expect(page.locator("#app")).to_be_hidden()
    assert page.evaluate("sessionStorage.getItem('mockserver.controlToken')") is None

    page.fill("#token", TOKEN)
    page.get_by_role("button", name="Open the inspector").click()
    expect(page.locator("#app")).to_be_visible()
    mock.api.get("/v1/products")
    expect(page.locator("#requests tbody tr")).to_have_count(1)
    assert TOKEN not in page.content()

    page.reload()  # kept for the tab's session: no form again
    expect(page.locator("#app")).to_be_visible()
    expect(page.locator("#login")).to_be_hidden()
    expect(page.locator("#requests tbody tr")).to_have_count(1)
    after_form = sent[sent.index("Bearer " + TOKEN) :]
    assert after_form and set(after_form) <= {"Bearer " + TOKEN, None}
    assert sent.count(None) == 1  # only the index (GET /_mock/, public) before the token


def test_another_tab_asks_again(watched: Watched, mock: Mock):
    page = watched.page
    page.goto("/_mock/ui")
    page.fill("#token", TOKEN)
    page.get_by_role("button", name="Open the inspector").click()
    expect(page.locator("#app")).to_be_visible()
    tab = page.context.new_page()  # the same browser profile, another tab: its own session
    try:
        tab.goto("/_mock/ui")
        expect(tab.locator("#login")).to_be_visible()
        expect(tab.locator("#app")).to_be_hidden()
    finally:
        tab.close()


def test_a_token_refused_later_brings_the_form_back(watched: Watched, mock: Mock):
    page = watched.page
    page.goto("/_mock/ui")
    expect(page.locator("#login")).to_be_visible()  # the page has made up its mind
    page.evaluate("sessionStorage.setItem('mockserver.controlToken', 'a-stale-token')")
    watched.allowed.append("status of 401")
    page.reload()
    expect(page.locator("#login")).to_be_visible()
    expect(page.locator("#login-error")).to_contain_text("refused")
    expect(page.locator("#app")).to_be_hidden()
    assert page.evaluate("sessionStorage.getItem('mockserver.controlToken')") is None


def test_the_banners_address_hands_the_token_over_once(watched: Watched, mock: Mock):
    """``/_mock/ui#token=...`` (what a mock that made its own token prints): no form, the token
    sent as the bearer of the data calls, kept for the tab, and gone from the address bar."""
    page = watched.page
    page.goto(f"/_mock/ui#token={TOKEN}")
    expect(page.locator("#app")).to_be_visible()
    expect(page.locator("#login")).to_be_hidden()
    mock.api.get("/v1/products")
    expect(page.locator("#requests tbody tr")).to_have_count(1)
    assert TOKEN not in page.url
    # The entry the page opened on was replaced, not kept: no entry of the history holds it.
    page.go_back()
    assert TOKEN not in page.url
    page.go_forward()
    assert page.evaluate("sessionStorage.getItem('mockserver.controlToken')") == TOKEN
    page.reload()  # the address no longer carries it; the tab's session does
    expect(page.locator("#app")).to_be_visible()
