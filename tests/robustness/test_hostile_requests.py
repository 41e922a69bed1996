"""Hostile requests, generated: never a 5xx, always the standard error body, and a refused call
changes nothing.

Hypothesis takes a valid request of an operation from every area (and of the control plane)
and breaks it the ways clients and attackers do: lone surrogates, deep nesting, numbers out of
range, duplicate keys, a wrong type at any level, invalid UTF-8, the wrong content type, hostile
query values, or any JSON at all. Every answer must:

- be below 500, carry ``x-request-id``, and (4xx) be the standard error body, checked against
  the contract by the test client;
- leave the state byte-identical when it refuses (the snapshot and the balance);
- never contain a secret sent in the request, nor may the request journal or a log line.

Over the tests here, at least 2,000 generated requests are sent (``EXAMPLES``).
"""

from __future__ import annotations

import copy
import json
import logging
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mockserver.app import create_app
from mockserver.contract import default_contract
from mockserver.settings import Settings
from tests.robustness.support import ERROR_FIELDS
from tests.support.client import ApiClient, ControlClient
from tests.support.inproc import InProcessClient

LIMITS = default_contract().limits
DEPTH = int(LIMITS["maxJsonNestingDepth"])
LOW, HIGH = (int(v) for v in LIMITS["integerRange"])
SAFE_URL = "https://93.184.216.34/hooks"
EXAMPLES = {"bodies": 1300, "content": 250, "queries": 300, "control": 250}


@dataclass(frozen=True)
class Target:
    """A valid request of one operation, to be broken."""

    name: str
    method: str
    path: str
    body: Any = None
    key: str | None = None  # Idempotency-Key the operation requires
    secret: str | None = None  # the body field that holds a secret
    query: dict[str, Any] = field(default_factory=dict)


SECRET_FIELD = "__secret__"  # stands in the base bodies where the secret goes
TARGETS = [
    Target("products", "POST", "/v1/products", {"name": "P", "description": "d"}),
    Target("projects", "POST", "/v1/projects", {"title": "T", "mediaType": "video"}, key="k"),
    Target("campaigns", "PATCH", "/v1/campaigns/cmp_acme_002", {"status": "paused"}),
    Target(
        "channels",
        "PATCH",
        "/v1/channels/chn_money_minute",
        {"niche": "x", "products": ["none"], "enabled": True},
    ),
    Target(
        "community",
        "POST",
        "/v1/community-campaigns",
        {
            "name": "C",
            "connectedAccountId": "acc_acme_forum_main",
            "objective": "Be useful.",
            "keywords": ["budgeting"],
            "caps": {"maxPostsPerDay": 2},
            "schedule": {"daysOfWeek": [1, 2], "window": {"start": "09:00", "end": "17:00"}},
        },
        key="k",
    ),
    Target(
        "film",
        "POST",
        "/v1/text/film",
        {"title": "T", "logline": "L", "genre": "drama", "projectId": "prj_acme_01"},
    ),
    Target(
        "render",
        "POST",
        "/v1/video/render",
        {
            "projectId": "prj_acme_01",
            "story": "A walk.",
            "callbackUrl": SAFE_URL,
            "callbackSecret": SECRET_FIELD,
        },
        secret="callbackSecret",
    ),
    Target(
        "3d",
        "POST",
        "/v1/3d/from-text",
        {
            "projectId": "prj_acme_01",
            "prompt": "A teapot",
            "callbackUrl": SAFE_URL,
            "callbackSecret": SECRET_FIELD,
        },
        secret="callbackSecret",
    ),
    Target(
        "remix",
        "POST",
        "/v1/video/remix",
        {"projectId": "prj_acme_01", "sources": [{"transcript": "Hi."}], "outputFormat": "scenes"},
    ),
    Target(
        "subscriptions",
        "POST",
        "/v1/webhook-subscriptions",
        {"url": SAFE_URL, "events": ["job.completed"], "secret": SECRET_FIELD},
        key="k",
        secret="secret",
    ),
    Target("themes", "POST", "/v1/themes/classify", {"title": "Index funds", "hashtags": ["a"]}),
    Target("review", "POST", "/v1/projects/prj_acme_01/comments", {"text": "x", "timecode": 1.5}),
    Target("autopilots", "PUT", "/v1/autopilots/chn_carry_on", {"enabled": False}),
    Target("workflow", "POST", "/v1/workflow/context-snapshots", {"retrievedPassages": []}),
    Target("assets", "POST", "/v1/assets/import", {"url": "https://cdn.example/a.mp4"}, key="k"),
    Target("discovery", "POST", "/v1/discovery/configs/chn_code_daily/plan", {"niche": "python"}),
    Target(
        "agent", "POST", "/v1/agent/runs", {"projectId": "prj_acme_01", "goal": "g", "steps": []}
    ),
]
QUERY_TARGETS = [
    Target("campaigns", "GET", "/v1/campaigns", query={"status": "active", "limit": 5}),
    Target("projects", "GET", "/v1/projects", query={"limit": 5}),
    Target("hooks", "GET", "/v1/hooks/stats", query={"offset": 0}),
    Target("catalog", "GET", "/v1/video/catalog/cooking", query={"limit": 5, "offset": 1}),
    Target("assets", "GET", "/v1/assets", query={"after": 1}),
    Target("transcript", "GET", "/v1/projects/prj_acme_01/transcript", query={"wordLimit": 5}),
    Target("viral", "GET", "/v1/viral-content", query={"minScore": 50}),
    Target("usage", "GET", "/v1/usage", query={}),
]
CONTROL_TARGETS = [
    Target("clock", "POST", "/_mock/clock/advance", {"seconds": 0}),
    Target("credits", "PUT", "/_mock/workspaces/acme/credits", {"balance": 10000}),
    Target("governance", "PUT", "/_mock/workspaces/acme/governance", {"killSwitch": False}),
    Target("capability", "PUT", "/_mock/capabilities/script", {"available": True}),
    Target(
        "faults",
        "POST",
        "/_mock/faults",
        {"match": {"operationId": "getJob"}, "status": 503, "code": "upstream_unavailable"},
    ),
    Target("budget", "PUT", "/_mock/workspaces/acme/members/erin/budget", {"capped": False}),
]


