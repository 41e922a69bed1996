"""The mock inside your own tests: :func:`mock_server`, and the ``mockserver`` pytest fixture.

In-process, like Moto's ``mock_aws``::

    from mockserver.testing import mock_server

    with mock_server() as mock:
        response = httpx.post(f"{mock.base_url}/v1/projects", headers={
            **mock.auth(), "Idempotency-Key": "p1"}, json={"title": "Demo"})
        mock.advance(3600)              # move the mock's clock an hour
        mock.flush_deliveries()         # make due webhook attempts now, and wait for them

The mock runs in a thread on a free loopback port, with the manual clock and loopback
callbacks allowed (so a receiver in your test process gets its webhooks). It is stopped, its
port closed and its thread joined when the block ends.

Against a mock running elsewhere (shared by several CI jobs), pass ``url=`` (or set
``MOCKSERVER_URL``): the block then works in a sandbox of its own (``POST /_mock/sandboxes``),
with its own keys, clock, credits and deliveries, ended when the block ends. ``sandbox=True``
does the same in-process. A mock off loopback closes its control plane with a token: pass
``control_token=`` (or set ``MOCKSERVER_CONTROL_TOKEN``).

A receiver for the webhooks and callbacks the mock sends, in your test process: on a free
loopback port, each delivery's signature verified with the secret the test hands it::

    with mock_server() as mock, webhook_receiver(secret="s" * 32) as receiver:
        ...  # callbackUrl=receiver.url, callbackSecret=receiver.secret
        mock.flush_deliveries()
        [completed] = receiver.wait(1, event="render.completed")

With pytest, the kit's plugin gives the ``mockserver`` fixture: one in-process mock per session
(or the mock at ``--mockserver-url`` / ``MOCKSERVER_URL``) and a fresh sandbox per test, so tests
never see each other's state, also under ``pytest -n 8`` against one shared mock; and the
``webhook_receiver`` fixture, a receiver with a secret of its own (``webhook_receiver.secret``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from secrets import token_hex
from typing import Any

import httpx

from mockserver.platform import signing
from mockserver.platform.tls import tls_context
from mockserver.webhook_cli import ENV_TOKEN

ENV_URL = "MOCKSERVER_URL"


@dataclass(frozen=True)
class Key:
    key: str
    workspace: str
    member: str
    role: str


@dataclass
class MockServer:
    """A running mock as a test sees it: where it is, its keys, and the control plane."""

    base_url: str
    keys: list[Key]
    sandbox: str | None = None
    control_token: str | None = None
    _http: httpx.Client = field(init=False, repr=False)

    def __post_init__(self) -> None:
        headers = {"Authorization": f"Bearer {self.control_token}"} if self.control_token else {}
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=60, verify=tls_context()
        )

    # -- keys ------------------------------------------------------------------------------

    def key(self, *, role: str = "owner", workspace: str | None = None) -> str:
        """A key of this role (``owner``, ``admin``, ``editor``, ``viewer``) in ``workspace``
        (a fixture slug such as ``acme`` or ``globex``; default the first workspace that has
        one): ``mock.key(role="viewer")``, ``mock.key(workspace="globex")``."""
        for key in self.keys:
            if key.role == role and workspace in (None, key.workspace):
                return key.key
        raise LookupError(f"no {role} key" + (f" in {workspace}" if workspace else ""))

    def auth(self, *, role: str = "owner", workspace: str | None = None) -> dict[str, str]:
        """``{"Authorization": "Bearer <key>"}`` for a key of this role (as :meth:`key`)."""
        return {"Authorization": f"Bearer {self.key(role=role, workspace=workspace)}"}

    # -- the control plane -----------------------------------------------------------------

    def control(self, method: str, path: str, body: Any = None, **params: Any) -> dict[str, Any]:
        """Call ``/_mock{path}`` (in this mock's sandbox, if any); raises on a refusal."""
        if self.sandbox is not None:
            params.setdefault("sandbox", self.sandbox)
        response = self._http.request(
            method, f"/_mock{path}", json=body, params={k: v for k, v in params.items() if v}
        )
        if response.status_code != 200:
            raise MockError(response)
        result: dict[str, Any] = response.json()
        return result

    def now(self) -> str:
        return str(self.control("GET", "/clock")["now"])

    def advance(self, seconds: float) -> str:
        """Move the mock's clock forward; jobs, deliveries and schedules follow. The new time."""
        return str(self.control("POST", "/clock/advance", {"seconds": seconds})["now"])

    def flush_deliveries(self, timeout: float = 30) -> dict[str, Any]:
        """Make every webhook attempt that is due now, and wait for them."""
        return self.control("POST", "/deliveries/flush", {"timeoutSeconds": timeout})

    def deliveries(self, **filters: Any) -> list[dict[str, Any]]:
        """Webhook and callback deliveries, with every attempt (filters: ``state``, ``event``)."""
        return list(self.control("GET", "/deliveries", **filters)["deliveries"])

    def journal(self, limit: int = 100) -> list[dict[str, Any]]:
        """The requests the mock answered, newest last."""
        return list(self.control("GET", "/requests", limit=limit)["requests"])

    def credits(self, workspace: str = "acme") -> int:
        return int(self.control("GET", f"/workspaces/{workspace}/credits")["balance"])

    def set_credits(self, balance: int, workspace: str = "acme") -> int:
        path = f"/workspaces/{workspace}/credits"
        return int(self.control("PUT", path, {"balance": balance})["balance"])

    def fault(
        self,
        *,
        status: int,
        code: str,
        operation_id: str | None = None,
        path: str | None = None,
        count: int | None = None,
        retry_after: int | None = None,
        delay_ms: int | None = None,
    ) -> dict[str, Any]:
        """The next ``count`` requests (default 1; None: until cleared) matching
        ``operation_id`` or ``path`` answer ``status``/``code``.

        ``operation_id`` is the contract's ``operationId`` of the operation, for example
        ``listProjects`` (``GET /v1/projects``), ``createProject`` (``POST /v1/projects``),
        ``getJob`` (``GET /v1/jobs/{jobId}``) or ``createFilmOutline`` (``POST
        /v1/text/film``). Every operation's id is in ``spec/openapi.yaml``, and in the document
        the mock serves at ``GET /v1/openapi.json``; each journal entry (:meth:`journal`) names
        the ``operationId`` it matched. ``path`` matches the request path instead (``*``
        wildcards: ``/v1/*``). 401 and 5xx faults answer before authentication; ``code``
        must be one the contract lists for ``status`` (``429``: ``rate_limited``; ``503``:
        ``upstream_unavailable`` or ``capability_unavailable``). ``retry_after`` sets
        ``Retry-After`` (``rate_limited`` and ``upstream_unavailable`` get one by default);
        ``delay_ms`` answers that much later. For one request, the header
        ``Prefer: code=429`` does the same without a fault (see the README)."""
        match = {"operationId": operation_id} if operation_id else {"path": path}
        spec: dict[str, Any] = {"match": match, "status": status, "code": code}
        for name, value in (("count", count), ("retryAfter", retry_after), ("delayMs", delay_ms)):
            if value is not None:
                spec[name] = value
        return dict(self.control("POST", "/faults", spec)["fault"])

    def clear_faults(self) -> None:
        self.control("DELETE", "/faults")

    def reset(self) -> None:
        """State, clock, limits, faults and journal back to the fixtures."""
        self.control("POST", "/reset")

    def close(self) -> None:
        self._http.close()


class MockError(RuntimeError):
    """The control plane refused a call."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(
            f"{response.request.method} {response.request.url}: "
            f"{response.status_code} {response.text}"
        )
        self.response = response


# -- serving in-process -------------------------------------------------------------------------


def loopback_socket() -> socket.socket:
    """A TCP socket bound to a free loopback port (bound now, so the port is ours)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@cache
def _prompt_server_class() -> type[Any]:
    """Made when first needed: importing uvicorn is left to the tests that serve."""
    import uvicorn

    class PromptServer(uvicorn.Server):
        """uvicorn's server, stopped at once: its main loop looks for ``should_exit`` every
        0.1 s, so a stop from another thread would wait for the next look (half of the time
        of a start and stop in a test)."""

        _wake: asyncio.Event | None = None
        _loop: asyncio.AbstractEventLoop | None = None

        async def main_loop(self) -> None:
            self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
            counter = 0
            should_exit = await self.on_tick(counter)
            while not should_exit:
                counter = (counter + 1) % 864000
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), 0.1)
                should_exit = await self.on_tick(counter)

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            """uvicorn's shutdown, less its fixed pauses: it sleeps 0.1 s after asking the
            open connections to close, then looks every 0.1 s for connections and tasks still
            going (the rest of a start and stop in a test); this looks every 5 ms, within the
            same ``timeout_graceful_shutdown``, then stops the app as uvicorn does."""
            for server in self.servers:
                server.close()
            for sock in sockets or []:
                sock.close()
            for connection in list(self.server_state.connections):
                connection.shutdown()
            loop = asyncio.get_running_loop()
            grace = self.config.timeout_graceful_shutdown
            deadline = None if grace is None else loop.time() + grace
            state = self.server_state
            while (state.connections or state.tasks) and not self.force_exit:
                if deadline is not None and loop.time() >= deadline:
                    for task in state.tasks:
                        task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
                    break
                await asyncio.sleep(0.005)
            for server in self.servers:
                await server.wait_closed()
            if not self.force_exit:
                await self.lifespan.shutdown()

        def exit_now(self) -> None:
            self.should_exit = True
            loop, wake = self._loop, self._wake
            if loop is not None and wake is not None:
                with contextlib.suppress(RuntimeError):  # the loop has already ended
                    loop.call_soon_threadsafe(wake.set)

    return PromptServer


