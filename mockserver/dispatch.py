"""The request pipeline of the emulated API: every /v1 request passes through here, in order.

1. a request id; 2. route by method and path (unknown: 404 ``not_found``); 3. injected faults,
then a ``Prefer: code=`` answer (platform/prefer.py): 401 and 5xx here, other 4xx after step 5;
4. authentication (401, or the credential store's 503); 5. the rate limit (429) and the
workspace header (403); 6. the body: size (413), content type and JSON (400); 7. validation
against the contract (400); 8. the key's role (403);
9. idempotency; 10. the handler, in one transaction with the encoding of its response (and the
idempotency entry it leaves): a refusal or a failure at any step undoes every change it made;
11. the envelope: ``x-request-id`` and rate-limit headers on every response, errors in the
standard body.

An ApiError raised anywhere leaves through :func:`error_response`; anything else is logged and
answers 500 ``internal_error``, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from mockserver.call import Call
from mockserver.contract import Contract, Operation
from mockserver.platform import prefer
from mockserver.platform.auth import Caller, authenticate
from mockserver.platform.envelope import Reply, json_response, new_request_id
from mockserver.platform.errors import ApiError
from mockserver.platform.faults import Fault, with_rate_limit
from mockserver.platform.idempotency import fingerprint
from mockserver.platform.journal import Entry, kept
from mockserver.platform.jsonbody import JsonReader
from mockserver.platform.ratelimit import Counted, RateState
from mockserver.platform.validation import MISSING
from mockserver.registry import Binding
from mockserver.runtime import Runtime
from mockserver.store import StoreError

CLIENT_GONE = 499  # the status journalled for a request whose client went away
log = logging.getLogger("mockserver")
IDEMPOTENCY_HEADER = "Idempotency-Key"


class Router:
    """Operations by method and path; concrete segments win over templated ones.

    Matching is by path segments of the raw (still percent-encoded) path, each decoded on its
    own, so an encoded ``/`` stays inside its segment and control characters reach validation.
    A path with nothing percent-encoded is looked up among the concrete paths first; then the
    paths of the same number of segments are tried, the most concrete first.
    """

    def __init__(self, operations: dict[str, Operation]) -> None:
        table: dict[str, dict[str, Operation]] = {}
        for op in operations.values():
            table.setdefault(op.path, {})[op.method] = op
        ordered = sorted(table.items(), key=lambda item: (item[0].count("{"), -len(item[0])))
        self._concrete = {path: methods for path, methods in table.items() if "{" not in path}
        self._by_length: dict[int, list[tuple[list[str], dict[str, Operation]]]] = {}
        for path, methods in ordered:
            template = path.split("/")
            self._by_length.setdefault(len(template), []).append((template, methods))

    def match(
        self, method: str, path: str, *, encoded: bool = False
    ) -> tuple[Operation | None, dict[str, str]]:
        if not encoded or "%" not in path:
            concrete = self._concrete.get(path)
            if concrete is not None and method in concrete:
                return concrete[method], {}
        segments = path.split("/")
        if encoded:
            segments = [unquote(segment) for segment in segments]
        for template, methods in self._by_length.get(len(segments), ()):
            if method not in methods:
                continue
            params: dict[str, str] = {}
            for pattern, segment in zip(template, segments, strict=True):
                if pattern.startswith("{"):
                    if not segment:
                        break
                    params[pattern[1:-1]] = segment
                elif pattern != segment:
                    break
            else:
                return methods[method], params
        return None, {}


def request_path(request: Request) -> str:
    """The path as sent (percent-encoded), without the query."""
    raw = request.scope.get("raw_path")
    if raw:
        return raw.decode("latin-1").split("?", 1)[0]
    return quote(request.scope["path"])


def store_unavailable(request_id: str) -> ApiError:
    """The answer when the mock's own store failed (its database down or restarting, its
    file's disk full): the request was not applied, except a PostgreSQL commit whose answer
    was lost with the connection; the same request retried with its Idempotency-Key once the
    store is back is applied once either way."""
    return ApiError(
        "upstream_unavailable",
        "the mock's state store is unreachable or cannot be written; retry the same request"
        f" (with its Idempotency-Key it is applied once) (request id {request_id})",
        headers={"Retry-After": "1"},
    )


def stamp_headers(response: Response, request_id: str, rate: RateState | None) -> None:
    """Every answer's ``x-request-id``, and the rate-limit headers a response has not set."""
    raw = response.raw_headers
    raw[:] = [(name, value) for name, value in raw if name != b"x-request-id"]
    raw.append((b"x-request-id", request_id.encode("latin-1")))
    if rate is not None:
        present = {name for name, _ in raw}
        for name, value in rate.headers().items():
            encoded = name.lower().encode("latin-1")
            if encoded not in present:
                raw.append((encoded, value.encode("latin-1")))


