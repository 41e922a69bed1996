"""The inspector in headless Chromium: a person follows an integration from a request to a
verified delivery on one page, and steers the mock through its control plane."""

from __future__ import annotations

import re
from typing import Any

from tests.inspector.conftest import Mock, Watched, screenshot

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips, saying why (under CI, fails)
    expect = None

SECRET = "inspector-callback-" + "c" * 24
HOSTILE = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">'


def rows(page: Any) -> Any:
    return page.locator("#requests tbody tr")


def render(mock: Mock, project_id: str = "prj_acme_01", **extra: Any) -> dict[str, Any]:
    body = {"projectId": project_id, "story": "A walk in the park.", **extra}
    response = mock.api.post("/v1/video/render", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json()["job"])


def open_view(page: Any, name: str) -> None:
    page.locator(f'.tabs [data-view="{name}"]').click()
    expect(page.locator(f"#view-{name}")).to_be_visible()


def test_a_request_appears_live_and_opens_to_the_whole_exchange(page: Any, mock: Mock):
    expect(page.locator("#requests-empty")).to_be_visible()
    created = mock.api.post(
        "/v1/products",
        json={"name": "Live product", "description": "seen in the inspector"},
        headers={"Idempotency-Key": "inspector-1"},
    )
    assert created.status_code == 200, created.text
    product_id = created.json()["product"]["id"]
    row = rows(page).filter(has_text="createProduct")
    expect(row).to_have_count(1)  # without a reload
    expect(row).to_contain_text("alice (owner, acme)")
    expect(row).to_contain_text("200")
    mock.api.get("/v1/products", params={"limit": 2}, key="viewer")
    expect(rows(page)).to_have_count(2)
    expect(rows(page).first).to_contain_text("listProducts")  # newest first
    expect(rows(page).first).to_contain_text("victor (viewer, acme)")

    row.click()
    exchange = page.locator("#exchange")
    expect(exchange).to_be_visible()
    expect(exchange.locator(".request-body")).to_contain_text('"name": "Live product"')
    expect(exchange.locator(".response-body")).to_contain_text(product_id)
    expect(exchange).to_contain_text("idempotency-key")
    expect(exchange).to_contain_text(re.compile(r"authorization\s*Bearer key_[0-9a-f]{12}"))
    curl = exchange.locator("pre.curl")
    expect(curl).to_contain_text(f"curl -X POST '{mock.base_url}/v1/products'")
    expect(curl).to_contain_text('-H "Authorization: Bearer $API_KEY"')
    expect(curl).to_contain_text("-H 'idempotency-key: inspector-1'")
    expect(curl).to_contain_text('--data-raw \'{"name":"Live product"')
    assert "sk_test" not in page.content()  # no key, anywhere on the page


def test_filters_narrow_the_table_to_an_operation_a_status_class_and_a_member(
    page: Any, mock: Mock
):
    mock.api.get("/v1/products")
    mock.api.post("/v1/products", json={"name": "Refused"}, key="viewer")  # 403
    mock.api.get("/v1/projects", key="editor")
    mock.api.post("/v1/products", json={}, key="editor")  # 400
    expect(rows(page)).to_have_count(4)

    page.select_option("#filter-status", "4xx")
    expect(rows(page)).to_have_count(2)
    for text in ("403", "400"):
        expect(rows(page).filter(has_text=text)).to_have_count(1)

    page.select_option("#filter-member", "acme/erin")
    expect(rows(page)).to_have_count(1)
    expect(rows(page)).to_contain_text("invalid_request")

    page.select_option("#filter-status", "")
    expect(rows(page)).to_have_count(2)
    page.fill("#filter-operation", "listProjects")
    page.locator("#filter-operation").dispatch_event("change")
    expect(rows(page)).to_have_count(1)
    expect(rows(page)).to_contain_text("erin (editor, acme)")
    mock.api.get("/v1/projects", key="editor")  # still live while filtered
    expect(rows(page)).to_have_count(2)


def test_a_reset_empties_the_table(page: Any, mock: Mock):
    mock.api.get("/v1/products")
    expect(rows(page)).to_have_count(1)
    mock.control.call("POST", "/reset")
    expect(rows(page)).to_have_count(0)
    expect(page.locator("#requests-empty")).to_be_visible()


