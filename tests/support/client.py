"""A test client for the mock whose every answer is checked against the contract."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.contract_check import check_response

KEYS = {
    "owner": "sk_test_acme_owner",
    "owner2": "sk_test_acme_owner_2",
    "admin": "sk_test_acme_admin",
    "editor": "sk_test_acme_editor",
    "viewer": "sk_test_acme_viewer",
    "globex": "sk_test_globex_owner",
}


class ApiClient:
    """Calls the emulated API as a client would. ``key`` names a fixture key (or None)."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http

    def request(
        self,
        method: str,
        path: str,
        *,
        key: str | None = "owner",
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        sent = dict(headers or {})
        if key is not None:
            sent.setdefault("Authorization", f"Bearer {KEYS.get(key, key)}")
        response = self.http.request(method, path, headers=sent, **kwargs)
        check_response(response)
        return response

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("PATCH", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("PUT", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("DELETE", path, **kwargs)

    def walk(self, path: str, items: str, **params: Any) -> list[dict[str, Any]]:
        """Every item of a cursor-paged list, following nextCursor to its end."""
        seen: list[dict[str, Any]] = []
        cursor = None
        while True:
            query = dict(params)
            if cursor:
                query["cursor"] = cursor
            response = self.get(path, params=query)
            assert response.status_code == 200, response.text
            body = response.json()
            seen.extend(body[items])
            assert body.get("hasMore", body["nextCursor"] is not None) == (
                body["nextCursor"] is not None
            )
            cursor = body["nextCursor"]
            if cursor is None:
                return seen


class ControlClient:
    """The mock's control plane."""

    def __init__(self, http: httpx.Client, token: str | None = None) -> None:
        self.http = http
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def call(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        response = self.http.request(method, f"/_mock{path}", json=body, headers=self.headers)
        assert response.headers.get("x-request-id")
        assert response.status_code == 200, response.text
        return response.json()

    def reset(self) -> None:
        self.call("POST", "/reset")

    def advance(self, seconds: float) -> None:
        self.call("POST", "/clock/advance", {"seconds": seconds})

    def now(self) -> str:
        return self.call("GET", "/clock")["now"]

    def credits(self, workspace: str = "acme", balance: int | None = None) -> int:
        if balance is None:
            return self.call("GET", f"/workspaces/{workspace}/credits")["balance"]
        return self.call("PUT", f"/workspaces/{workspace}/credits", {"balance": balance})["balance"]

    def governance(self, workspace: str = "acme", **settings: bool) -> dict[str, Any]:
        return self.call("PUT", f"/workspaces/{workspace}/governance", settings)["governance"]

    def fault(self, **spec: Any) -> dict[str, Any]:
        return self.call("POST", "/faults", spec)["fault"]

    def capability(self, name: str, **changes: Any) -> dict[str, Any]:
        return self.call("PUT", f"/capabilities/{name}", changes)["capability"]
