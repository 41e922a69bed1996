"""The inspector in a real browser: Playwright (sync API) over the machine's Chromium.

Chromium is Debian's package (``/usr/bin/chromium``, or ``chromium`` on the PATH, or the
path in ``INSPECTOR_CHROMIUM``), launched by its path: Playwright's own browser download is
never used. Without it (or without the ``playwright`` package) the browser tests skip, saying
why; under CI (``CI`` set) they fail instead, as the PostgreSQL tests do.

Each module serves its own mock (in each xdist worker that runs its tests) and its own
browser; each test gets a fresh browser context (its own sessionStorage), a page whose
console errors and uncaught exceptions fail the test, and whose every control-plane answer is
checked against the control plane's document. ``INSPECTOR_SCREENSHOTS=docs/inspector`` has the
tests that show a view save a screenshot of it there.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from mockserver.app import create_app
from tests.conftest import TEST_SETTINGS
from tests.support.client import ApiClient
from tests.support.control_check import CheckedControl, check_control
from tests.support.serve import Served

ROOT = Path(__file__).resolve().parents[2]
VIEWPORT = {"width": 1440, "height": 900}  # the screenshots in the README are this wide
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def chromium() -> str | None:
    """The machine's Chromium, or None."""
    configured = os.environ.get("INSPECTOR_CHROMIUM")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    return next((path for path in CHROMIUM_PATHS if os.access(path, os.X_OK)), None)


def unavailable() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        from mockserver.extras import install_command

        return f"the playwright package is not installed: {install_command('test')}"
    if chromium() is None:
        return (
            "no Chromium found (/usr/bin/chromium, chromium on the PATH, or INSPECTOR_CHROMIUM): "
            "apt-get install chromium"
        )
    return None


def need_browser() -> None:
    reason = unavailable()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI needs a browser for the inspector's tests: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    need_browser()
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=15_000)  # the page polls every second; a loaded CI is slower
    with sync_playwright() as playwright:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        launched = playwright.chromium.launch(executable_path=chromium(), args=args)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    """This module's own mock, over HTTP (manual clock, loopback callbacks allowed)."""
    app = create_app(replace(TEST_SETTINGS, seed=None))
    with Served(app, lifespan="on") as server:
        yield server
    app.close()


@dataclass
class Mock:
    """The mock a test drives: its API (answers checked against the contract) and its control
    plane (answers checked against the control plane's document)."""

    base_url: str
    http: httpx.Client
    api: ApiClient = field(init=False)
    control: CheckedControl = field(init=False)

    def __post_init__(self) -> None:
        self.api = ApiClient(self.http)
        self.control = CheckedControl(self.http)


@pytest.fixture
def mock(served: Served) -> Iterator[Mock]:
    with httpx.Client(base_url=served.base_url, timeout=30) as http:
        handle = Mock(served.base_url, http)
        handle.control.call("POST", "/reset")
        handle.control.call("DELETE", "/faults")
        yield handle


class Watched:
    """A page whose console errors and uncaught exceptions are collected, and whose
    control-plane answers are kept to be checked."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        self.allowed: list[str] = []  # substrings of console errors a test expects
        self.answers: list[Any] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))
        page.on("response", self._response)

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.errors.append(f"console: {message.text}")

    def _response(self, response: Any) -> None:
        path = httpx.URL(response.url).path
        if path.startswith("/_mock/") and not path.startswith("/_mock/ui"):
            self.answers.append(response)

    def unexpected_errors(self) -> list[str]:
        return [e for e in self.errors if not any(allowed in e for allowed in self.allowed)]

    def check_answers(self) -> int:
        """Check every control-plane answer the page received; how many were checked."""
        checked = 0
        for answer in self.answers:
            try:
                body = answer.body()
            except Exception:  # its body is no longer kept by the browser
                continue
            request = httpx.Request(answer.request.method, answer.url)
            check_control(
                httpx.Response(answer.status, headers=answer.headers, content=body, request=request)
            )
            checked += 1
        return checked


@pytest.fixture
def watched(browser: Any, served: Served) -> Iterator[Watched]:
    """A fresh context (its own sessionStorage) and a page in it, not yet opened."""
    context = browser.new_context(viewport=VIEWPORT, base_url=served.base_url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    watched = Watched(page)
    yield watched
    try:
        assert watched.unexpected_errors() == [], "the page logged errors"
        assert watched.check_answers() > 0 or not watched.answers
    finally:
        context.close()


@pytest.fixture
def page(watched: Watched, mock: Mock) -> Any:
    """The inspector, opened on a mock reset to its fixtures."""
    watched.page.goto("/_mock/ui")
    watched.page.locator("#app").wait_for(state="visible")
    return watched.page


def screenshot(page: Any, name: str, clip: dict[str, int] | None = None) -> None:
    """Save a screenshot of the page (or of ``clip``, a rectangle of it) as ``<name>.png`` when
    INSPECTOR_SCREENSHOTS says where."""
    where = os.environ.get("INSPECTOR_SCREENSHOTS")
    if not where:
        return
    folder = Path(where) if Path(where).is_absolute() else ROOT / where
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), clip=clip)