def test_a_job_finishes_when_the_clock_advances_on_the_page(page: Any, mock: Mock):
    job = render(mock)
    open_view(page, "jobs")
    card = page.locator(f'[data-job="{job["id"]}"]')
    expect(card).to_contain_text("render")
    expect(card.locator(".job-head .badge")).to_have_text("queued")
    card.locator(".job-head").click()
    expect(card.locator(".timeline li")).to_have_count(1)
    expect(card.locator(".timeline")).to_contain_text("job.progressed")
    expect(card).to_contain_text("Will end done")

    page.locator('.advance[data-seconds="3600"]').click()
    expect(card.locator(".job-head .badge")).to_have_text("done")
    expect(card.locator(".timeline")).to_contain_text("job.completed")
    expect(card.locator(".timeline")).to_contain_text("artifact.ready")
    expect(card).to_contain_text("Ended done.")
    expect(page.locator("#clock-now")).to_have_text("2026-11-20 10:00:00")
    assert mock.api.get(f"/v1/jobs/{job['id']}").json()["job"]["status"] == "done"
    screenshot(page, "jobs")


def test_an_outcome_is_decided_on_the_page(page: Any, mock: Mock):
    later, now = render(mock), render(mock)
    open_view(page, "jobs")
    for job in (later, now):
        page.locator(f'[data-job="{job["id"]}"] .job-head').click()
    later_card = page.locator(f'[data-job="{later["id"]}"]')
    later_card.locator('button.decide[data-outcome="qa_failed"]').click()
    expect(later_card).to_contain_text("Will end qa_failed")
    expect(later_card.locator(".job-head .badge")).to_have_text("queued")

    now_card = page.locator(f'[data-job="{now["id"]}"]')
    now_card.locator("input.immediately").check()
    now_card.locator('button.decide[data-outcome="cancelled"]').click()
    expect(now_card.locator(".job-head .badge")).to_have_text("cancelled")
    expect(now_card.locator("button.decide")).to_have_count(0)

    page.locator('.advance[data-seconds="86400"]').click()
    expect(later_card.locator(".job-head .badge")).to_have_text("qa_failed")
    expect(later_card.locator(".timeline")).to_contain_text("job.failed")
    assert mock.api.get(f"/v1/jobs/{later['id']}").json()["job"]["artifacts"] is None


def test_a_delivery_is_shown_verified_and_replayed(page: Any, mock: Mock, receiver: Any):
    job = render(mock, callbackUrl=f"{receiver.url}/hooks", callbackSecret=SECRET)
    receiver.script([503, 200, 200])
    open_view(page, "deliveries")
    expect(page.locator("#deliveries")).to_contain_text("No delivery yet.")
    page.locator('.advance[data-seconds="3600"]').click()  # the job ends; its callback is due
    event = page.locator(".event-card")
    expect(event).to_have_count(1)
    expect(event).to_contain_text("render.completed")
    expect(event).to_contain_text(f"job {job['id']}")
    first = event.locator(".delivery").first
    expect(first.locator(".attempts tbody tr")).to_have_count(1)
    expect(first.locator(".attempts")).to_contain_text("503")
    expect(first.locator(".signature .badge")).to_have_text("valid")
    expect(first).to_contain_text("next attempt")

    page.locator("#advance-due").click()  # to the retry: delivered
    expect(first.locator(".attempts tbody tr")).to_have_count(2)
    expect(first.locator(".badge.state-delivered")).to_have_count(1)
    expect(first.locator(".signature .badge")).to_have_text(["valid", "valid"])

    first.locator("button.replay").click()
    replay = event.locator(".delivery").filter(has_text="replay of")
    expect(replay).to_have_count(1)
    expect(replay.locator(".badge.state-delivered")).to_have_count(1)
    expect(replay.locator(".signature .badge")).to_have_text("valid")
    first.get_by_role("button", name="Body").click()
    expect(first.locator("pre.body")).to_contain_text('"schemaVersion": "job-event.v1"')
    ids = {got.headers["x-service-event-id"] for got in receiver.deliveries}
    assert len(receiver.deliveries) == 3 and len(ids) == 1  # one event, three attempts
    assert SECRET not in page.content()
    screenshot(page, "deliveries")


