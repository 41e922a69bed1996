"""The only HTTP client to the deployment under test (and to the bundled mock's control plane).

:class:`Target` sends every request of a run. It

* counts requests against ``--max-requests`` (:class:`BudgetExhausted` when the budget is used up)
  and against the allowance the runner gives the running check (conformance/plan.py);
* keeps the run's deadline (``--time-budget``): a wait that would end after it is not made and no
  request is sent after it (:class:`TimeBudgetExhausted`); a request's own timeout is bounded by
  the time left;
* never hammers: after a response says ``x-ratelimit-remaining: 0`` it waits for the window to
  reset, and it honours ``429`` and ``503 upstream_unavailable`` ``Retry-After`` (against the
  bundled mock by moving the mock's manual clock through the control plane; against a real
  deployment by sleeping, capped, and saying so in the run's notes);
* never waits forever: against a real deployment, a ``429`` after :data:`STUCK_AFTER` honoured
  ``Retry-After`` waits in a row for one key is a :class:`SetupProblem` (the rate window does
  not move), not one more wait;
* records every exchange, so that a failure can show the request, the response and a curl
  command (with the API keys masked as ``${API_KEY}``, ``${SECOND_API_KEY}`` and the like);
* tells its observers about every exchange (the envelope and response checks run there);
* sends requests *together* for the checks that judge overlap (:meth:`Target.send_together`):
  each on a connection of its own, all released at once.
"""

from __future__ import annotations

import json
import shlex
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx

from conformance.loopback import transport_for
from mockserver.platform.tls import tls_context

MAX_KEPT_BODY = 1 << 20
WAKE_EVERY = 1.0  # seconds between two looks at what a wait with `until` waits for


class _NoCookies(httpx.Cookies):
    """A cookie store that stays empty: what a response sets is not even parsed."""

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


_NO_COOKIES = _NoCookies()


class SuiteClient(httpx.Client):
    """httpx's client without a cookie store. Each request carries what its case or check says
    and nothing a deployment set before: a session cookie must not authenticate a request the
    suite sends without a key, nor one check's cookie reach the next. Not keeping cookies also
    spares the parse of every response for them (~0.13 ms of CPU a request)."""

    @property
    def cookies(self) -> httpx.Cookies:
        return _NO_COOKIES


class _Unset:
    """Not given (yet); pickled as a reference, so it stays the one sentinel in a worker."""

    def __reduce__(self) -> str:
        return "_UNSET"


_UNSET: Any = _Unset()


BUDGET_USED_UP = "request budget used up"
TIME_BUDGET_USED_UP = "time budget used up"


class BudgetExhausted(Exception):
    """The run's ``--max-requests`` (or the running check's allowance of it) is used up;
    ``reason`` is the skip reason a check records for it."""

    reason = BUDGET_USED_UP

    def __init__(self) -> None:
        super().__init__(self.reason)


class TimeBudgetExhausted(BudgetExhausted):
    """The run's ``--time-budget`` ends before the wait or the request would: not made."""

    reason = TIME_BUDGET_USED_UP


class TargetUnreachable(Exception):
    """The deployment did not answer at the transport level (refused, DNS, TLS, timeout)."""


class SetupProblem(Exception):
    """The run cannot judge the deployment as it was set up (a key of the wrong kind, a rate
    window that never moves, a receiver the deployment cannot reach ...): never a conformance
    failure. Its message is one line saying what to change (exit status 2)."""


@dataclass(frozen=True)
class Wait:
    """A wait the run is about to make: how long, why, and until when (wall clock, UTC)."""

    seconds: float
    why: str
    until: float  # time.time() when it ends
    check: str | None = None

    @classmethod
    def from_now(cls, seconds: float, why: str, check: str | None = None) -> Wait:
        """A wait of (at most) ``seconds`` that begins now."""
        return cls(seconds, why, time.time() + seconds, check)


AUTH_KINDS = (
    "primary", "second", "restricted", "same-person", "none", "malformed", "unknown", "custom",
)  # fmt: skip
KEYED = ("primary", "second", "restricted")  # the identities a run holds a key of
KEY_OPTIONS = {
    "primary": "--api-key", "second": "--second-key", "restricted": "--restricted-key",
    "same-person": "--same-person-key",
}  # fmt: skip

#: Honoured ``Retry-After`` waits in a row for one key, with nothing but ``429`` between, after
#: which another ``429`` means the deployment's rate window does not move (a mock on a manual
#: clock reached without its control plane, or another client draining the bucket): three
#: waits are enough to tell that from a busy window, and bound the time lost to it (each wait
#: capped at ``wait_cap``).
STUCK_AFTER = 3


