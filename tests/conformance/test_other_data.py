"""The suite against deployments that hold other data than the bundled fixtures: no false failure.

Each deployment is the bundled mock serving fixtures this module makes from fixtures/default.yaml:
other workspace names, ids and keys, an empty workspace, long lists, a low balance, autopilots
whose daily cap is used up. The suite reaches it as it reaches a customer's deployment: with
``--base-url``, the keys the fixtures hold, ``--allow-spend``, and a receiver on loopback (a
private receiver, which the deployment must accept); never through the mock's control plane. The
test's ``sleep`` moves the mock's manual clock, so a wait takes no time.

The same ``sleep`` makes the deliveries that fell due, so the delivery checks judge here too.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from conformance.checks.webhooks import PRIVATE_RECEIVER
from conformance.checks.workflows import DAILY_LIMIT
from conformance.contract import bundled_document
from conformance.payment import NO_CREDITS
from conformance.results import Report
from conformance.skips import CAPABILITY_UNAVAILABLE
from mockserver.fixtures import WORKSPACE_FIELDS, load_fixtures
from mockserver.resources import default_fixtures_path
from tests.conformance.support import free_port, live_mock, run_quietly

FAMILIES = ["envelope", "auth", "pagination", "idempotency", "records", "workflows", "jobs",
            "webhooks", "limits"]  # fmt: skip
DELIVERIES = [
    "webhooks-callback-deliveries",
    "webhooks-subscription-deliveries",
    "webhooks-subscription-coverage",
]
RENAMES = (("acme", "umbra"), ("Acme", "Umbra"), ("globex", "zenith"), ("Globex", "Zenith"))

Change = Callable[[dict[str, Any]], None]


# -- fixtures of other content --------------------------------------------------------------------


def renamed(text: str) -> str:
    """Other workspace ids, slugs, names, record ids and keys (every mention renamed alike)."""
    for old, new in RENAMES:
        text = text.replace(old, new)
    return text


def emptied(data: dict[str, Any]) -> None:
    """The first workspace holds no records at all (no projects, channels, campaigns …)."""
    first = data["workspaces"][0]
    for name, value in first.items():
        if name not in WORKSPACE_FIELDS and isinstance(value, list):
            first[name] = []


def long_lists(count: int) -> Change:
    def change(data: dict[str, Any]) -> None:
        """The first workspace's projects, ``count`` of them (many pages)."""
        first = data["workspaces"][0]
        model = first["projects"][0]
        first["projects"] = [
            model | {"id": f"prj_many_{i:04d}", "title": f"Project {i}"} for i in range(count)
        ]

    return change


def balance(credits: int) -> Change:
    def change(data: dict[str, Any]) -> None:
        data["workspaces"][0]["credits"] = credits

    return change


def daily_cap_used(data: dict[str, Any]) -> None:
    """Every autopilot of the first workspace may make no more videos today."""
    for autopilot in data["workspaces"][0].get("autopilots") or []:
        autopilot["maxVideosPerDay"] = 0


@dataclass
class Keys:
    owner: str
    other: str
    lower: str


def keys_of(data: dict[str, Any]) -> Keys:
    """The owner and editor keys of the first workspace, and an owner key of the second."""

    def key(workspace: dict[str, Any], role: str) -> str:
        members = {name for name, m in workspace["members"].items() if m["role"] == role}
        return next(k["key"] for k in workspace["keys"] if k["member"] in members)

    first, second = data["workspaces"][:2]
    return Keys(key(first, "owner"), key(second, "owner"), key(first, "editor"))


def fixtures(tmp_path: Path, *changes: Change, rename: bool = False) -> tuple[Path, Keys]:
    data = copy.deepcopy(load_fixtures(default_fixtures_path()))
    for change in changes:
        change(data)
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    text = renamed(text) if rename else text
    path = tmp_path / f"fixtures-{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(text, encoding="utf-8")
    return path, keys_of(yaml.safe_load(text))


# -- running the suite as against a deployment ----------------------------------------------------


def run_against(
    path: Path, keys: Keys, *, private_callbacks: bool = True, receiver: bool = True, **options: Any
) -> Report:
    """The suite against the mock serving ``path``, reached as a deployment (``--base-url``)."""
    port = free_port()
    listen = {"receiver_listen": f"127.0.0.1:{port}", "receiver_url": f"http://127.0.0.1:{port}"}
    with live_mock(
        fixtures=path, rate_limit=100_000, allow_private_callbacks=private_callbacks
    ) as mock:

        def sleep(seconds: float) -> None:  # the deployment's time passes at once
            httpx.post(f"{mock.base_url}/_mock/clock/advance", json={"seconds": seconds})
            httpx.post(f"{mock.base_url}/_mock/deliveries/flush")  # and the deliveries due

        options = {"allow_spend": True, "webhook_wait": 30} | options
        return run_quietly(
            base_url=mock.base_url,
            api_key=keys.owner,
            second_key=keys.other,
            restricted_key=keys.lower,
            sleep=sleep,
            **(listen if receiver else {}),
            **options,
        )


def failures(report: Report) -> list[str]:
    return [f"{f.check}: {f.rule}: {f.message}" for f in report.failures]


def reasons(report: Report, check: str) -> set[str]:
    return set(report.result(check).skipped)


# -- what each kind of data showed ----------------------------------------------------------------


