"""A small fake deployment of the service, for behaviours the bundled mock cannot show.

It serves the contract, authenticates one key, answers the standard envelope, and answers every
operation it does not emulate with ``503 capability_unavailable`` (which the suite reports as
skipped). Scripted variations (``options``) break one rule each. It emulates webhook
subscriptions and asset imports, whose jobs deliver two signed events to every subscription
(retried after a 5xx), so that the suite's webhook checks can be run against a deployment
without a control plane.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import uuid
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from conformance.contract import bundled_document

KEY = "sk_fake_key"
SECRET_MIN = 32


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class FakeDeployment:
    def __init__(self, **options: Any) -> None:
        self.options = options
        self.log: list[dict[str, Any]] = []
        self.subscriptions: dict[str, dict[str, Any]] = {}
        self.deliveries: list[dict[str, Any]] = []
        self.retry_after_sent = False
        self.replays: dict[str, Any] = {}
        self.document = bundled_document()
        self.app = Starlette(
            routes=[
                Route("/v1/openapi.json", self.openapi),
                Route("/v1/capabilities", self.capabilities),
                Route("/v1/webhook-subscriptions", self.subscribe, methods=["POST"]),
                Route("/v1/assets/import", self.import_asset, methods=["POST"]),
                Route(
                    "/{path:path}", self.other, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]
                ),
            ]
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)

    # -- envelope ---------------------------------------------------------------------------

    def answer(self, status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
        sent = {"x-request-id": f"req_{uuid.uuid4().hex}"} | (headers or {})
        return JSONResponse(body, status_code=status, headers=sent)

    def error(self, status: int, code: str, authed: bool = True, **extra: str) -> Response:
        headers = self.rate_headers() if authed and status not in (401, 413, 500, 503) else {}
        return self.answer(
            status, {"success": False, "error": f"{code}", "code": code}, headers | extra
        )

    def rate_headers(self) -> dict[str, str]:
        return {
            "x-ratelimit-limit": "100",
            "x-ratelimit-remaining": "99",
            "x-ratelimit-reset": "60",
        }

    async def record(self, request: Request) -> bytes:
        body = await request.body()
        self.log.append(
            {
                "method": request.method,
                "path": request.url.path,
                "headers": dict(request.headers),
                "body": body,
            }
        )
        return body

    def authed(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {KEY}"

    # -- routes -----------------------------------------------------------------------------

    async def openapi(self, request: Request) -> Response:
        await self.record(request)
        return self.answer(200, self.document)

    async def capabilities(self, request: Request) -> Response:
        await self.record(request)
        if not self.authed(request):
            return self.error(401, "unauthorized", authed=False)
        retry_after = self.options.get("retry_after_once")
        if retry_after is not None and not self.retry_after_sent:
            self.retry_after_sent = True
            return self.error(429, "rate_limited", **{"retry-after": str(retry_after)})
        if self.options.get("capabilities_missing_inferred_fields"):
            body: dict[str, Any] = {"success": True}  # the catalogue's shape is inferred
        else:
            body = {
                "success": True,
                "capabilities": [
                    {"name": "media-analysis", "available": True, "price": 40, "unit": "asset"}
                ],
                "balance": {"credits": 1000},
            }
        return self.answer(200, body, self.rate_headers())

    async def subscribe(self, request: Request) -> Response:
        raw = await self.record(request)
        if not self.authed(request):
            return self.error(401, "unauthorized", authed=False)
        try:
            body = json.loads(raw)
        except ValueError:
            return self.error(400, "invalid_request")
        receiver = self.options.get("receiver_prefix") or "no receiver"
        url = str(body.get("url", ""))
        public = url.startswith("https://") and not any(h in url for h in ("127.0.0.1", "10.0."))
        if (
            not request.headers.get("idempotency-key")
            or not isinstance(body.get("events"), list)
            or not (public or url.startswith(receiver))
            or len(str(body.get("secret", ""))) < SECRET_MIN
        ):
            return self.error(400, "invalid_request")
        key = request.headers["idempotency-key"]
        if key in self.replays:
            return self.answer(200, self.replays[key], self.rate_headers())
        subscription_id = f"whk_{uuid.uuid4().hex[:12]}"
        self.subscriptions[subscription_id] = body
        shown = {k: v for k, v in body.items() if k != "secret"}
        if self.options.get("echo_secret"):
            shown = dict(body)
        self.replays[key] = {"success": True, "subscription": {"id": subscription_id, **shown}}
        return self.answer(200, self.replays[key], self.rate_headers())

    async def import_asset(self, request: Request) -> Response:
        await self.record(request)
        if not self.authed(request):
            return self.error(401, "unauthorized", authed=False)
        if not request.headers.get("idempotency-key"):
            return self.error(400, "invalid_request")
        job_id = f"job_{uuid.uuid4().hex[:12]}"
        threading.Thread(target=self._deliver_job, args=(job_id,), daemon=True).start()
        job = {"id": job_id, "status": "queued", "phase": None, "artifacts": None}
        return self.answer(
            200,
            {"success": True, "asset": {"id": f"ast_{job_id}"}, "job": job},
            self.rate_headers(),
        )

    async def other(self, request: Request) -> Response:
        await self.record(request)
        if request.url.path.startswith("/v1/") and not self.authed(request):
            return self.error(401, "unauthorized", authed=False)
        return self.error(503, "capability_unavailable")

    # -- deliveries --------------------------------------------------------------------------

    def _deliver_job(self, job_id: str) -> None:
        if (gate := self.options.get("deliver_when")) is not None:
            gate.wait(10)  # a threading.Event the test sets: deliveries come only then
        for sequence, (event, status) in enumerate(
            [("job.progressed", "running"), ("job.completed", "done")], start=1
        ):
            body = {
                "schemaVersion": "automation-event.v1",
                "eventId": f"evt_{uuid.uuid4().hex[:16]}",
                "event": event,
                "occurredAt": _now(),
                "workspaceId": "ws_fake",
                "data": {
                    "jobId": job_id,
                    "projectId": "prj_fake",
                    "status": status,
                    "phase": None,
                    "sequence": sequence,
                    "resourceUrl": f"/v1/jobs/{job_id}",
                },
            }
            for subscription_id, subscription in list(self.subscriptions.items()):
                if event in subscription["events"]:
                    self._deliver(subscription_id, subscription, body)

    def _deliver(self, subscription_id: str, subscription: dict[str, Any], body: dict[str, Any]):
        raw = json.dumps(body, indent=1).encode()
        for attempt in range(4):
            event_id = body["eventId"]
            if attempt and self.options.get("new_event_id_on_retry"):
                event_id = f"evt_{uuid.uuid4().hex[:16]}"
                raw = json.dumps(body | {"eventId": event_id}, indent=1).encode()
            timestamp = _now()
            signed = raw
            if self.options.get("sign_reserialised"):
                signed = json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":")).encode()
            digest = hmac.new(
                subscription["secret"].encode(), timestamp.encode() + b"." + signed, hashlib.sha256
            ).hexdigest()
            headers = {
                "Content-Type": "application/json",
                "X-Service-Signature": f"sha256={digest}",
                "X-Service-Timestamp": timestamp,
                "X-Service-Event": body["event"],
                "X-Service-Event-Id": event_id,
                "X-Service-Subscription-Id": subscription_id,
            }
            try:
                status = httpx.post(subscription["url"], content=raw, headers=headers).status_code
            except httpx.HTTPError:
                status = 599
            self.deliveries.append({"eventId": event_id, "status": status})
            retry = status >= 500 or status in (408, 429)
            if not retry and not (self.options.get("retry_after_400") and status == 400):
                return
            time.sleep(0.05)