@dataclass
class Exchange:
    """One request the run sent and the response it got."""

    index: int
    method: str
    url: str
    request_headers: dict[str, str]
    request_body: bytes
    status: int
    response_headers: dict[str, str]  # lower-case names
    response_body: bytes
    elapsed: float
    operation_id: str | None = None
    auth: str = "primary"
    provoked: bool = False
    check: str | None = None
    masks: dict[str, str] = field(default_factory=dict, repr=False)
    base_path: str = ""  # the path of the target's base URL (``/gw``); "" at the host's root
    _json: Any = field(default=_UNSET, repr=False)

    @property
    def path(self) -> str:
        """The path the contract names (``/v1/jobs/j1``): the URL's path below the target's
        base path, so that it matches the contract's templates behind a gateway's prefix too
        (the whole URL is :attr:`url`)."""
        return path_below(self.url, self.base_path)

    def header(self, name: str) -> str | None:
        return self.response_headers.get(name.lower())

    def json(self) -> Any:
        """The response body parsed as JSON, or None when it is not JSON."""
        if self._json is _UNSET:
            try:
                self._json = json.loads(self.response_body)
            except ValueError:
                self._json = None
        return self._json

    @property
    def code(self) -> str | None:
        body = self.json()
        return body.get("code") if isinstance(body, dict) else None

    @property
    def answered(self) -> str:
        """The status and code, for messages: ``409 conflict``, ``422 (no code)``."""
        return f"{self.status} {self.code or '(no code)'}"

    @property
    def capability_unavailable(self) -> bool:
        return self.status == 503 and self.code == "capability_unavailable"

    def _mask(self, text: str) -> str:
        for secret, name in self.masks.items():
            if secret:
                text = text.replace(secret, name)
        return text

    def masked_request_headers(self) -> dict[str, str]:
        return {k: self._mask(v) for k, v in self.request_headers.items()}

    def curl(self) -> str:
        """A curl command that sends this request again (API keys as shell variables)."""
        parts = ["curl", "-i", "-X", self.method]
        for name, value in self.masked_request_headers().items():
            if name.lower() in ("content-length", "host", "accept-encoding", "connection"):
                continue
            header = f"{name}: {value}"
            parts.append("-H")
            parts.append(f'"{header}"' if "${" in header else shlex.quote(header))
        if self.request_body:
            text = self.request_body.decode("utf-8", "replace")
            if len(text) > 4096:
                parts += ["--data-binary", f"@body.json  # {len(self.request_body)} bytes"]
            else:
                parts += ["--data-binary", shlex.quote(self._mask(text))]
        parts.append(shlex.quote(self._mask(self.url)))
        return " ".join(parts)

    def to_dict(self, limit: int = 4096) -> dict[str, Any]:
        def text(body: bytes) -> str:
            shown = body[:limit].decode("utf-8", "replace")
            return shown + (f"… ({len(body)} bytes)" if len(body) > limit else "")

        return {
            "index": self.index,
            "operationId": self.operation_id,
            "request": {
                "method": self.method,
                "url": self._mask(self.url),
                "headers": self.masked_request_headers(),
                "body": self._mask(text(self.request_body)),
            },
            "response": {
                "status": self.status,
                "headers": dict(self.response_headers),
                "body": text(self.response_body),
            },
            "curl": self.curl(),
        }


def rounded(seconds: float) -> str:
    """Seconds as people read a wait: whole from 10 s up (``59.9993`` is ``60``), else to a
    tenth (``2.5``), never the float's noise."""
    if seconds >= 10:
        return str(round(seconds))
    return f"{round(seconds, 1):g}"


def path_below(url: str, base_path: str) -> str:
    """The path of ``url`` below ``base_path`` (``/gw/v1/jobs`` below ``/gw``: ``/v1/jobs``);
    the URL's whole path when it is not below it."""
    path = urlsplit(url).path
    rest = path.removeprefix(base_path)
    return rest if base_path and rest.startswith("/") else path


