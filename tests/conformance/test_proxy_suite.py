"""Proven with the suite's run as the traffic: ``conformance run`` against the bundled mock,
through ``conformance proxy`` (a real process; the mock's control plane reached through it
too, as ``--mock-url`` does).

* A faithful mock gives no deployment finding: the proxy makes no false finding. (Client
  findings it does make: the suite's negative tests break the contract on purpose.)
* Each broken mock of ``tests/defects`` whose broken rule the traffic shows is found passively,
  by a deployment finding of the check named in :data:`FOUND_BY` (the suite's own check, unless
  the traffic shows the break to another of its rules). :data:`PASSIVE_BLIND` lists the others,
  each with why a passive judge cannot find it; a defect listed there must stay unfound, so the
  table cannot go stale.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.defects import DEFECTS, Defect
from tests.conformance.proxying import Proxy
from tests.conformance.support import live_mock, run_quietly

OPTIONS = ("--profile", "full", "--fail-on", "deployment")

#: Where the proxy names another check than the suite's (the rule the traffic shows).
FOUND_BY = {
    "forbidden-instead-of-unauthorized": "schema-responses",  # 403 where 401 is documented
    "limit-not-enforced": "schema-negative",  # an out-of-bounds limit accepted
    "openapi-needs-key": "schema-responses",  # 401 on an operation that documents none
    "rate-limited-without-retry-after": "rate-limit-retry-after",
    "secret-echoed": "schema-responses",  # a writeOnly secret in a response body
    "short-callback-secret-accepted": "schema-negative",  # a too-short secret accepted
    "validation-answers-422": "schema-responses",  # 422 is not a documented status
    "unconnected-account-accepted": "schema-responses",
    "qa-failed-artifacts": "schema-responses",
    "job-status-outside-set": "jobs-status-closed-set",
    "malformed-key-answers-400": "schema-responses",
    "unknown-key-answers-404": "schema-responses",
    "server-error-on-film-format": "schema-server-errors",
    "offset-wins-over-cursor": "pagination-walk",  # the offset's page repeats the walk's records
    "job-events-out-of-order": "pagination-ordered-streams",  # events not in sequence order
    # one key answered with different ids: the replay judge sees the overlap's second execution
    "overlapping-retries-execute": "idempotency-replay",
}

_STATE = (
    "the rule is about state the interface does not show in one exchange or a sequence the "
    "proxy models ({})"
)
_BALANCE = (
    "a charge shows only as a change of the balance between two reads, and other calls of the "
    "workspace (other clients, live prices) move it too: no exchange ties a charge to one call"
)
_OWNER = "whose workspace a key, a slug or a resource belongs to is not in the traffic"
_WEBHOOK = (
    "a delivery goes from the deployment to the receiver, not through the API proxy: the "
    "webhook relay (--relay-to) is what sees it"
)
_OUTSIDE = "the world changed through the mock's control plane in a way the interface never shows"

#: The defects the traffic cannot show to a passive judge, and why.
PASSIVE_BLIND = {
    "tampered-cursor-accepted": "a cursor the proxy never saw issued cannot be told from one "
    "issued before it started, or forgotten by its bounded memory",
    "deprecated-after-refused": "an `after` the deployment never issued is an unusable cursor, "
    "rightly refused with 400: a refused deprecation and a refused value read alike",
    "workspace-slug-ignored": _OWNER,
    "cross-workspace-readable": _OWNER,
    "unowned-project-filed": _OWNER,
    "bucket-per-key": "which keys belong to one person is not in the traffic",
    "other-key-not-paused": "which keys belong to one person is not in the traffic",
    "usage-needs-spend": "what a key may do (its role) is not in the traffic",
    "replay-charges-twice": _BALANCE,
    "overlapping-charges-lost": _BALANCE,
    "refused-call-charged": _BALANCE,
    "charge-differs-from-quote": _BALANCE,
    "capabilities-billed": _BALANCE,
    "remix-priced-flat": _BALANCE,
    "signature-over-reserialised-body": _WEBHOOK,
    "uppercase-signature-hex": _WEBHOOK,
    "delivery-timestamp-without-z": _WEBHOOK,
    "new-event-id-on-retry": _WEBHOOK,
    "retry-after-400": _WEBHOOK,
    "render-delivered-to-subscriptions": _WEBHOOK,
    "unavailable-capability-served": "the proxy does not know which operations a capability "
    "name covers, nor whether it became available again between the read and the call",
    "revocation-ignored": _OUTSIDE + " (a key revoked)",
    "outage-answers-401": _OUTSIDE + " (the credential store made unreachable): a 401 for a "
    "valid key reads like a 401 for an unknown one",
    "openapi-rate-limited": "whether a read was counted shows only against the next reads of "
    "the same bucket, which other clients share",
    "no-payload-limit": "the body over the size limit is longer than the proxy keeps for "
    "judging (1 MiB): it is forwarded whole and left unjudged",
    "deprecations-unmarked": "the published document is compared with the contract only by "
    "the suite's own read (schema-published-document)",
    "default-not-applied": _STATE.format("what a create left out, against the record it made"),
    "classification-drifts": _STATE.format("the same input answered the same over time"),
    "paused-autopilot-runs": _STATE.format("an autopilot paused"),
    "stale-generation-accepted": _STATE.format("a generation moved on"),
    "max-credits-ignored": _STATE.format("the live price against maxCredits"),
    "stale-word-cursor-served": _STATE.format("a composition changed"),
    "legacy-cursor-accepted": _STATE.format("when a cursor was issued, before the store switch"),
    "partial-update-clears-unsent": _STATE.format("the fields a PATCH left alone"),
    "channel-patch-resets-unsent": _STATE.format("the fields a PATCH left alone"),
    "products-none-as-empty": _STATE.format("what a create sent, against what it kept"),
    "forbidden-as-not-found": _STATE.format("the governance lock of a workspace"),
}


def test_a_faithful_mock_behind_the_proxy_gives_no_deployment_finding(tmp_path: Path):
    with live_mock() as mock, Proxy(mock.base_url, tmp_path, *OPTIONS) as proxy:
        report = run_quietly(mock_url=proxy.url)
    assert report.exit_code == 0, report.failed_checks()
    assert proxy.status == 0, proxy.output
    seen = proxy.report
    wrong = [f["message"] for f in seen["findings"] if f["side"] == "deployment"]
    assert seen["totals"]["deployment"] == 0, wrong[:5]
    assert seen["totals"]["client"] > 0  # the suite's negative requests, on purpose
    assert seen["exchanges"] >= report.requests
    assert seen["rules"]["judged"] >= 100  # the traffic judged most of what it can show


def _ids(defects: list[Defect]) -> list[str]:
    return [d.name for d in defects]


def test_the_tables_name_known_defects():
    names = {d.name for d in DEFECTS}
    assert set(PASSIVE_BLIND) <= names and set(FOUND_BY) <= names
    assert not set(PASSIVE_BLIND) & set(FOUND_BY)


@pytest.mark.parametrize("defect", DEFECTS, ids=_ids(DEFECTS))
def test_a_defect_the_traffic_shows_is_found_passively(defect: Defect, tmp_path: Path):
    with (
        live_mock(defects=[defect.name]) as mock,
        Proxy(mock.base_url, tmp_path, *OPTIONS) as proxy,
    ):
        run_quietly(mock_url=proxy.url, only=list(defect.only), max_requests=400)
    found = {f["rule"] for f in proxy.report["findings"] if f["side"] == "deployment"}
    if defect.name in PASSIVE_BLIND:
        assert not found, f"found passively ({found}): take it out of PASSIVE_BLIND"
    else:
        assert FOUND_BY.get(defect.name, defect.check) in found, found
