"""What the robustness tests compare and assert: the whole visible state, and clean refusals."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.client import ApiClient, ControlClient

ERROR_FIELDS = {"success", "error", "code", "details"}


def api_state(api: ApiClient, control: ControlClient) -> tuple[Any, ...]:
    """Everything a refused call must leave as it was, as bytes: the balance and the snapshot."""
    snapshot = control.http.get("/_mock/snapshot", headers=control.headers)
    assert snapshot.status_code == 200, snapshot.text
    balance = api.get("/v1/capabilities").json()
    return balance.get("balance"), snapshot.content


def refused_with(response: httpx.Response, reason: str, status: int = 400) -> dict[str, Any]:
    """A clean refusal: the status, the standard error body, the reason and a request id."""
    assert response.status_code == status, response.text
    assert response.headers.get("x-request-id")
    body = response.json()
    assert set(body) <= ERROR_FIELDS and body["success"] is False, body
    assert body["code"] == "invalid_request", body
    assert body["details"]["reason"] == reason, body
    return body
