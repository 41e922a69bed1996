"""One request journal for every process on a PostgreSQL store.

Two ``mockserver`` processes share a fresh schema of a real PostgreSQL server
(tests/support/postgres.py; without one the tests skip with the reason, under CI that is a
failure). Requests go to either process; ``GET /_mock/requests`` on either shows them all, in
the order they were answered, pages with ``after`` across them, and keeps the newest 1,000 of
a world. Every control-plane answer is checked against the control document.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from conformance.mockprocess import MockProcess
from tests.store.process import running
from tests.support.control_check import CheckedControl
from tests.support.postgres import fresh_schema_url, required_server_url

OWNER = {"Authorization": "Bearer sk_test_acme_owner"}
BOUND = 1000  # the journal's bound per world (the control document: newest 1,000)


@pytest.fixture(scope="module")
def database() -> str:
    return required_server_url()


@pytest.fixture
def pair(database: str) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """Clients of two mock processes on one fresh schema of the database, the journal
    emptied of their readiness probes."""
    url = fresh_schema_url()
    args = ("--store", url, "--clock", "manual", "--rate-limit", "100000")
    with running(*args) as first, running(*args) as second:
        clients = _client(first), _client(second)
        CheckedControl(clients[0]).call("POST", "/reset")
        yield clients


def _client(process: MockProcess) -> httpx.Client:
    return httpx.Client(base_url=process.base_url, timeout=30)


def send(clients: tuple[httpx.Client, ...], count: int, path: str = "/v1/channels") -> list[str]:
    """``count`` requests, one after another, to each client in turn: their request ids."""
    ids = []
    for n in range(count):
        answer = clients[n % len(clients)].get(path, headers=OWNER)
        assert answer.status_code == 200, answer.text
        ids.append(answer.headers["x-request-id"])
    return ids


def journal(client: httpx.Client, **params: object) -> dict:
    return CheckedControl(client).call("GET", "/requests", **params)


def test_either_process_shows_every_process_requests_in_answer_order(pair):
    a, b = pair
    sent = send((a, b), 6)
    for reader in (a, b):
        shown = journal(reader)
        assert [e["requestId"] for e in shown["requests"]] == sent
        seqs = [e["seq"] for e in shown["requests"]]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        assert shown["latestSeq"] == seqs[-1] and shown["oldestSeq"] == seqs[0]
        assert all(e["keyId"] and e["status"] == 200 for e in shown["requests"])


def test_after_pages_across_processes(pair):
    """A poller (the inspector) asks each time for what came after the last entry it saw,
    from whichever process answers the poll."""
    a, b = pair
    after, seen, sent = 0, [], []
    for turn in range(6):
        sent += send(((a, b), (b,), (a,))[turn % 3], turn + 1)
        shown = journal((b, a)[turn % 2], after=after)["requests"]
        assert all(e["seq"] > after for e in shown)
        seen += [e["requestId"] for e in shown]
        after = shown[-1]["seq"]
    assert seen == sent
    assert journal(a, after=after)["requests"] == []


def test_a_reset_on_one_process_empties_the_journal_for_both_and_numbering_goes_on(pair):
    a, b = pair
    send((a, b), 3)
    latest = journal(b)["latestSeq"]
    CheckedControl(a).call("POST", "/reset")
    for reader in (a, b):
        shown = journal(reader)
        assert shown["requests"] == []
        assert shown["latestSeq"] == latest and shown["oldestSeq"] == latest + 1
    again = send((b,), 1)
    shown = journal(a)
    assert [e["requestId"] for e in shown["requests"]] == again
    assert shown["requests"][0]["seq"] > latest


def test_the_shared_journal_keeps_the_newest_thousand_of_a_world(pair):
    a, b = pair
    gone = send((a, b), 15, "/v1/products")
    sent = gone + send((b, a), BOUND)
    for reader in (a, b):
        shown = journal(reader, limit=BOUND)
        ids = [e["requestId"] for e in shown["requests"]]
        assert ids == sent[-BOUND:], "the newest 1,000, oldest first"
        assert shown["oldestSeq"] == shown["requests"][0]["seq"]
        assert shown["latestSeq"] == shown["requests"][-1]["seq"]
        past = journal(reader, operationId="listProducts")
        assert past["requests"] == [], "what is past the bound is gone, whatever the filter"


def test_bodies_come_back_from_the_store_shown_as_the_in_process_journal_shows_them(pair):
    """The bytes kept in the store are rendered as the in-process journal renders them: a body
    nested too deep, one sent with a Content-Encoding, and one not UTF-8 are shown only as why
    and their size; a JSON body as its JSON."""
    a, b = pair
    deep = b"[" * 1100 + b"]" * 1100
    bodies = [
        (a, deep, {}),
        (b, b"\x1f\x8b\x08\x00binary", {"Content-Encoding": "gzip"}),
        (a, b'{"name": "\xff"}', {}),
        (b, b'{"name": "shown"}', {}),
    ]
    for client, body, headers in bodies:
        answer = client.post(
            "/v1/products",
            content=body,
            headers={**OWNER, "Content-Type": "application/json", **headers},
        )
        assert answer.status_code < 500, answer.text
    for reader in (a, b):
        shown = [e["requestBody"] for e in journal(reader)["requests"]]
        sizes = [len(body) for _, body, _ in bodies]
        assert shown[0]["omitted"].startswith("nested deeper than")
        assert shown[0]["bytes"] == sizes[0]
        assert shown[1] == {"omitted": "sent with Content-Encoding: gzip", "bytes": sizes[1]}
        assert shown[2] == {"omitted": "not JSON", "bytes": sizes[2]}
        assert shown[3] == {"name": "shown"}


def test_a_sandbox_has_its_own_shared_journal(pair):
    a, b = pair
    made = CheckedControl(a).call("POST", "/sandboxes")["sandbox"]
    key = next(k["key"] for k in made["keys"] if k["role"] == "owner")
    auth = {"Authorization": f"Bearer {key}"}
    in_sandbox = [
        client.get("/v1/channels", headers=auth).headers["x-request-id"] for client in (b, a)
    ]
    outside = send((a,), 1)
    assert [e["requestId"] for e in journal(a)["requests"]] == outside
    sandbox_journal = CheckedControl(b).call("GET", "/requests", sandbox=made["id"])
    assert [e["requestId"] for e in sandbox_journal["requests"]] == in_sandbox


def test_requests_answered_together_are_each_journalled_once(pair):
    """Many requests at once on both processes (those a process answers in one turn of its
    loop are written together, in the same round trip as the catch-up and rate counts of the
    requests that arrived in it): every one is shown once, from either process, and each was
    counted once in the caller's one bucket."""
    a, b = pair
    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(
            pool.map(lambda n: (a, b)[n % 2].get("/v1/channels", headers=OWNER), range(64))
        )
    sent = {answer.headers["x-request-id"] for answer in answers}
    remaining = sorted(int(answer.headers["x-ratelimit-remaining"]) for answer in answers)
    assert remaining == list(range(remaining[0], remaining[0] + len(answers)))
    for reader in (a, b):
        shown = journal(reader, limit=BOUND)["requests"]
        assert sorted(e["requestId"] for e in shown) == sorted(sent)
        assert [e["seq"] for e in shown] == sorted({e["seq"] for e in shown})