def prompt_server(config: Any) -> Any:
    """A uvicorn server for ``config`` (a ``uvicorn.Config``) that stops at once when
    ``exit_now()`` is called from another thread (the suite's webhook receiver uses it too)."""
    return _prompt_server_class()(config)


class ThreadedServer:
    """Any ASGI app served by uvicorn in a thread, on a loopback socket bound before it starts
    (``config``: uvicorn.Config options)."""

    def __init__(self, app: Any, sock: socket.socket | None = None, **config: Any) -> None:
        import uvicorn

        self.app = app
        self.sock = sock or loopback_socket()
        self.port = int(self.sock.getsockname()[1])
        options = {"log_level": "warning", "timeout_graceful_shutdown": 1} | config
        self.server = prompt_server(uvicorn.Config(app, **options))
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, name="asgi", daemon=True
        )
        self.base_url = f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{type(self.app).__name__} did not start serving")
            time.sleep(0.005)

    def stop(self) -> None:
        self.server.exit_now()
        if self.thread.is_alive():
            self.thread.join(timeout=10)
        self.sock.close()


class LocalServer(ThreadedServer):
    """The mock, served in-process (manual clock, loopback callbacks allowed by default)."""

    def __init__(self, **settings: Any) -> None:
        from mockserver.app import create_app
        from mockserver.settings import Settings

        sock = loopback_socket()
        port = int(sock.getsockname()[1])
        options = {"clock": "manual", "allow_private_callbacks": True} | settings
        super().__init__(
            create_app(Settings(host="127.0.0.1", port=port, **options)), sock, lifespan="on"
        )

    def stop(self) -> None:
        super().stop()
        self.app.close()

    def keys(self) -> list[Key]:
        from mockserver.fixtures import load_fixtures

        fixtures = load_fixtures(self.app.settings.fixtures)
        return [
            Key(k["key"], w["slug"], k["member"], w["members"][k["member"]]["role"])
            for w in fixtures["workspaces"]
            for k in w.get("keys", [])
        ]


