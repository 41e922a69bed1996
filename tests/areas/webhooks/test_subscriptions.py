"""Webhook subscriptions: created with a key, read without their secret, updated, deleted."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from mockserver.app import create_app
from tests.conftest import TEST_SETTINGS
from tests.support.client import ApiClient, ControlClient
from tests.support.inproc import InProcessClient

SECRET = "whsec_" + "k" * 34
EVENTS = ["job.completed", "job.failed", "publish.completed"]


def create(api, url: str = "https://93.184.216.34/in", key: str = "sub-1", **extra):
    body = {"url": url, "events": EVENTS, "secret": SECRET, **extra}
    return api.post("/v1/webhook-subscriptions", json=body, headers={"Idempotency-Key": key})


def test_create_read_list_never_return_the_secret(api, control):
    created = create(api)
    assert created.status_code == 200
    subscription = created.json()["subscription"]
    assert subscription["url"] == "https://93.184.216.34/in"
    assert subscription["events"] == EVENTS and subscription["enabled"] is True
    read = api.get(f"/v1/webhook-subscriptions/{subscription['id']}")
    listed = api.get("/v1/webhook-subscriptions")
    for text in (created.text, read.text, listed.text):
        assert SECRET not in text and '"secret"' not in text
    assert read.json()["subscription"] == subscription
    assert listed.json()["subscriptions"] == [subscription]
    snapshot = json.dumps(control.call("GET", "/snapshot"))
    assert SECRET not in snapshot, "stored encrypted, in snapshots too"


def test_an_idempotency_key_is_required(api):
    response = api.post(
        "/v1/webhook-subscriptions",
        json={"url": "https://93.184.216.34/h", "events": EVENTS, "secret": SECRET},
    )
    assert response.status_code == 400
    assert api.get("/v1/webhook-subscriptions").json()["subscriptions"] == []


def test_a_retry_with_the_same_key_makes_one_subscription(api):
    first, again = create(api, key="same"), create(api, key="same")
    assert first.json() == again.json()
    assert len(api.get("/v1/webhook-subscriptions").json()["subscriptions"]) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"url": "https://93.184.216.34/h", "events": ["job.exploded"], "secret": SECRET},
        {"url": "https://93.184.216.34/h", "events": [], "secret": SECRET},
        {"url": "https://93.184.216.34/h", "events": EVENTS},
        {"url": "https://93.184.216.34/h", "events": EVENTS, "secret": "short"},
        {"events": EVENTS, "secret": SECRET},
    ],
)
def test_bad_subscriptions_are_refused(api, body):
    response = api.post("/v1/webhook-subscriptions", json=body, headers={"Idempotency-Key": "bad"})
    assert response.status_code == 400 and response.json()["code"] == "invalid_request"


def test_patch_changes_only_the_fields_sent_and_can_disable_enable_and_rotate(api):
    subscription = create(api).json()["subscription"]
    path = f"/v1/webhook-subscriptions/{subscription['id']}"
    disabled = api.patch(path, json={"enabled": False}).json()["subscription"]
    assert (
        disabled["enabled"] is False
        and disabled["url"] == subscription["url"]
        and disabled["events"] == EVENTS
    )
    enabled = api.patch(path, json={"enabled": True, "events": ["job.completed"]}).json()[
        "subscription"
    ]
    assert enabled["enabled"] is True and enabled["events"] == ["job.completed"]
    rotated = api.patch(path, json={"secret": "n" * 40})
    assert rotated.status_code == 200 and "n" * 40 not in rotated.text


def test_delete_then_read_is_not_found(api):
    subscription = create(api).json()["subscription"]
    path = f"/v1/webhook-subscriptions/{subscription['id']}"
    deleted = api.delete(path)
    assert deleted.json() == {"success": True, "id": subscription["id"], "deleted": True}
    assert api.get(path).status_code == 404
    assert api.delete(path).status_code == 404


def test_subscriptions_of_another_workspace_are_not_found(api):
    subscription = create(api).json()["subscription"]
    assert (
        api.get(f"/v1/webhook-subscriptions/{subscription['id']}", key="globex").status_code == 404
    )
    assert api.get("/v1/webhook-subscriptions", key="globex").json()["subscriptions"] == []


def test_a_viewer_cannot_subscribe(api):
    response = api.post(
        "/v1/webhook-subscriptions",
        json={"url": "https://93.184.216.34/h", "events": EVENTS, "secret": SECRET},
        headers={"Idempotency-Key": "v"},
        key="viewer",
    )
    assert response.status_code == 403


@pytest.fixture(scope="module")
def strict():
    app = create_app(replace(TEST_SETTINGS, allow_private_callbacks=False))
    with InProcessClient(app, base_url="http://strict.test") as http:
        yield ApiClient(http), ControlClient(http)


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.example.com/in",
        "https://127.0.0.1/in",
        "https://[::1]/in",
        "https://10.0.0.1/in",
    ],
)
def test_subscription_urls_follow_the_callback_address_rules(strict, url):
    api, control = strict
    control.reset()
    assert create(api, url=url).status_code == 400
    sub = create(api, key="ok").json()["subscription"]
    assert api.patch(f"/v1/webhook-subscriptions/{sub['id']}", json={"url": url}).status_code == 400
