"""Shared helpers of the autopilots, community and governance tests (tests/areas/autopilots,
tests/areas/community, tests/platform/test_governance.py)."""

from __future__ import annotations

from typing import Any

from mockserver.contract import default_contract

SCHEMAS = default_contract().document["components"]["schemas"]
CAP_DEFAULTS = {
    k: v for k, v in SCHEMAS["CommunityCaps"]["x-defaults"].items() if not k.startswith("x-")
}
AUTOPILOT_DEFAULTS = {
    name: spec["default"] for name, spec in SCHEMAS["AutopilotSave"]["properties"].items()
}
FORUM = "acc_acme_forum_main"
ENABLED = "chn_money_minute"  # fixture autopilot, enabled, requireApproval, UTC
PAUSED = "chn_home_strength"  # fixture autopilot, paused
WAITING_RUN = "run_acme_money_minute_0001"  # fixture run waiting at its checkpoint
FAILED_RUN = "run_acme_home_strength_0001"  # fixture run that failed (qa_failed video)
_keys = iter(range(10**9))


def new_key() -> str:
    return f"test-{next(_keys)}"


def campaign_body(**overrides: Any) -> dict[str, Any]:
    body = {
        "name": "Budget apps in the wild",
        "connectedAccountId": FORUM,
        "objective": "Help people find a budgeting routine that sticks.",
        "keywords": ["budget apps", "personal finance"],
    }
    body.update(overrides)
    return body


def create_campaign(api, key: str = "owner", **overrides: Any):
    return api.post(
        "/v1/community-campaigns",
        json=campaign_body(**overrides),
        headers={"Idempotency-Key": new_key()},
        key=key,
    )


def created(api, **overrides: Any) -> dict[str, Any]:
    response = create_campaign(api, **overrides)
    assert response.status_code == 200, response.text
    return response.json()


def community(api, campaign_id: str) -> dict[str, Any]:
    response = api.get(f"/v1/community-campaigns/{campaign_id}")
    assert response.status_code == 200, response.text
    return response.json()["campaign"]


def listed_campaign(api, campaign_id: str) -> dict[str, Any]:
    return next(
        c for c in api.walk("/v1/campaigns", "campaigns", limit=100) if c["id"] == campaign_id
    )


def autopilot(api, channel_id: str) -> dict[str, Any]:
    response = api.get(f"/v1/autopilots/{channel_id}")
    assert response.status_code == 200, response.text
    return response.json()["autopilot"]


def save(api, channel_id: str, key: str = "owner", **body: Any):
    return api.put(f"/v1/autopilots/{channel_id}", json=body, key=key)


def start_run(api, channel_id: str = ENABLED, key: str = "owner", **body: Any):
    return api.post(
        "/v1/autopilot-runs",
        json={"channelId": channel_id, **body},
        headers={"Idempotency-Key": new_key()},
        key=key,
    )


def started(api, channel_id: str = ENABLED, **body: Any) -> dict[str, Any]:
    response = start_run(api, channel_id, **body)
    assert response.status_code == 200, response.text
    return response.json()["run"]


def run_of(api, run_id: str) -> dict[str, Any]:
    runs = api.walk("/v1/autopilot-runs", "runs", limit=100)
    return next(r for r in runs if r["id"] == run_id)


def runs_of(api, channel_id: str) -> list[dict[str, Any]]:
    return api.walk("/v1/autopilot-runs", "runs", limit=100, channelId=channel_id)


def error_of(response, status: int, code: str, reason: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is False and body["code"] == code, body
    if reason is not None:
        assert body["details"]["reason"] == reason, body
    return body


def outcome(control, job_id: str, status: str, immediately: bool = False) -> None:
    control.call("POST", f"/jobs/{job_id}/outcome", {"status": status, "immediately": immediately})