# -- receiving webhooks ---------------------------------------------------------------------


@dataclass(frozen=True)
class Delivery:
    """One delivery as the receiver got it: the raw body, and its headers by lowercase name."""

    headers: dict[str, str]
    body: bytes
    verified: bool  # its signature is right for the receiver's secret

    @property
    def event(self) -> str:
        return self.headers.get("x-service-event", "")

    @property
    def event_id(self) -> str:
        return self.headers.get("x-service-event-id", "")

    def json(self) -> Any:
        return json.loads(self.body)

    def describe(self) -> str:
        verdict = "verified" if self.verified else "signature NOT verified with the secret given"
        return f"{self.event or '(no event)'} {self.event_id or '(no id)'}: {verdict}"


class WebhookReceiver:
    """An HTTP endpoint on loopback that takes the mock's deliveries (any path): ``url`` to
    hand the mock, ``secret`` to verify with (settable, for a subscription whose secret the
    mock made), ``deliveries`` in the order they came, :meth:`wait` for some.

    A delivery whose signature verifies with ``secret`` is answered 200; any other 400 (which
    ends it: the mock does not retry a 4xx), and :meth:`wait` then fails saying so."""

    def __init__(self, secret: str | None) -> None:
        self.secret = secret
        self.deliveries: list[Delivery] = []
        self._arrived = threading.Condition()
        self._server = ThreadedServer(self._app, interface="asgi3", lifespan="off")
        self.url = self._server.base_url + "/hooks"

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        verified = self.secret is not None and signing.verify(
            self.secret,
            headers.get("x-service-timestamp", ""),
            body,
            headers.get("x-service-signature", ""),
        )
        with self._arrived:
            self.deliveries.append(Delivery(headers, body, verified))
            self._arrived.notify_all()
        await send({"type": "http.response.start", "status": 200 if verified else 400})
        await send({"type": "http.response.body", "body": b""})

    def wait(
        self, count: int = 1, *, event: str | None = None, timeout: float = 10
    ) -> list[Delivery]:
        """The first ``count`` verified deliveries (of ``event``, when given), once that many
        have arrived; fails (AssertionError) after ``timeout`` seconds, or as soon as one
        arrives whose signature does not verify, saying what arrived."""

        def chosen() -> list[Delivery]:
            return [d for d in self.deliveries if d.verified and event in (None, d.event)]

        def settled() -> bool:
            return len(chosen()) >= count or any(not d.verified for d in self.deliveries)

        with self._arrived:
            self._arrived.wait_for(settled, timeout)
            found, arrived = chosen(), list(self.deliveries)
        bad = [d for d in arrived if not d.verified]
        if bad or len(found) < count:
            what = f"{count} verified deliver{'y' if count == 1 else 'ies'}" + (
                f" of {event}" if event else ""
            )
            why = "a signature did not verify" if bad else f"not within {timeout:g} s"
            seen = "; ".join(d.describe() for d in arrived) or "nothing"
            raise AssertionError(
                f"waited for {what} at {self.url}: {why}; {len(arrived)} arrived: {seen}"
            )
        return found[:count]

    def clear(self) -> None:
        with self._arrived:
            self.deliveries.clear()