def error_response(error: ApiError) -> Response:
    return json_response(error.status, error.body(), dict(error.headers))


@dataclass(slots=True)
class Passage:
    """One request on its way through the pipeline: what each step learned, for the next."""

    request: Request
    request_id: str
    started: float  # perf_counter at arrival
    path: str
    op: Operation | None
    path_params: dict[str, str]
    fault: Fault | None = None
    preferred: prefer.Preferred | prefer.Refused | None = None
    rate: RateState | None = None
    caller: Caller | None = None
    counted: Counted | None = None  # the rate count made with the catch-up, when one was
    raw: bytes | None = None  # the body's bytes, once read
    replayed: bool = False

    def found(self) -> Operation:
        """The operation, or 404 ``not_found`` when no operation answers the method and path."""
        if self.op is None:
            raise ApiError("not_found", f"no operation answers {self.request.method} {self.path}")
        return self.op


class Dispatcher:
    """The pipeline, compiled once from the contract; each request names its runtime."""

    def __init__(self, contract: Contract, bindings: dict[str, Binding]) -> None:
        self.bindings = bindings
        self.router = Router(contract.operations)
        self.max_body = int(contract.limits["maxRequestBodyBytes"])
        self.json = JsonReader(contract.limits)

    async def __call__(self, scope: Scope, receive: Receive, send: Send, rt: Runtime) -> None:
        response = await self.handle(Request(scope, receive), rt)
        await response(scope, receive, send)

    async def handle(self, request: Request, rt: Runtime) -> Response:
        """The numbered steps of the module's description, one method each."""
        passage = self.route(request)  # 1, 2
        code: str | None = None
        try:
            await self.catch_up(passage, rt)
            op = passage.found()
            await self.fault_before_auth(passage, rt)  # 3
            if op.public:
                response = self.answer_public(passage, rt)
            else:
                self.admit(passage, rt)  # 4, 5 (and the faults of 3 that come after them)
                call, key, print_ = await self.read_and_validate(passage, rt)  # 6, 7, 8
                response = await self.execute_once(passage, rt, call, key, print_)  # 9, 10
        except ApiError as error:
            response, code = error_response(error), error.code
        except ClientDisconnect:
            # The client went away before its body arrived (a load generator stopping, say):
            # nothing can be answered, and nothing went wrong here. Journalled as 499.
            response = Response(status_code=CLIENT_GONE)
        except StoreError as error:
            log.error("store failed in %s %s: %s", request.method, passage.path, error)
            failure = store_unavailable(passage.request_id)
            response, code = error_response(failure), failure.code
        except Exception:
            log.exception("unhandled error in %s %s", request.method, passage.path)
            failure = ApiError(
                "internal_error", f"internal error; quote request id {passage.request_id}"
            )
            response, code = error_response(failure), failure.code
        return await self.respond(passage, rt, response, code)  # 11

    def route(self, request: Request) -> Passage:
        """Steps 1 and 2: a request id, and the operation the method and path name (or None)."""
        request_id, started = new_request_id(), time.perf_counter()
        path = request_path(request)
        op, path_params = self.router.match(request.method, path, encoded=True)
        return Passage(request, request_id, started, path, op, path_params)

    async def catch_up(self, passage: Passage, rt: Runtime) -> None:
        """With a store other processes share: caught up with them, in the same round trip as
        the caller's rate-limit count (when the caller can be told beforehand), once for the
        requests that arrived together."""
        passage.counted = await rt.persistence.catch_up_together(
            lambda: self.counted_identity(rt, passage.op, passage.request)
        )

    async def fault_before_auth(self, passage: Passage, rt: Runtime) -> None:
        """Step 3: time-driven state brought up to now; an injected fault's delay; a fault, or
        a ``Prefer: code=`` answer, that comes before authentication (401, 5xx; any for a
        public operation) answers here; the others are kept for after step 5."""
        op = passage.found()
        rt.scheduler.tick()
        fault = passage.fault = rt.take_fault(op.operation_id, passage.request.scope["path"])
        if fault is not None and fault.delay_ms:
            await asyncio.sleep(fault.delay_ms / 1000)
        if fault is not None and fault.before_auth:
            raise fault.error()  # type: ignore[misc]
        preferred = passage.preferred = prefer.requested(
            rt.contract, op, passage.request.headers, control_plane=rt.settings.control_plane
        )
        if preferred is not None and (preferred.before_auth or op.public):
            raise preferred.error()

    def answer_public(self, passage: Passage, rt: Runtime) -> Response:
        """Public operations (the contract itself) need no key and are never counted."""
        op, headers = passage.found(), passage.request.headers
        rt.seams.admit_public(op, headers)
        passage.rate = rt.seams.count_public(rt, op, headers)
        result = self.bindings[op.operation_id].func(rt)
        return result if isinstance(result, Response) else json_response(200, result)

    def admit(self, passage: Passage, rt: Runtime) -> None:
        """Steps 4 and 5: the key (401), the caller's rate limit (429), the workspace header
        (403); then a kept fault or ``Prefer`` answer, with the rate-limit headers."""
        headers = passage.request.headers
        caller = passage.caller = authenticate(
            rt.world, headers.get("authorization"), rt.faults.credential_store
        )
        rate = passage.rate = rt.rate.hit(rt.seams.rate_identity(caller), passage.counted)
        if not rate.allowed:
            raise rt.rate.refusal(rate)
        rt.seams.check_workspace_slug(caller, headers.get("x-workspace-slug"))
        injected = passage.fault.error() if passage.fault is not None else None
        if injected is None and passage.preferred is not None:
            injected = passage.preferred.error()
        if injected is not None:
            raise with_rate_limit(injected, rate.reset_seconds)

    async def read_and_validate(
        self, passage: Passage, rt: Runtime
    ) -> tuple[Call, str | None, str]:
        """Steps 6 to 8: the body read (413, 400), the request validated against the contract
        (400) and the key's role checked (403). The call, its Idempotency-Key (or None) and
        the request's fingerprint for that key."""
        request, op, caller = passage.request, passage.found(), passage.caller
        assert caller is not None
        validator = rt.validators[op.operation_id]
        body = MISSING
        if validator.accepts_body:
            passage.raw = await self.read_raw(request)
            body = self.json.read(passage.raw, request.headers)
        query = list(request.query_params.multi_items())
        query, headers, body = rt.seams.prepare_request(op, query, dict(request.headers), body)
        valid = validator.validate(passage.path_params, query, headers, body)
        rt.seams.authorize(caller, op, self.bindings[op.operation_id].writes)
        call = Call(
            rt, op, passage.request_id, caller, valid.path, valid.query, valid.headers, valid.body
        )
        key = valid.headers.get(IDEMPOTENCY_HEADER)
        print_ = (
            ""
            if key is None
            else fingerprint(op.operation_id, valid.path, None if body is MISSING else body)
        )
        return call, key, print_

    async def execute_once(
        self, passage: Passage, rt: Runtime, call: Call, key: str | None, print_: str
    ) -> Response:
        """Steps 9 and 10: the handler in one transaction (retried after a conflict only when
        other processes share the store); with an Idempotency-Key, held for the key and
        replayed when it was answered before."""
        binding = self.bindings[passage.found().operation_id]
        if key is None:
            response, _ = await self.transact(rt, binding, call, None, "")
            return response
        assert passage.caller is not None
        async with rt.seams.hold_key(rt.idempotency, passage.caller.workspace_id, key):
            response, passage.replayed = await self.transact(rt, binding, call, key, print_)
        return response

    async def respond(
        self, passage: Passage, rt: Runtime, response: Response, code: str | None
    ) -> Response:
        """Step 11: the envelope's headers, and the exchange in the journal."""
        request, op = passage.request, passage.op
        stamp_headers(response, passage.request_id, passage.rate)
        response = rt.seams.finish_response(op, response)
        rt.journal.record(
            Entry(
                request_id=passage.request_id,
                method=request.method,
                path=request.scope["path"],
                query=request.scope.get("query_string", b""),
                operation_id=op.operation_id if op else None,
                status=response.status_code,
                code=code,
                caller=passage.caller or self.journalled_caller(rt, request),
                time=rt.clock.now(),
                duration_ms=round((time.perf_counter() - passage.started) * 1000, 3),
                replayed=passage.replayed,
                request_body=kept(passage.raw),
                response_body=kept(response.body),
                request_headers=request.scope["headers"],
                response_headers=response.raw_headers,
            )
        )
        await rt.journal.written()
        return response

    def journalled_caller(self, rt: Runtime, request: Request) -> Caller | None:
        """Who a valid key names, for the journal only, when the answer came before the key
        was checked (an unknown path, a public operation, a fault or an unreachable credential
        store): nothing is counted, and an invalid key or none stays None."""
        if "authorization" not in request.headers:
            return None
        try:
            return authenticate(rt.world, request.headers["authorization"], None)
        except ApiError:
            return None

    def counted_identity(self, rt: Runtime, op: Operation | None, request: Request) -> str | None:
        """The rate-limit identity this request will be counted under, told from the world
        as this process holds it (None when the store does not share buckets, the operation
        is never counted, a fault may answer first, or the key would be refused)."""
        if rt.rate.shared is None or op is None or op.public or rt.faults.active:
            return None
        try:
            caller = authenticate(rt.world, request.headers.get("authorization"), None)
        except ApiError:
            return None
        return rt.seams.rate_identity(caller)

    async def read_raw(self, request: Request) -> bytes:
        """The body's bytes; 413 for a body over the limit (declared or streamed)."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            raise self.too_large()
        chunks = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body:
                raise self.too_large()
            chunks.append(chunk)
        return b"".join(chunks)

    def too_large(self) -> ApiError:
        return ApiError(
            "payload_too_large",
            f"the body is larger than {self.max_body} bytes",
            details={"maxBytes": self.max_body},
        )

    async def transact(
        self, rt: Runtime, binding: Binding, call: Call, key: str | None = None, print_: str = ""
    ) -> tuple[Response, bool]:
        """Run the handler as one transaction; its changes are kept once the response is built.

        With an Idempotency-Key, the kept answer is replayed (second element True), or the
        success is kept in the same transaction. Any exception undoes every change. When
        another process sharing the store wrote first, it runs again on what that process
        wrote (store/replica.py): the replay, say, of the same Idempotency-Key.
        """
        return await rt.persistence.retrying(lambda: self._transact(rt, binding, call, key, print_))

    async def _transact(
        self, rt: Runtime, binding: Binding, call: Call, key: str | None, print_: str
    ) -> tuple[Response, bool]:
        idempotency = rt.idempotency
        workspace_id = call.workspace_id
        with rt.transaction():
            if key is not None:
                entry = rt.seams.find_replay(call, key, print_)
                if entry is not None:
                    response = Response(
                        entry["body"].encode(),
                        status_code=entry["status"],
                        media_type="application/json",
                        headers={"Idempotent-Replayed": "true"},
                    )
                    return response, True
            reply = await self.execute(binding, call)
            response = json_response(reply.status, reply.body, reply.headers)
            if key is not None and 200 <= reply.status < 300:
                idempotency.remember(workspace_id, key, print_, reply.status, response.body)
        return response, False

    async def execute(self, binding: Binding, call: Call) -> Reply:
        return as_reply(await call.runtime.seams.run_operation(binding, call))


def as_reply(result: Reply | dict[str, Any] | Awaitable[Any]) -> Reply:
    reply = result if isinstance(result, Reply) else Reply(200, result)  # type: ignore[arg-type]
    if 200 <= reply.status < 300 and "success" not in reply.body:
        reply.body = {"success": True, **reply.body}
    return reply
