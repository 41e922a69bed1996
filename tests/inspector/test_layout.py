"""The Requests view fits the screen: measured in headless Chromium at the widths people use.

At each width the table scrolls only down (never sideways), every header shows whole inside
it, a time is one line, and the exchange pane sits beside or below the table inside the
window. The pane shows the newest request until a row is chosen, and every row names the
key's member, a 404's included.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.inspector.conftest import Mock, Watched, screenshot

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips, saying why (under CI, fails)
    expect = None

WIDTHS = (1024, 1280, 1440, 1920)  # under 1,100 px the exchange pane goes below the table
SIDE_BY_SIDE_FROM = 1100
SCREENSHOT_WIDTH = 1440
LONG_PATH = "/v1/no_such_resource_" + "0123456789abcdef" * 4  # no place to break a line
HEADERS = ["Time", "Key", "Operation", "Status", "Code", "Duration"]
UNKNOWN_KEY = "sk_test_not_a_key_of_anyone"

# What the page's Requests table looks like, measured in the browser (CSS pixels).
MEASURE = """() => {
  const table = document.getElementById("requests");
  const box = table.parentElement;
  const boxRect = box.getBoundingClientRect();
  const left = boxRect.left + box.clientLeft;
  const inside = { left, right: left + box.clientWidth };
  const tableRect = table.getBoundingClientRect();
  const headers = [...table.tHead.rows[0].cells].map((th) => {
    const r = th.getBoundingClientRect();
    return { text: th.textContent, left: r.left, right: r.right,
             scrollWidth: th.scrollWidth, clientWidth: th.clientWidth };
  });
  const times = [...table.tBodies[0].rows].map((row) => {
    const cell = row.cells[0];
    const range = document.createRange();
    range.selectNodeContents(cell);
    const style = getComputedStyle(cell);
    return { text: cell.textContent, lines: range.getClientRects().length,
             height: range.getBoundingClientRect().height,
             fontSize: parseFloat(style.fontSize),
             scrollWidth: cell.scrollWidth, clientWidth: cell.clientWidth };
  });
  const cut = [...table.tBodies[0].querySelectorAll("td, td *")]
    .filter((node) => node.scrollWidth > node.clientWidth && node.clientWidth > 0)
    .map((node) => ({ text: node.textContent, title: (node.closest("[title]") || {}).title || null,
                      ellipsis: getComputedStyle(node).textOverflow }));
  const pane = document.getElementById("exchange").getBoundingClientRect();
  return {
    box: { scrollWidth: box.scrollWidth, clientWidth: box.clientWidth, ...inside },
    table: { left: tableRect.left, right: tableRect.right },
    headers, times, cut,
    pane: { left: pane.left, right: pane.right, top: pane.top, bottom: pane.bottom },
    boxRect: { left: boxRect.left, right: boxRect.right, top: boxRect.top, bottom: boxRect.bottom },
    page: { scrollWidth: document.documentElement.scrollWidth,
            clientWidth: document.documentElement.clientWidth },
  };
}"""


def rows(page: Any) -> Any:
    return page.locator("#requests tbody tr")


def fill_the_journal(mock: Mock) -> int:
    """Requests whose cells are as wide as the table gets: long paths, long codes, every
    kind of key. Returns how many."""
    mock.control.call(
        "POST",
        "/faults",
        {
            "match": {"operationId": "listWebhookSubscriptions"},
            "status": 503,
            "code": "upstream_unavailable",
            "count": 1,
        },
    )
    assert mock.api.get("/v1/webhook-subscriptions", key="viewer").status_code == 503
    assert mock.api.get("/v1/webhook-subscriptions", key="editor").status_code == 200
    assert mock.api.post("/v1/products", json={}, key="editor").status_code == 400
    assert mock.api.get(LONG_PATH, key="admin").status_code == 404
    assert mock.api.get("/v1/products", key=UNKNOWN_KEY).status_code == 401
    assert mock.api.get("/v1/products", key=None).status_code == 401
    assert mock.api.get("/v1/products", params={"limit": 2}).status_code == 200
    return 7


def table_problems(got: dict[str, Any]) -> list[str]:
    """What does not fit in the measured table, each said in words (none: it fits)."""
    problems = []
    box, table = got["box"], got["table"]
    if box["scrollWidth"] > box["clientWidth"]:
        problems.append(f"the table scrolls sideways ({box['scrollWidth']} > {box['clientWidth']})")
    if table["right"] > box["right"] + 0.5:
        problems.append("the table is wider than its box")
    for th in got["headers"]:
        if th["scrollWidth"] > th["clientWidth"]:
            problems.append(f"header {th['text']!r} is clipped")
        if th["left"] < table["left"] - 0.5 or th["right"] > table["right"] + 0.5:
            problems.append(f"header {th['text']!r} sticks out of the table")
        if th["left"] < box["left"] - 0.5 or th["right"] > box["right"] + 0.5:
            problems.append(f"header {th['text']!r} is outside what the table shows")
    for cell in got["times"]:
        if cell["lines"] != 1 or cell["height"] >= 2 * cell["fontSize"]:
            problems.append(f"the time {cell['text']!r} takes {cell['lines']} lines")
        if cell["scrollWidth"] > cell["clientWidth"]:
            problems.append(f"the time {cell['text']!r} is cut")
    for cut in got["cut"]:  # a cell cut short ends in an ellipsis and shows all on hover
        if cut["ellipsis"] != "ellipsis":
            problems.append(f"{cut['text']!r} is cut without an ellipsis")
        if not (cut["title"] and cut["text"].strip() in cut["title"]):
            problems.append(f"{cut['text']!r} is cut and has no title that shows it whole")
    return problems


@pytest.fixture(params=WIDTHS, ids=[f"{width}px" for width in WIDTHS])
def sized(request: Any, watched: Watched, mock: Mock) -> Any:
    """The inspector opened in a window of the parametrized width."""
    watched.page.set_viewport_size({"width": request.param, "height": 900})
    watched.page.goto("/_mock/ui")
    watched.page.locator("#app").wait_for(state="visible")
    return watched.page


def test_the_requests_table_fits_at_each_width(sized: Any, mock: Mock):
    page = sized
    width = page.viewport_size["width"]
    count = fill_the_journal(mock)
    expect(rows(page)).to_have_count(count)
    got = page.evaluate(MEASURE)
    assert [th["text"] for th in got["headers"]] == HEADERS
    assert len(got["times"]) == count
    problems = table_problems(got)
    assert not problems, f"at {width} px: " + "; ".join(problems)

    # the exchange pane beside the table or below it, inside the window
    expect(page.locator("#exchange")).to_be_visible()
    got = page.evaluate(MEASURE)
    pane, table_box = got["pane"], got["boxRect"]
    if width >= SIDE_BY_SIDE_FROM:
        assert pane["left"] >= table_box["right"], "the exchange pane is not beside the table"
    else:
        assert pane["top"] >= table_box["bottom"], "the exchange pane is not below the table"
    assert pane["right"] <= width and got["page"]["scrollWidth"] <= got["page"]["clientWidth"]
    if width == SCREENSHOT_WIDTH:
        screenshot(page, "requests")


def test_the_exchange_pane_shows_the_newest_request_until_one_is_chosen(page: Any, mock: Mock):
    heading = page.locator("#exchange h2")
    mock.api.get("/v1/products", params={"limit": 1})
    expect(page.locator("#exchange")).to_be_visible()  # before any click
    expect(heading).to_have_text("GET /v1/products?limit=1")
    mock.api.get("/v1/projects")
    expect(heading).to_have_text("GET /v1/projects")  # it follows the newest
    expect(rows(page)).to_have_count(2)

    rows(page).filter(has_text="listProducts").click()
    expect(heading).to_have_text("GET /v1/products?limit=1")
    mock.api.get("/v1/campaigns")
    expect(rows(page)).to_have_count(3)
    expect(heading).to_have_text("GET /v1/products?limit=1")  # the chosen one stays
    page.get_by_role("button", name="Show the newest").click()
    expect(heading).to_have_text("GET /v1/campaigns")
    mock.api.get("/v1/products", params={"limit": 3})
    expect(heading).to_have_text("GET /v1/products?limit=3")  # following again


def test_every_row_names_the_key_a_404_included(page: Any, mock: Mock):
    assert mock.api.get("/v1/no-such-path", key="admin").status_code == 404
    assert mock.api.get("/v1/no-such-path", key=UNKNOWN_KEY).status_code == 404
    assert mock.api.get("/v1/no-such-path", key=None).status_code == 404
    assert mock.api.get("/v1/products", key=UNKNOWN_KEY).status_code == 401
    refused = mock.control.call("GET", "/requests", status=401)["requests"][0]
    unknown = refused["requestHeaders"]["authorization"].removeprefix("Bearer ")  # its label
    expect(rows(page)).to_have_count(4)
    keys = page.locator("#requests tbody tr td:nth-child(2)")
    expect(keys).to_have_text(
        [f"invalid key ({unknown})", "no key", f"invalid key ({unknown})", "bob (admin, acme)"]
    )
    rows(page).nth(3).click()
    expect(page.locator("#exchange")).to_contain_text("bob (admin, acme)")
    assert UNKNOWN_KEY not in page.content() and "sk_test" not in page.content()