@contextlib.contextmanager
def webhook_receiver(secret: str | None = None) -> Iterator[WebhookReceiver]:
    """A :class:`WebhookReceiver` for the block, verifying with ``secret`` (default: a new one,
    ``whsec_`` and 32 hex digits, fit for a ``callbackSecret``); stopped when the block ends."""
    receiver = WebhookReceiver(secret if secret is not None else f"whsec_{token_hex(16)}")
    receiver._server.start()
    try:
        yield receiver
    finally:
        receiver._server.stop()


@contextlib.contextmanager
def sandbox_of(handle: MockServer, **spec: Any) -> Iterator[MockServer]:
    """A new sandbox of the mock ``handle`` reaches, for the block (``POST /_mock/sandboxes``
    fields in ``spec``); ended when the block ends."""
    made = handle.control("POST", "/sandboxes", spec or None)["sandbox"]
    inner = MockServer(
        handle.base_url,
        [Key(**k) for k in made["keys"]],
        sandbox=made["id"],
        control_token=handle.control_token,
    )
    try:
        yield inner
    finally:
        with contextlib.suppress(httpx.HTTPError, MockError):
            handle.control("DELETE", f"/sandboxes/{inner.sandbox}")
        inner.close()


@contextlib.contextmanager
def mock_server(
    url: str | None = None,
    *,
    sandbox: bool | dict[str, Any] | None = None,
    control_token: str | None = None,
    **settings: Any,
) -> Iterator[MockServer]:
    """A mock for the block: in-process (default), or the one at ``url`` / ``MOCKSERVER_URL``.

    ``settings`` (in-process only) are :class:`mockserver.settings.Settings` fields, for
    example ``seed=7`` or ``fixtures=Path(...)``; the clock is manual and loopback callbacks
    are allowed unless they say otherwise. Against a shared mock the block always works in a
    sandbox of its own; ``sandbox=True`` asks for one in-process too. ``sandbox`` may also be a
    dict of ``POST /_mock/sandboxes`` fields (``{"workspace": "acme"}``). ``control_token``
    (default ``$MOCKSERVER_CONTROL_TOKEN``, for the mock at ``url``) is the mock's control token.
    """
    url = url or os.environ.get(ENV_URL)
    local = None
    if url is None:
        local = LocalServer(control_token=control_token, **settings)
        local.start()
        handle = MockServer(local.base_url, local.keys(), control_token=control_token)
    else:
        if settings:
            raise TypeError("settings apply to an in-process mock only, not to " + url)
        token = control_token or os.environ.get(ENV_TOKEN) or None
        handle = MockServer(url.rstrip("/"), [], control_token=token)
        sandbox = True if sandbox is None else sandbox
    try:
        if sandbox:
            with sandbox_of(handle, **(sandbox if isinstance(sandbox, dict) else {})) as inner:
                yield inner
        else:
            yield handle
    finally:
        handle.close()
        if local is not None:
            local.stop()