class MockControl:
    """The bundled mock's control plane (``/_mock/``); used only when the target is the mock."""

    def __init__(
        self,
        client: httpx.Client,
        base_url: str,
        token: str | None = None,
        sandbox: str | None = None,
    ) -> None:
        self.client = client
        self.base = base_url.rstrip("/") + "/_mock"
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.params = {"sandbox": sandbox} if sandbox else {}  # act in that sandbox only

    def call(self, method: str, path: str, body: Any = None) -> httpx.Response:
        return self.client.request(
            method,
            self.base + path,
            json=body,
            headers=self.headers,
            params=self.params,
            timeout=60,
        )

    def _ok(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        response = self.call(method, path, body)
        response.raise_for_status()
        return response.json()

    def reset(self) -> None:
        self._ok("POST", "/reset")

    def advance(self, seconds: float) -> None:
        if seconds > 0:
            self._ok("POST", "/clock/advance", {"seconds": seconds})

    def credits(self, workspace: str) -> int:
        return int(self._ok("GET", f"/workspaces/{workspace}/credits")["balance"])

    def set_credits(self, workspace: str, balance: int) -> None:
        self._ok("PUT", f"/workspaces/{workspace}/credits", {"balance": balance})

    def set_budget(self, workspace: str, member: str, capped: bool) -> None:
        self._ok("PUT", f"/workspaces/{workspace}/members/{member}/budget", {"capped": capped})

    def set_capability(self, name: str, **change: Any) -> None:
        self._ok("PUT", f"/capabilities/{name}", change)

    def governance(self, workspace: str) -> dict[str, Any]:
        return dict(self._ok("GET", f"/workspaces/{workspace}/governance").get("governance", {}))

    def set_governance(self, workspace: str, **settings: bool) -> dict[str, Any]:
        """Lock agent configuration, flip the kill switch …; the settings after the change."""
        body = self._ok("PUT", f"/workspaces/{workspace}/governance", settings)
        return dict(body.get("governance", {}))

    def offers(self, operation_id: str) -> bool:
        """Whether this control plane has the operation (an older mock may not)."""
        response = self.call("GET", "/openapi.json")
        if response.status_code != 200:
            return False
        try:
            paths = response.json().get("paths", {})
        except ValueError:
            return False
        return any(
            isinstance(op, dict) and op.get("operationId") == operation_id
            for item in paths.values()
            if isinstance(item, dict)
            for op in item.values()
        )

    def set_credential_store(self, *, reachable: bool, retry_after: int | None = None) -> None:
        """Make the credential store unreachable (every keyed request: 503), or reachable."""
        body: dict[str, Any] = {"reachable": reachable}
        if retry_after is not None:
            body["retryAfter"] = retry_after
        self._ok("PUT", "/credential-store", body)

    def flush_deliveries(self) -> bool:
        """Await the deliveries that are due; False when the mock has no such call yet."""
        response = self.call("POST", "/deliveries/flush")
        return response.status_code < 400


def _lower(headers: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


class Target:
    """The deployment under test, seen only through its public interface."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        second_key: str | None = None,
        restricted_key: str | None = None,
        same_person_key: str | None = None,
        max_requests: int | None = None,
        control_token: str | None = None,
        use_control: bool = False,
        sandbox: str | None = None,
        timeout: float = 30.0,
        wait_cap: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        deadline: float | None = None,
        client: httpx.Client | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.base_path = urlsplit(self.base_url).path  # a gateway's prefix; "" at the root
        self.api_key = api_key
        self.second_key = second_key
        self.restricted_key = restricted_key  # a lower role in the workspace of api_key
        # Another key of the person who holds api_key: it counts in the same rate-limit bucket
        # (the run never spreads its work over it; only the rate-limit checks send with it).
        self.same_person_key = same_person_key
        self.max_requests = max_requests
        self.wait_cap = wait_cap
        self.sleep = sleep
        self.clock = clock  # monotonic seconds; ``sleep`` moves it (a test's clock, injected)
        self.deadline = deadline  # clock() by which the run ends (--time-budget), if any
        self.timeout = timeout
        self.allowance_end: int | None = None  # the count at which the running check stops
        self.client = client or self.new_client()
        self.sandbox = sandbox  # the bundled mock's sandbox the keys belong to, if any
        self.control = (
            MockControl(self.client, self.base_url, control_token, sandbox) if use_control else None
        )
        self.count = 0
        self.exchanges: list[Exchange] = []
        self.observers: list[Callable[[Exchange], None]] = []
        self.notes: list[str] = []
        self.current_check: str | None = None
        self.answered = False  # whether the deployment ever answered
        self.on_wait: Callable[[Wait], None] | None = None  # told before every wait
        # identity -> (seen at, x-ratelimit-remaining, x-ratelimit-reset) of its last response
        self._windows: dict[str, tuple[float, int, int]] = {}
        self._honoured: dict[str, list[int]] = {}  # identity -> waits since a non-429
        self._masks = {api_key: "${API_KEY}"}
        if second_key:
            self._masks[second_key] = "${SECOND_API_KEY}"
        if restricted_key:
            self._masks[restricted_key] = "${RESTRICTED_API_KEY}"
        if same_person_key:
            self._masks[same_person_key] = "${SAME_PERSON_API_KEY}"

    def new_client(self) -> httpx.Client:
        """A client to the deployment with connections of its own."""
        return SuiteClient(
            timeout=self.timeout,
            follow_redirects=False,
            transport=transport_for(self.base_url),
            verify=tls_context(),
        )

    def close(self) -> None:
        self.client.close()

    # -- budget -----------------------------------------------------------------------------------

    @property
    def remaining(self) -> int | None:
        """Requests the running check may still send: the run's budget left, or less where the
        runner gave the check an allowance (None: unbounded)."""
        left = self.run_remaining
        if self.allowance_end is None:
            return left
        allowed = max(0, self.allowance_end - self.count)
        return allowed if left is None else min(left, allowed)

    @property
    def run_remaining(self) -> int | None:
        """Requests the whole run may still send (None: unbounded)."""
        return None if self.max_requests is None else max(0, self.max_requests - self.count)

    def allow(self, requests: int | None) -> None:
        """Let the running check send at most ``requests`` more (None: the run's budget)."""
        self.allowance_end = None if requests is None else self.count + max(0, requests)

    def require(self, n: int) -> None:
        """Raise :class:`BudgetExhausted` unless ``n`` more requests fit in the budget, and
        :class:`TimeBudgetExhausted` once the deadline has passed."""
        if self.time_left() == 0:
            raise TimeBudgetExhausted
        if self.remaining is not None and self.remaining < n:
            raise BudgetExhausted

    def time_left(self) -> float | None:
        """Seconds until the deadline (0 once it has passed; None: no time budget)."""
        return None if self.deadline is None else max(0.0, self.deadline - self.clock())

    # -- waiting --------------------------------------------------------------------------------

    def wait(self, seconds: float, why: str, until: Callable[[], bool] | None = None) -> None:
        """Let time pass: the mock's clock moves; a real deployment is waited for (capped).
        With ``until``, the wait ends as soon as it holds (looked at every second: for what
        arrives without a request, such as a delivery to the suite's receiver)."""
        if seconds <= 0:
            return
        if self.control is not None:
            self.control.advance(seconds)
            return
        waited = min(seconds, self.wait_cap)
        left = self.time_left()
        if left is not None and waited > left:
            self._refused_wait(waited, why)
        capped = f" (capped from {rounded(seconds)} s)" if waited < seconds else ""
        self.notes.append(f"waited {rounded(waited)} s{capped}: {why}")
        self.announce(waited, why)
        if until is None:
            self.sleep(waited)
            return
        while waited > 0 and not until():
            self.sleep(min(WAKE_EVERY, waited))
            waited -= WAKE_EVERY

    def announce(self, seconds: float, why: str) -> None:
        """Tell ``on_wait`` that the run now waits (at most) ``seconds`` of real time for
        ``why``: every real wait of a run is announced here, however it waits."""
        if self.on_wait is not None:
            self.on_wait(Wait.from_now(seconds, why, self.current_check))

    def _refused_wait(self, seconds: float, why: str) -> None:
        if not any(note.startswith("the time budget") for note in self.notes):
            self.notes.append(
                f"the time budget ended the run's waits: {rounded(seconds)} s more ({why}) did not "
                "fit"
            )
        raise TimeBudgetExhausted

    def forget_windows(self) -> None:
        """The deployment's rate-limit windows were reset (the mock's state was reset)."""
        self._windows.clear()

    def _pace(self, identity: str, need: int = 1) -> None:
        """Before ``need`` requests at once: wait for the window to reset when its last response
        left fewer than that."""
        window = self._windows.get(identity)
        if window is None or window[1] >= need:
            return
        del self._windows[identity]
        seen_at, remaining, reset = window
        # The mock's clock moves only when told to; real time counts against a real window.
        left = reset if self.control is not None else reset - (self.clock() - seen_at)
        more = f", {need} needed at once" if need > 1 else ""
        why = f"the rate-limit window to reset (x-ratelimit-remaining: {remaining}{more})"
        self.wait(left, why)

    def _remember_window(self, identity: str, exchange: Exchange) -> None:
        remaining = exchange.header("x-ratelimit-remaining")
        reset = exchange.header("x-ratelimit-reset")
        if remaining and remaining.isdigit() and reset and reset.isdigit():
            self._windows[identity] = (self.clock(), int(remaining), int(reset))

    # -- requests -------------------------------------------------------------------------------

    def authorization(self, auth: str) -> str | None:
        if auth == "primary":
            return f"Bearer {self.api_key}"
        if auth == "second":
            return f"Bearer {self.second_key}"
        if auth == "restricted":
            return f"Bearer {self.restricted_key}"
        if auth == "same-person":
            return f"Bearer {self.same_person_key}"
        if auth == "malformed":
            return "Bearer"
        if auth == "unknown":
            return f"Bearer {self.unknown_key()}"
        return None

    def unknown_key(self) -> str:
        """A well-formed key nobody holds; in a sandbox, one naming it (so the sandbox answers)."""
        secret = f"conformance_unknown_{uuid.uuid4().hex}"
        if self.sandbox:
            return f"sk_sbx_{self.sandbox.removeprefix('sbx_')}_{secret}"
        return f"sk_{secret}"

    def request(
        self,
        method: str,
        path: str,
        *,
        operation_id: str | None = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        json_body: Any = _UNSET,
        content: bytes | None = None,
        auth: str = "primary",
        provoked: bool = False,
        retry: bool = True,
        pace: bool = True,
    ) -> Exchange:
        """Send one request (and its honoured retries); answer the last exchange."""
        url = self.base_url + path
        query = urlencode([(k, _wire(v)) for k, v in (params or {}).items() if v is not None])
        if query:
            url += ("&" if "?" in url else "?") + query
        sent = dict(headers or {})
        if json_body is not _UNSET:
            content = json.dumps(json_body, ensure_ascii=False).encode("utf-8")
            sent.setdefault("Content-Type", "application/json")
        return self.send(
            method,
            url,
            sent,
            content or b"",
            operation_id=operation_id,
            auth=auth,
            provoked=provoked,
            retry=retry,
            pace=pace,
        )

    def send(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        *,
        operation_id: str | None = None,
        auth: str = "primary",
        provoked: bool = False,
        retry: bool = True,
        pace: bool = True,
    ) -> Exchange:
        headers = dict(headers)
        if auth != "custom":  # custom: the caller's own Authorization header is sent as given
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            if value := self.authorization(auth):
                headers["Authorization"] = value
        attempts = 3 if retry else 1
        exchange: Exchange | None = None
        for _ in range(attempts):
            if pace and auth in KEYED:
                self._pace(auth)
            exchange = self._send_once(method, url, headers, body, operation_id, auth, provoked)
            if auth in KEYED:
                self._remember_window(auth, exchange)
                self._judge_window_moves(auth, exchange)
            if not retry or not self._should_retry(exchange):
                break
            seconds = exchange.header("retry-after") or ""
            delay = int(seconds) if seconds.isdigit() else 1
            self._windows.pop(auth, None)
            if exchange.status == 429 and auth in KEYED and self.control is None:
                self._honoured.setdefault(auth, []).append(delay)
            self.wait(delay, f"Retry-After on {exchange.status} {exchange.code or ''}".strip())
        assert exchange is not None
        return exchange

    def _judge_window_moves(self, identity: str, exchange: Exchange) -> None:
        """:class:`SetupProblem` on a ``429`` after :data:`STUCK_AFTER` honoured waits in a row
        for ``identity``; any other answer starts the count again."""
        if exchange.status != 429:
            self._honoured.pop(identity, None)
            return
        waits = self._honoured.get(identity, [])
        if len(waits) >= STUCK_AFTER:
            waited = " + ".join(f"{min(w, self.wait_cap):g}" for w in waits)
            raise SetupProblem(
                f"the rate window does not move: {KEY_OPTIONS[identity]} still gets 429 after "
                f"{len(waits)} Retry-After waits in a row ({waited} s): reach a mock on --clock "
                "manual with --mock-url (its control plane moves the clock), or give the suite a "
                "caller whose rate limit no other client uses"
            )

    @staticmethod
    def _should_retry(exchange: Exchange) -> bool:
        return exchange.status == 429 or (
            exchange.status == 503 and exchange.code == "upstream_unavailable"
        )

    def _admit(self) -> dict[str, Any]:
        """Count one request against the budget and the deadline; the options bounding its
        timeout by the time left (one reading of the clock decides)."""
        left = self.time_left()
        if left == 0:
            raise TimeBudgetExhausted
        self.require(1)
        self.count += 1
        return {} if left is None or left >= self.timeout else {"timeout": left}

    def _http(
        self,
        client: httpx.Client,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes,
        bounded: dict[str, Any],
    ) -> tuple[httpx.Response, float]:
        """The response, and how long it took; a transport failure as :class:`TargetUnreachable`
        (or :class:`TimeBudgetExhausted` when the deadline cut the request short)."""
        started = time.monotonic()
        try:
            response = client.request(method, url, headers=headers, content=body, **bounded)
        except httpx.InvalidURL as exc:
            raise TargetUnreachable(f"{url}: {exc}") from exc
        except httpx.TimeoutException as exc:
            if bounded:  # cut short by the deadline, not by the deployment
                raise TimeBudgetExhausted from exc
            raise TargetUnreachable(f"{method} {url}: {type(exc).__name__}: {exc}") from exc
        except httpx.TransportError as exc:
            raise TargetUnreachable(f"{method} {url}: {type(exc).__name__}: {exc}") from exc
        return response, time.monotonic() - started

    def _record(
        self,
        index: int,
        method: str,
        url: str,
        response: httpx.Response,
        elapsed: float,
        body: bytes,
        operation_id: str | None,
        auth: str,
        provoked: bool,
    ) -> Exchange:
        """The exchange kept and told to the observers."""
        self.answered = True
        exchange = Exchange(
            index=index,
            method=method,
            url=url,
            request_headers=dict(response.request.headers),
            request_body=body,
            status=response.status_code,
            response_headers=_lower(response.headers),
            response_body=response.content[:MAX_KEPT_BODY],
            elapsed=elapsed,
            operation_id=operation_id,
            auth=auth,
            provoked=provoked,
            check=self.current_check,
            masks=self._masks,
            base_path=self.base_path,
        )
        self.exchanges.append(exchange)
        for observer in self.observers:
            observer(exchange)
        return exchange

    def _send_once(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes,
        operation_id: str | None,
        auth: str,
        provoked: bool,
    ) -> Exchange:
        bounded = self._admit()
        index = self.count
        response, elapsed = self._http(self.client, method, url, headers, body, bounded)
        return self._record(
            index, method, url, response, elapsed, body, operation_id, auth, provoked
        )

    def send_together(self, requests: Sequence[Together]) -> list[Exchange]:
        """Send ``requests`` at once and answer their exchanges in the order given.

        Each goes on a connection of its own from a thread of its own; a barrier releases them
        together, so that the deployment has them all in hand at the same time (for the checks
        that judge overlapping calls). No pacing and no retry: a 429 or 503 is answered as it
        came. Each is counted against the budget and told to the observers like any other.
        """
        self.require(len(requests))
        needs = Counter(item.auth for item in requests if item.auth in KEYED)
        for identity, need in needs.items():
            self._pace(identity, need)
        admitted = [self._admit() for _ in requests]
        first = self.count - len(requests) + 1
        clients = [self.new_client() for _ in requests]
        barrier = threading.Barrier(len(requests))

        def one(i: int) -> tuple[httpx.Response, float]:
            item = requests[i]
            headers = dict(item.headers)
            if item.auth != "custom":
                headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
                if value := self.authorization(item.auth):
                    headers["Authorization"] = value
            barrier.wait(timeout=self.timeout)
            return self._http(clients[i], item.method, item.url, headers, item.body, admitted[i])

        try:
            with ThreadPoolExecutor(max_workers=len(requests)) as pool:
                answered = list(pool.map(one, range(len(requests))))
        finally:
            for client in clients:
                client.close()
        exchanges = [
            self._record(first + i, item.method, item.url, response, elapsed, item.body,
                         item.operation_id, item.auth, item.provoked)
            for i, (item, (response, elapsed)) in enumerate(zip(requests, answered, strict=True))
        ]  # fmt: skip
        for exchange in sorted(exchanges, key=_remaining, reverse=True):  # the fewest left last
            if exchange.auth in KEYED:
                self._remember_window(exchange.auth, exchange)
        return exchanges


@dataclass(frozen=True)
class Together:
    """One request of :meth:`Target.send_together`."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes
    operation_id: str | None = None
    auth: str = "primary"
    provoked: bool = False


def _remaining(exchange: Exchange) -> int:
    value = exchange.header("x-ratelimit-remaining") or ""
    return int(value) if value.isdigit() else 0


def _wire(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