# -- the mock under attack --------------------------------------------------------------------


class Captured(logging.Handler):
    """Every log record the mock writes, formatted as it would be printed."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@dataclass
class Mock:
    api: ApiClient
    control: ControlClient
    logs: Captured
    state: tuple[Any, ...] = ()

    def snapshot(self) -> tuple[Any, ...]:
        shot = self.control.http.get("/_mock/snapshot")
        assert shot.status_code == 200, shot.text
        balance = self.api.get("/v1/capabilities").json()["balance"]
        return balance, shot.content


@pytest.fixture(scope="module")
def mock() -> Iterator[Mock]:
    app = create_app(Settings(clock="manual", seed=11, rate_limit=10**9))
    logs = Captured()
    logs.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    logger = logging.getLogger("mockserver")
    logger.addHandler(logs)
    try:
        with InProcessClient(app, raise_app_exceptions=False) as http:
            yield Mock(ApiClient(http), ControlClient(http), logs)
    finally:
        logger.removeHandler(logs)


@pytest.fixture(autouse=True)
def fixtures_state(mock: Mock) -> None:
    """Each test starts from the fixtures' state and takes it as its baseline, whatever the
    test before it left: the snapshot test ends on a world it restored, which the lists it
    reads then fill in (empty collections, viral items' themes), and under xdist any test of
    this module may run after it."""
    mock.control.reset()
    mock.state = mock.snapshot()


def judge(mock: Mock, response: httpx.Response, secret: str | None) -> None:
    """The rules every hostile request is held to."""
    event(f"answered {response.status_code}")
    assert response.status_code < 500, response.text
    assert response.headers.get("x-request-id")
    if response.status_code >= 400:
        body = response.json()
        assert set(body) <= ERROR_FIELDS and {"success", "error", "code"} <= set(body), body
        assert body["success"] is False and isinstance(body["code"], str)
        after = mock.snapshot()
        assert after == mock.state, f"a refused call changed the state: {response.text}"
    else:
        mock.state = mock.snapshot()  # a success may change state; it is the new baseline
    if secret is not None:
        journal = json.dumps(mock.control.call("GET", "/requests?limit=1"))
        for form in (secret, json.dumps(secret)[1:-1]):
            assert form not in response.text
            assert all(form not in value for value in response.headers.values())
            assert form not in journal
            assert not [line for line in mock.logs.lines if form in line]
    mock.logs.lines.clear()


# -- breaking a request -----------------------------------------------------------------------

Path = tuple[Any, ...]
DEEP, NUMBER, BYTES, ANY = "\x00deep\x00", "\x00number\x00", "\x00bytes\x00", "\x00any\x00"

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(LOW, HIGH)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


def node_paths(node: Any, path: Path = ()) -> list[Path]:
    found = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            found.extend(node_paths(value, (*path, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.extend(node_paths(value, (*path, index)))
    return found


def put(tree: Any, path: Path, value: Any) -> Any:
    """``tree`` with the node at ``path`` replaced by ``value``, ``tree`` left as it was: the
    containers on the path are copied, the rest is shared (nothing here changes a tree)."""
    if not path:
        return value
    copied = copy.copy(tree)
    copied[path[0]] = put(tree[path[0]], path[1:], value)
    return copied


def remove(tree: Any, path: Path) -> Any:
    """``tree`` without the node at ``path`` (not the root), ``tree`` left as it was."""
    parent = copy.copy(_at(tree, path[:-1]))
    del parent[path[-1]]
    return put(tree, path[:-1], parent)


def other_type(value: Any) -> st.SearchStrategy[Any]:
    """A JSON value of another type than ``value``."""
    kinds: dict[type, st.SearchStrategy[Any]] = {
        dict: st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
        list: st.lists(st.integers(), max_size=2),
        str: st.text(max_size=5),
        bool: st.booleans(),
        int: st.integers(LOW, HIGH),
        float: st.floats(allow_nan=False, allow_infinity=False),
        type(None): st.none(),
    }
    current = type(value)
    return st.one_of(*(s for kind, s in kinds.items() if kind is not current))


lone_surrogates = st.integers(0xD800, 0xDFFF).map(chr)
hostile_numbers = st.one_of(
    st.integers(HIGH + 1, HIGH * 4).map(str),
    st.integers(LOW * 4, LOW - 1).map(str),
    st.integers(400, 5000).map(lambda n: "9" * n),
    st.integers(309, 100000).map(lambda e: f"1e{e}"),
    st.integers(309, 100000).map(lambda e: f"-2.5E+{e}"),
)


@st.composite
def broken_body(draw: st.DrawFn, base: Any, secret: str | None) -> tuple[bytes, str]:
    """The base body broken one way; answers the bytes and what was done."""
    tree = copy.deepcopy(base)
    if secret is not None:
        tree = json.loads(json.dumps(tree).replace(json.dumps(SECRET_FIELD), json.dumps(secret)))
    path = draw(st.sampled_from(node_paths(tree)))
    how = draw(
        st.sampled_from(
            ["surrogate", "deep", "number", "duplicate", "wrong-type", "utf8", "any", "extra"]
        )
    )
    if how == "surrogate":
        text = draw(st.text(max_size=5)) + draw(lone_surrogates) + draw(st.text(max_size=5))
        if path and isinstance(path[-1], str) and draw(st.booleans()):
            tree = put(tree, path[:-1], {**dict(_at(tree, path[:-1])), text: 1})
        else:
            tree = put(tree, path, text)
        return json.dumps(tree).encode(), how
    if how == "deep":
        tree = put(tree, path, DEEP)
        levels = draw(st.integers(DEPTH + 1, 20000))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
        deep = opener * levels + "1" + closer * levels
        return json.dumps(tree).replace(json.dumps(DEEP), deep).encode(), how
    if how == "number":
        tree = put(tree, path, NUMBER)
        return json.dumps(tree).replace(json.dumps(NUMBER), draw(hostile_numbers)).encode(), how
    if how == "duplicate" and isinstance(tree, dict) and tree:
        key = draw(st.sampled_from(sorted(tree)))
        again = draw(json_values | other_type(tree[key]))
        text = json.dumps(tree)[:-1] + f", {json.dumps(key)}: {json.dumps(again)}}}"
        return text.encode(), how
    if how == "utf8":
        tree = put(tree, path, BYTES)
        junk = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80"]))
        return json.dumps(tree).replace(json.dumps(BYTES), '"x').encode() + junk + b'"', how
    if how == "any":
        return json.dumps(draw(json_values)).encode(), how
    if how == "extra" and isinstance(tree, dict):
        tree[draw(st.text(min_size=1, max_size=8))] = draw(json_values)
        return json.dumps(tree).encode(), how
    tree = put(tree, path, draw(other_type(_at(tree, path))))
    return json.dumps(tree).encode(), "wrong-type"


def _at(tree: Any, path: Path) -> Any:
    for part in path:
        tree = tree[part]
    return tree


secrets_ = st.integers(8, 600).map(lambda n: ("S" + secrets.token_hex(n))[:n])


def send(mock: Mock, target: Target, content: bytes, content_type: str | None) -> httpx.Response:
    headers = {"Content-Type": content_type} if content_type else {}
    if target.key:
        headers["Idempotency-Key"] = secrets.token_hex(8)
    if target.path.startswith("/_mock/"):
        return mock.control.http.request(
            target.method, target.path, content=content, headers=headers
        )
    return mock.api.request(target.method, target.path, content=content, headers=headers)


SETTINGS = {"deadline": None, "suppress_health_check": list(HealthCheck), "derandomize": True}


@settings(max_examples=EXAMPLES["bodies"], **SETTINGS)
@given(data=st.data(), target=st.sampled_from(TARGETS), secret=secrets_)
def test_hostile_bodies_are_refused_cleanly(mock, data, target, secret):
    secret_value = secret if target.secret else None
    content, how = data.draw(broken_body(target.body, secret_value))
    event(how)
    response = send(mock, target, content, "application/json")
    judge(mock, response, secret_value)


content_types = st.sampled_from(
    [
        None,
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/xml",
        "application/json-patch",
        "text/json",
        "application/octet-stream",
        "*/*",
        "application/json; charset=utf-16",
        "application/problem+json",
    ]
)


@settings(max_examples=EXAMPLES["content"], **SETTINGS)
@given(
    target=st.sampled_from(TARGETS + CONTROL_TARGETS), content_type=content_types, secret=secrets_
)
def test_bodies_of_other_content_types_are_refused_cleanly(mock, target, content_type, secret):
    secret_value = secret if target.secret else None
    text = json.dumps(target.body).replace(json.dumps(SECRET_FIELD), json.dumps(secret))
    response = send(mock, target, text.encode(), content_type)
    judge(mock, response, secret_value)


query_values = st.one_of(
    hostile_numbers,
    st.integers(LOW - 10, HIGH + 10).map(str),
    st.text(max_size=30),
    st.sampled_from(["%ED%A0%80", "%FF", "%00", "-0", "+1", "1.0", "0x10", " 1", "1e3", "true"]),
)


@settings(max_examples=EXAMPLES["queries"], **SETTINGS)
@given(
    target=st.sampled_from(QUERY_TARGETS),
    changes=st.lists(
        st.tuples(
            st.text(max_size=10) | st.sampled_from(["limit", "cursor", "offset"]), query_values
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_hostile_query_values_are_refused_cleanly(mock, target, changes):
    query = [*target.query.items(), *changes]
    response = mock.api.request(target.method, target.path, params=query)
    judge(mock, response, None)


@settings(max_examples=EXAMPLES["control"], **SETTINGS)
@given(data=st.data(), target=st.sampled_from(CONTROL_TARGETS))
def test_hostile_control_plane_bodies_are_refused_cleanly(mock, data, target):
    content, _how = data.draw(broken_body(target.body, None))
    response = send(mock, target, content, "application/json")
    judge(mock, response, None)
    mock.control.call("DELETE", "/faults")  # an accepted fault would break later examples
    mock.state = mock.snapshot()


def test_the_examples_add_up_to_two_thousand_requests():
    assert sum(EXAMPLES.values()) >= 2000


# -- snapshots: one the mock takes in, it can serve ------------------------------------------

LISTS = [
    "/v1/products",
    "/v1/projects",
    "/v1/campaigns",
    "/v1/channels",
    "/v1/community-campaigns",
    "/v1/jobs",
    "/v1/webhook-subscriptions",
    "/v1/assets",
    "/v1/usage",
    "/v1/autopilot-runs",
    "/v1/discovery/configs",
    "/v1/viral-content",
    "/v1/capabilities",
    "/v1/projects/prj_acme_01/comments",
    "/v1/projects/prj_acme_01/transcript",
]


@st.composite
def broken_snapshot(draw: st.DrawFn, snapshot: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The snapshot with one node removed or given another type, somewhere that matters."""
    section = draw(st.sampled_from(sorted(snapshot)))
    paths = [p for p in node_paths(snapshot[section], (section,)) if len(p) <= 6]
    path = draw(st.sampled_from(paths))
    if len(path) > 1 and draw(st.booleans()):
        return remove(snapshot, path), f"removed {path}"
    return put(snapshot, path, draw(other_type(_at(snapshot, path)))), f"retyped {path}"


@settings(max_examples=60, **SETTINGS)
@given(data=st.data())
def test_a_snapshot_the_mock_takes_in_can_be_served(mock, data):
    mock.control.reset()
    mock.state = mock.snapshot()
    original = json.loads(mock.state[1])  # the state as GET /_mock/snapshot answered it
    broken, how = data.draw(broken_snapshot(original["snapshot"]))
    event(how.split(" ")[0])
    response = mock.control.http.put("/_mock/snapshot", json={"snapshot": broken})
    event(f"answered {response.status_code}")
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert mock.snapshot() == mock.state, how
    for path in LISTS:
        for key in ("owner", "globex"):
            answer = mock.api.get(path, key=key)
            assert answer.status_code < 500, (how, path, answer.text)
