"""The control plane: steer the mock's state, time, money, governance, keys and faults.

Kept apart from the emulated API, as Moto keeps ``/moto-api``: its own OpenAPI document
(``openapi.yaml`` beside this module, served at ``/_mock/openapi.json``), its own router, the
same validation machinery and error body. Areas add their own control operations with
:func:`control`.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import inspect
import logging
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from mockserver.areas import AREAS
from mockserver.contract import Contract, Operation
from mockserver.control import inspector
from mockserver.dispatch import Router, error_response, request_path, store_unavailable
from mockserver.platform import yamlload
from mockserver.platform.envelope import json_response, new_request_id
from mockserver.platform.errors import ApiError, not_found
from mockserver.platform.jsonbody import JsonReader
from mockserver.platform.validation import Validated, compile_all
from mockserver.runtime import Runtime
from mockserver.store import StoreError

log = logging.getLogger("mockserver.control")

ControlHandler = Callable[..., Any]
_CONTROL: dict[str, ControlHandler] = {}
# Operations that run outside a transaction of the world: they wait for work done in
# transactions of its own (deliveries), or act on the sandbox registry and on other worlds
# (sandboxes.py), whose transactions must not join this one.
OUTSIDE_TRANSACTION = frozenset(
    {"flushDeliveries", "createSandbox", "listSandboxes", "getSandbox", "deleteSandbox"}
)


def control(operation_id: str) -> Callable[[ControlHandler], ControlHandler]:
    """Register the handler of a control-plane operation (``operationId`` of openapi.yaml)."""

    def register(func: ControlHandler) -> ControlHandler:
        _CONTROL[operation_id] = func
        return func

    return register


# Beside openapi.yaml: more operations.
PLANE_FRAGMENTS = ("sandboxes.yaml", "events.yaml", "inspector.yaml", "ratelimits.yaml")
SANDBOX_PARAMETER = {"$ref": "#/components/parameters/Sandbox"}
# Operations that answer files as they are, not JSON from a handler: this document, and the
# inspector's page and files.
SERVED_AS_IS = frozenset({"controlOpenApi"}) | inspector.OPERATIONS


@cache
def control_contract() -> Contract:
    """The control plane's document: ``openapi.yaml`` here, its fragments, and each area's
    ``control.yaml``.

    An area that needs control operations keeps them beside its code: ``control.yaml`` (a
    mapping of ``paths``, and optionally ``components``, in the same form) and ``control.py``
    (their handlers). Every operation that does not say ``x-sandbox: false`` takes the
    ``sandbox`` query parameter (sandboxes.py); it is added here, so the document says so.
    """
    package = resources.files("mockserver.control")
    document = yamlload.parse((package / "openapi.yaml").read_text(encoding="utf-8"))
    fragments = [package / name for name in PLANE_FRAGMENTS]
    fragments += [resources.files(f"mockserver.areas.{area}") / "control.yaml" for area in AREAS]
    for fragment in fragments:
        if fragment.is_file():
            part = yamlload.parse(fragment.read_text(encoding="utf-8"))
            document["paths"].update(part["paths"])
            for kind, entries in part.get("components", {}).items():
                document["components"].setdefault(kind, {}).update(entries)
    for item in document["paths"].values():
        for method in ("get", "put", "post", "patch", "delete"):
            operation = item.get(method)
            if operation is not None and operation.get("x-sandbox", True):
                operation.setdefault("parameters", []).append(SANDBOX_PARAMETER)
    return Contract(document)


def load_area_controls() -> None:
    for area in AREAS:
        if (resources.files(f"mockserver.areas.{area}") / "control.py").is_file():
            importlib.import_module(f"mockserver.areas.{area}.control")


class ControlPlane:
    """An ASGI app for ``/_mock/...``."""

    def __init__(self, runtime: Runtime, token: str | None) -> None:
        from mockserver.control import (
            events,  # noqa: F401  (trigger and listen)
            handlers,  # noqa: F401  (registers the built-in operations)
            ratelimits,  # noqa: F401  (the rate-limit buckets)
        )

        load_area_controls()

        self.runtime = runtime
        # Kept only as its digest: compared in constant time, never logged nor answered.
        self.token_digest = None if token is None else token_digest(token)
        self.contract = control_contract()
        missing = set(self.contract.operations) - set(_CONTROL) - SERVED_AS_IS
        if missing:
            raise RuntimeError(
                "control operations without a handler: " + ", ".join(sorted(missing))
            )
        self.router = Router(self.contract.operations)
        self.validators = compile_all(self.contract)
        self.json = JsonReader(runtime.contract.limits)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.handle(Request(scope, receive))
        await response(scope, receive, send)

    async def handle(self, request: Request) -> Response:
        request_id = new_request_id()
        try:
            op, path_params = self.router.match(request.method, request_path(request), encoded=True)
            if op is None:
                raise not_found(f"control operation {request.method} {request.url.path}")
            if op.operation_id == "controlOpenApi":
                response = Response(self.contract.json_bytes, media_type="application/json")
            elif op.operation_id in inspector.OPERATIONS:
                response = inspector.serve(op.operation_id, path_params)
            else:
                if not op.public:
                    self.check_token(request.headers.get("authorization"))
                raw = await request.body()
                body = self.json.read(raw, request.headers)
                valid = self.validators[op.operation_id].validate(
                    path_params, list(request.query_params.multi_items()), {}, body
                )
                rt = self.runtime
                if "sandbox" in valid.query:
                    rt = (await self.runtime.sandboxes.get(valid.query["sandbox"])).runtime
                rt.catch_up()  # with other processes sharing the store (store/replica.py)
                rt.scheduler.tick()
                if op.operation_id in OUTSIDE_TRANSACTION:
                    result = _CONTROL[op.operation_id](rt, valid)
                    if inspect.isawaitable(result):
                        result = await result
                    response = json_response(200, {"success": True, **result})
                else:
                    response = await rt.persistence.retrying(lambda: self.transact(op, rt, valid))
        except ApiError as error:
            response = error_response(error)
        except StoreError as error:
            log.error("control plane: store failed: %s", error)
            response = error_response(store_unavailable(request_id))
        except Exception:
            log.exception("control plane error")
            response = error_response(ApiError("internal_error", "control plane error"))
        response.headers["x-request-id"] = request_id
        return response

    async def transact(self, op: Operation, rt: Runtime, valid: Validated) -> Response:
        """The handler and its answer in one transaction: all of its changes, or none (as on
        the API)."""
        with rt.transaction():
            result = _CONTROL[op.operation_id](rt, valid)
            if inspect.isawaitable(result):
                result = await result
            return json_response(200, {"success": True, **result})

    def check_token(self, authorization: str | None) -> None:
        if self.token_digest is None:
            return
        scheme, _, given = (authorization or "").partition(" ")
        if scheme != "Bearer" or not hmac.compare_digest(token_digest(given), self.token_digest):
            raise ApiError("unauthorized", "the control plane needs Authorization: Bearer <token>")


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