def test_an_empty_workspace_gets_a_project_of_its_own_and_skips_what_it_cannot_create(
    tmp_path: Path,
):
    path, keys = fixtures(tmp_path, emptied)
    report = run_against(
        path, keys, only=["auth-forbidden-role", "workflows-max-credits", "webhooks-url-policy"]
    )
    assert not failures(report), failures(report)
    # footage is filed under a project created for the check: both maxCredits rules judged
    assert report.result("workflows-max-credits").passed >= 3
    forbidden = reasons(report, "auth-forbidden-role")
    assert any(r.startswith("no connected account of this workspace is known") for r in forbidden)
    assert any("GET /v1/channels lists none" in r for r in forbidden), forbidden


def test_an_empty_workspace_without_allow_spend_says_a_project_is_missing(tmp_path: Path):
    # A deployment that accepts private urls (and no receiver of the run is private): the render
    # names a made-up project, so its 404 judges nothing; the subscription breaks the rule.
    path, keys = fixtures(tmp_path, emptied)
    report = run_against(
        path, keys, receiver=False, allow_spend=False, only=["webhooks-url-policy"]
    )
    policy = report.result("webhooks-url-policy")
    assert {f.subject for f in policy.failures} == {"createWebhookSubscription"}
    assert policy.skipped == {
        "no projectId of this workspace: GET /v1/projects lists none; creating one needs "
        "--allow-spend: POST /v1/video/render not judged": 2
    }


def test_too_few_credits_is_named_as_the_cause_never_a_failure(tmp_path: Path):
    path, keys = fixtures(tmp_path, balance(0))
    paid = ["jobs-status-closed-set", "idempotency-single-charge", *DELIVERIES]
    report = run_against(path, keys, only=["workflows-max-credits", *paid])
    assert not failures(report), failures(report)
    for check in paid:
        assert any(r.endswith(NO_CREDITS) for r in reasons(report, check)), check
        assert not any(CAPABILITY_UNAVAILABLE in r for r in reasons(report, check)), check
    assert f"{NO_CREDITS}: footage-at-cap not judged" in reasons(report, "workflows-max-credits")


def test_a_url_refused_for_want_of_credits_is_no_breach_of_the_url_policy(tmp_path: Path):
    # The deployment accepts private urls (and no receiver of the run is private): the paid
    # render answers 402 before its url is looked at, an order the document leaves open; the
    # subscription, which costs nothing, breaks the rule.
    path, keys = fixtures(tmp_path, balance(0))
    report = run_against(path, keys, receiver=False, only=["webhooks-url-policy"])
    policy = report.result("webhooks-url-policy")
    assert {f.subject for f in policy.failures} == {"createWebhookSubscription"}
    assert policy.skipped == {
        f"{NO_CREDITS}: POST /v1/video/render refused before its url was judged": 2
    }


def test_a_private_receiver_leaves_the_private_url_rules_unjudged(tmp_path: Path):
    path, keys = fixtures(tmp_path)
    report = run_against(path, keys, only=["webhooks-url-policy"])
    assert not failures(report), failures(report)
    policy = report.result("webhooks-url-policy")
    [reason] = policy.skipped
    receiver = reason.split("--receiver-url ")[1].split(" ")[0]
    assert reason == PRIVATE_RECEIVER.format(url=receiver, why="plain http")
    assert policy.skipped[reason] == 6  # three urls on each of two operations
    assert policy.passed == 1  # the short callbackSecret is still judged


def test_without_a_private_receiver_a_deployment_accepting_private_urls_fails(tmp_path: Path):
    path, keys = fixtures(tmp_path)
    report = run_against(path, keys, receiver=False, only=["webhooks-url-policy"])
    assert {f.rule for f in report.result("webhooks-url-policy").failures} == {"refused"}


def test_a_daily_cap_used_up_is_not_a_pause(tmp_path: Path):
    path, keys = fixtures(tmp_path, daily_cap_used)
    report = run_against(path, keys, only=["workflows-autopilot-paused"])
    assert not failures(report), failures(report)
    result = report.result("workflows-autopilot-paused")
    # the cap raised for one more try: enabled again, the manual run is judged
    assert result.status == "passed" and not any("daily cap" in r for r in result.skipped)


def test_a_daily_cap_that_cannot_be_raised_is_skipped_naming_it(tmp_path: Path):
    document = bundled_document()
    cap = document["components"]["schemas"]["AutopilotSave"]["properties"]["maxVideosPerDay"]
    cap.pop("allOf")  # no stated maximum: the cap cannot be raised
    path, keys = fixtures(tmp_path, daily_cap_used)
    report = run_against(path, keys, only=["workflows-autopilot-paused"], document=document)
    assert not failures(report), failures(report)
    [limit] = [r for r in reasons(report, "workflows-autopilot-paused") if "daily cap" in r]
    channel = limit.removeprefix("the autopilot of ").split(" ")[0]
    assert limit == f"{DAILY_LIMIT.format(channel=channel)}: enabled-manual-run not judged"


@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    phases=[Phase.generate],  # a failing variant is reported as drawn, not shrunk (each is a run)
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    rename=st.booleans(),
    records=st.sampled_from(["bundled", "empty", "long"]),
    credits=st.sampled_from([None, 0, 70]),
    cap_used=st.booleans(),
)
def test_no_failure_whatever_the_data(
    tmp_path: Path, rename: bool, records: str, credits: int | None, cap_used: bool
):
    changes = {"bundled": [], "empty": [emptied], "long": [long_lists(150)]}[records]
    changes += [balance(credits)] if credits is not None else []
    changes += [daily_cap_used] if cap_used else []
    path, keys = fixtures(tmp_path, *changes, rename=rename)
    report = run_against(path, keys, only=FAMILIES)
    assert not failures(report), failures(report)