def test_clock_credits_and_faults_are_steered_on_the_page(page: Any, mock: Mock):
    render(mock)  # a job: work is due on the clock
    open_view(page, "money")
    acme = page.locator('#workspaces tr[data-workspace="acme"]')
    expect(acme.locator(".credits")).to_have_text("9600")  # less the render
    acme.locator("input.credits-input").fill("42")
    acme.get_by_role("button", name="Set").click()
    expect(acme.locator(".credits")).to_have_text("42")
    balance = mock.api.get("/v1/capabilities").json()["balance"]["credits"]
    assert balance == 42

    page.fill("#fault-target", "listProducts")
    page.fill("#fault-count", "2")
    page.get_by_role("button", name="Add fault").click()
    fault = page.locator("#faults tbody tr[data-fault]")
    expect(fault).to_have_count(1)
    expect(fault).to_contain_text("503 upstream_unavailable")
    assert mock.api.get("/v1/products").status_code == 503
    expect(fault.locator("td").nth(4)).to_have_text("1")  # fired once
    screenshot(page, "money")
    fault.get_by_role("button", name="Clear").click()
    expect(fault).to_have_count(0)
    assert mock.api.get("/v1/products").status_code == 200

    page.get_by_role("button", name="Add fault").click()
    expect(fault).to_have_count(1)
    page.get_by_role("button", name="Clear every fault").click()
    expect(fault).to_have_count(0)

    due = mock.control.call("GET", "/clock")["nextDueAt"]
    expect(page.locator("#advance-due")).to_contain_text(due.replace("T", " ").rstrip("Z"))
    page.locator("#advance-due").click()
    expect(page.locator("#clock-now")).to_have_text(due.replace("T", " ").rstrip("Z"))
    assert mock.control.call("GET", "/clock")["now"] == due


def test_a_rate_limit_bucket_is_shown_by_person_and_emptied_on_the_page(page: Any, mock: Mock):
    for key in ("owner", "owner2", "owner"):  # alice's two keys: one bucket
        assert mock.api.get("/v1/products", key=key).status_code == 200
    mock.api.get("/v1/campaigns", key="viewer")
    open_view(page, "money")
    expect(page.locator("#rate-window")).to_contain_text("manual clock")
    alice = page.locator('#rate-limits tr[data-bucket="acme/alice"]')
    victor = page.locator('#rate-limits tr[data-bucket="acme/victor"]')
    expect(alice.locator(".used")).to_have_text("3 / 100")
    expect(alice.locator(".resets")).to_have_text("2026-11-20 09:01:00 (in 1m00s)")
    expect(victor.locator(".used")).to_have_text("1 / 100")
    assert "sk_test" not in page.content()  # a bucket is shown by person, never by key

    alice.get_by_role("button", name="Reset").click()
    expect(alice).to_have_count(0)
    expect(victor).to_have_count(1)  # only alice's bucket was emptied
    expect(page.locator("#status")).to_contain_text("alice (acme) emptied")
    again = mock.api.get("/v1/products", key="owner2")
    assert again.headers["x-ratelimit-remaining"] == "99"

    page.locator('.advance[data-seconds="60"]').click()  # every window ends with the clock
    expect(page.locator("#rate-limits tbody")).to_contain_text("every bucket is full")


def test_every_value_is_shown_as_text_never_as_markup(page: Any, mock: Mock):
    made = mock.api.post(
        "/v1/projects", json={"title": HOSTILE}, headers={"Idempotency-Key": "hostile-1"}
    )
    assert made.status_code == 200, made.text
    mock.api.post("/v1/products", json={"name": HOSTILE})
    job = render(mock, made.json()["project"]["id"])

    open_view(page, "jobs")
    card = page.locator(f'[data-job="{job["id"]}"]')
    expect(card.locator(".project")).to_contain_text(HOSTILE)
    open_view(page, "requests")
    rows(page).filter(has_text="createProduct").click()
    expect(page.locator("#exchange .request-body")).to_contain_text(HOSTILE.replace('"', '\\"'))
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#app img, #app script").count() == 0


def test_a_sandbox_is_a_world_of_its_own(page: Any, mock: Mock, watched: Watched):
    made = mock.control.call("POST", "/sandboxes", {"workspace": "acme"})["sandbox"]
    key = next(k["key"] for k in made["keys"] if k["role"] == "owner")
    try:
        mock.api.get("/v1/products")  # the base world
        expect(rows(page)).to_have_count(1)
        page.reload()
        page.select_option("#world", made["id"])
        expect(rows(page)).to_have_count(0)
        mock.api.get("/v1/projects", key=key)
        expect(rows(page)).to_have_count(1)
        expect(rows(page)).to_contain_text("listProjects")
        page.locator('.advance[data-seconds="60"]').click()  # the sandbox's clock only
        expect(page.locator("#clock-now")).to_have_text("2026-11-20 09:01:00")
        assert mock.control.call("GET", "/clock")["now"] == "2026-11-20T09:00:00Z"
        assert key not in page.content()
        page.select_option("#world", "")
        expect(rows(page)).to_have_count(1)
        expect(rows(page)).to_contain_text("listProducts")
    finally:
        mock.control.call("DELETE", f"/sandboxes/{made['id']}")
