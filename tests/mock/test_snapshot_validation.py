"""PUT /_mock/snapshot takes what GET answers, and refuses whole a snapshot it could not serve.

A refused snapshot answers ``400 invalid_request`` with ``details.reason`` ``invalid_snapshot``
and ``details.errors`` (``path``, a JSON Pointer into the snapshot, and ``message``); the state
is then exactly what it was. A snapshot that is taken in must be servable: every read of the
API answers without a 5xx. So every record is checked for what its area reads, against the API
contract's own schemas where the area serves it as stored (``SnapshotCollections`` in the
control plane's document), and a snapshot taken after a walk through the whole API is taken back.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

import jsonschema_rs
import pytest

from mockserver.contract import default_contract
from mockserver.control.handlers import SNAPSHOT_CHECK
from mockserver.control.plane import control_contract
from mockserver.control.snapshots import SnapshotCheck
from tests.mock.test_every_operation import (
    test_every_operation_answers_a_valid_request as walk_every_operation,
)
from tests.support.client import ApiClient, ControlClient

# Loopback is allowed by the test mock, and nothing listens there: deliveries fail fast.
CALLBACK_URL = "https://127.0.0.1:9/callback"
SECRET = "snapshot-secret-" + "s" * 24

State = dict[str, Any]


def get_snapshot(control: ControlClient) -> dict[str, Any]:
    return control.call("GET", "/snapshot")


def put_snapshot(control: ControlClient, body: Any):
    return control.http.request("PUT", "/_mock/snapshot", json=body, headers=control.headers)


def first_key(state: State, workspace: str = "ws_acme") -> str:
    return next(d for d, k in state["keys"].items() if k["workspace"] == workspace)


# -- the envelope ------------------------------------------------------------------------------


def test_get_then_put_round_trips(api, control):
    api.post("/v1/products", json={"name": "Kept"})
    before = get_snapshot(control)
    assert before["success"] is True and set(before) == {"success", "snapshot"}
    response = put_snapshot(control, before)
    assert response.status_code == 200, response.text
    assert get_snapshot(control) == before
    assert "Kept" in {p["name"] for p in api.walk("/v1/products", "products")}


def test_success_is_optional_and_the_snapshot_is_required(api, control):
    before = get_snapshot(control)
    assert put_snapshot(control, {"snapshot": before["snapshot"]}).status_code == 200
    assert get_snapshot(control) == before
    bare = put_snapshot(control, before["snapshot"])  # the state without its envelope
    assert bare.status_code == 400 and bare.json()["code"] == "invalid_request"
    assert "/snapshot" in {e["path"] for e in bare.json()["details"]["errors"]}
    assert get_snapshot(control) == before


def test_the_get_body_matches_the_documented_envelope(api, control):
    document = control_contract().document
    schema = document["paths"]["/_mock/snapshot"]["get"]["responses"]["200"]["content"][
        "application/json"
    ]["schema"]
    validator = jsonschema_rs.Draft202012Validator(
        {**schema, "components": document["components"]}, validate_formats=True
    )
    assert [e.message for e in validator.iter_errors(get_snapshot(control))] == []


# -- broken snapshots ------------------------------------------------------------------------

Break = Callable[[State], str]  # changes a state; answers the JSON Pointer the refusal names


def without_members(state: State) -> str:
    del state["workspaces"]["ws_acme"]["members"]
    return "/workspaces/ws_acme/members"


def without_credits(state: State) -> str:
    del state["workspaces"]["ws_acme"]["credits"]
    return "/workspaces/ws_acme/credits"


def credits_a_string(state: State) -> str:
    state["workspaces"]["ws_acme"]["credits"] = "10000"
    return "/workspaces/ws_acme/credits"


def key_of_a_missing_workspace(state: State) -> str:
    digest = first_key(state)
    state["keys"][digest]["workspace"] = "ws_nowhere"
    return f"/keys/{digest}/workspace"


def key_of_a_missing_member(state: State) -> str:
    digest = first_key(state)
    state["keys"][digest]["member"] = "mallory"
    return f"/keys/{digest}/member"


def key_of_a_member_of_another_workspace(state: State) -> str:
    digest = first_key(state, "ws_globex")
    state["keys"][digest]["member"] = "alice"  # alice is of acme, not globex
    return f"/keys/{digest}/member"


def record_under_another_id(state: State) -> str:
    products = state["workspaces"]["ws_acme"]["collections"]["products"]
    record_id = next(iter(products))
    products[record_id]["id"] = "prd_someone_else"
    return f"/workspaces/ws_acme/collections/products/{record_id}/id"


def record_without_seq(state: State) -> str:
    products = state["workspaces"]["ws_acme"]["collections"]["products"]
    record_id = next(iter(products))
    del products[record_id]["_seq"]
    return f"/workspaces/ws_acme/collections/products/{record_id}/_seq"


def record_beyond_seq(state: State) -> str:
    campaigns = state["workspaces"]["ws_acme"]["collections"]["campaigns"]
    record_id = next(iter(campaigns))
    campaigns[record_id]["_seq"] = state["seq"] + 1
    return f"/workspaces/ws_acme/collections/campaigns/{record_id}/_seq"


def records_out_of_order(state: State) -> str:
    products = state["workspaces"]["ws_acme"]["collections"]["products"]
    first, second = list(products)[:2]
    products[first]["_seq"], products[second]["_seq"] = (
        products[second]["_seq"],
        products[first]["_seq"],
    )
    return f"/workspaces/ws_acme/collections/products/{second}/_seq"


def collection_not_an_object(state: State) -> str:
    state["workspaces"]["ws_acme"]["collections"]["products"] = []
    return "/workspaces/ws_acme/collections/products"


def capabilities_not_an_object(state: State) -> str:
    state["capabilities"] = []
    return "/capabilities"


def area_section_not_an_object(state: State) -> str:
    state["deliveries"] = "none"
    return "/deliveries"


def without_workspaces(state: State) -> str:
    del state["workspaces"]
    return "/workspaces"


def bad_clock(state: State) -> str:
    state["clock"] = "yesterday"
    return "/clock"


def clock_not_in_utc(state: State) -> str:
    state["clock"] = "2026-11-20T10:00:00+01:00"
    return "/clock"


def workspace_under_another_id(state: State) -> str:
    state["workspaces"]["ws_globex"]["id"] = "ws_other"
    return "/workspaces/ws_globex/id"


def member_with_an_unknown_role(state: State) -> str:
    state["workspaces"]["ws_acme"]["members"]["erin"]["role"] = "superuser"
    return "/workspaces/ws_acme/members/erin/role"


def member_under_another_name(state: State) -> str:
    state["workspaces"]["ws_acme"]["members"]["erin"]["name"] = "erina"
    return "/workspaces/ws_acme/members/erin/name"


def governance_without_kill_switch(state: State) -> str:
    del state["workspaces"]["ws_acme"]["governance"]["killSwitch"]
    return "/workspaces/ws_acme/governance/killSwitch"


def negative_counter(state: State) -> str:
    state["counters"]["prd"] = -1
    return "/counters/prd"


def idempotency_of_a_missing_workspace(state: State) -> str:
    state["idempotency"]["ws_nowhere"] = {}
    return "/idempotency/ws_nowhere"


def delivery_of_a_missing_workspace(state: State) -> str:
    delivery = next(iter(state["deliveries"].values()))
    delivery["workspaceId"] = "ws_nowhere"
    return f"/deliveries/{delivery['id']}/workspaceId"


def capability_without_price(state: State) -> str:
    del state["capabilities"]["script"]["price"]
    return "/capabilities/script/price"


def campaign_title_not_a_string(state: State) -> str:
    """Served as stored: held to the contract's ``Campaign``."""
    state["workspaces"]["ws_acme"]["collections"]["campaigns"]["cmp_acme_001"]["title"] = {}
    return "/workspaces/ws_acme/collections/campaigns/cmp_acme_001/title"


def community_campaign_name_not_a_string(state: State) -> str:
    """Read by both campaign views (``name`` is the general view's ``title``)."""
    campaign = state["workspaces"]["ws_acme"]["collections"]["communityCampaigns"]["cmp_acme_037"]
    campaign["name"] = {}
    return "/workspaces/ws_acme/collections/communityCampaigns/cmp_acme_037/name"


def general_record_without_its_community_campaign(state: State) -> str:
    state["workspaces"]["ws_acme"]["collections"]["campaigns"]["cmp_acme_001"]["source"] = (
        "community"
    )
    return "/workspaces/ws_acme/collections/campaigns/cmp_acme_001/source"


def project_without_media_type(state: State) -> str:
    del state["workspaces"]["ws_acme"]["collections"]["projects"]["prj_acme_01"]["mediaType"]
    return "/workspaces/ws_acme/collections/projects/prj_acme_01/mediaType"


def product_created_in_a_leap_second(state: State) -> str:
    """A date-time the contract's pattern allows and the mock cannot read."""
    products = state["workspaces"]["ws_acme"]["collections"]["products"]
    record_id = next(iter(products))
    products[record_id]["createdAt"] = "2026-12-31T23:59:60Z"
    return f"/workspaces/ws_acme/collections/products/{record_id}/createdAt"


def community_schedule_in_an_unknown_time_zone(state: State) -> str:
    campaign = state["workspaces"]["ws_acme"]["collections"]["communityCampaigns"]["cmp_acme_037"]
    campaign["schedule"]["timezone"] = "Mars/Olympus_Mons"
    return "/workspaces/ws_acme/collections/communityCampaigns/cmp_acme_037/schedule/timezone"


def community_cycle_before_creation(state: State) -> str:
    campaign = state["workspaces"]["ws_acme"]["collections"]["communityCampaigns"]["cmp_acme_037"]
    campaign["_nextCycleAt"] = 0
    return "/workspaces/ws_acme/collections/communityCampaigns/cmp_acme_037/_nextCycleAt"


def autopilot_run_count_with_a_fraction(state: State) -> str:
    runs = state["workspaces"]["ws_acme"]["collections"]["autopilotRuns"]
    run_id = next(iter(runs))
    runs[run_id]["videosRequested"] = float(runs[run_id]["videosRequested"])
    return f"/workspaces/ws_acme/collections/autopilotRuns/{run_id}/videosRequested"


def discovery_config_of_an_unknown_source(state: State) -> str:
    configs = state["workspaces"]["ws_acme"]["collections"]["discoveryConfigs"]
    config_id = next(iter(configs))
    configs[config_id]["sources"][0] = "carrier-pigeon"
    return f"/workspaces/ws_acme/collections/discoveryConfigs/{config_id}/sources/0"


def job_kind_without_settings(state: State) -> str:
    del state["fixtures"]["jobs"]["kinds"]["render"]
    return "/fixtures/jobs/kinds/render"


def hook_without_views(state: State) -> str:
    del state["fixtures"]["hooks"][0]["views"]
    return "/fixtures/hooks/0/views"


def kept_answer_not_json(state: State) -> str:
    key, entry = next(iter(state["idempotency"]["ws_acme"].items()))
    entry["body"] = "{not json"
    return f"/idempotency/ws_acme/{key}/body"


BREAKS: list[Break] = [
    without_members,
    without_credits,
    credits_a_string,
    key_of_a_missing_workspace,
    key_of_a_missing_member,
    key_of_a_member_of_another_workspace,
    record_under_another_id,
    record_without_seq,
    record_beyond_seq,
    records_out_of_order,
    collection_not_an_object,
    capabilities_not_an_object,
    area_section_not_an_object,
    without_workspaces,
    bad_clock,
    clock_not_in_utc,
    workspace_under_another_id,
    member_with_an_unknown_role,
    member_under_another_name,
    governance_without_kill_switch,
    negative_counter,
    idempotency_of_a_missing_workspace,
    delivery_of_a_missing_workspace,
    capability_without_price,
    campaign_title_not_a_string,
    community_campaign_name_not_a_string,
    general_record_without_its_community_campaign,
    project_without_media_type,
    product_created_in_a_leap_second,
    community_schedule_in_an_unknown_time_zone,
    community_cycle_before_creation,
    autopilot_run_count_with_a_fraction,
    discovery_config_of_an_unknown_source,
    job_kind_without_settings,
    hook_without_views,
    kept_answer_not_json,
]


def queue_a_delivery(api: ApiClient, control: ControlClient) -> None:
    """A render with a callback, decided at once: the deliveries section gets a record."""
    body = {"projectId": "prj_acme_01", "story": "A fox learns to fly."}
    body |= {"callbackUrl": CALLBACK_URL, "callbackSecret": SECRET}
    job = api.post("/v1/video/render", json=body).json()["job"]
    control.call("POST", f"/jobs/{job['id']}/outcome", {"status": "done", "immediately": True})
    control.call("POST", "/deliveries/flush", {"timeoutSeconds": 10})  # its first attempt made
    assert get_snapshot(control)["snapshot"]["deliveries"]


@pytest.mark.parametrize("break_", BREAKS, ids=lambda f: f.__name__)
def test_a_broken_snapshot_is_refused_and_the_state_kept(api, control, break_):
    api.post("/v1/products", json={"name": "Kept"})
    if break_ is delivery_of_a_missing_workspace:
        queue_a_delivery(api, control)
    if break_ is kept_answer_not_json:
        kept = api.post("/v1/projects", json={"title": "Kept"}, headers={"Idempotency-Key": "k"})
        assert kept.status_code == 200, kept.text
    before = get_snapshot(control)
    broken = copy.deepcopy(before)
    path = break_(broken["snapshot"])

    response = put_snapshot(control, broken)

    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "invalid_request" and body["details"]["reason"] == "invalid_snapshot"
    errors = body["details"]["errors"]
    assert all(set(e) == {"path", "message"} and e["message"] for e in errors), errors
    assert path in {e["path"] for e in errors}, errors
    assert get_snapshot(control) == before
    for list_path in ("/v1/products", "/v1/campaigns"):
        assert api.get(list_path).status_code == 200
    assert "Kept" in {p["name"] for p in api.walk("/v1/products", "products")}


def test_every_error_is_reported_at_once(api, control):
    before = get_snapshot(control)
    broken = copy.deepcopy(before)
    paths = {without_members(broken["snapshot"]), bad_clock(broken["snapshot"])}
    response = put_snapshot(control, broken)
    assert response.status_code == 400
    assert paths <= {e["path"] for e in response.json()["details"]["errors"]}


def test_a_record_without_what_its_area_reads_is_refused(api, control):
    """A job without its status: the jobs ticker reads every job's status, so it is refused
    before anything is replaced."""
    before = get_snapshot(control)
    broken = copy.deepcopy(before)
    state = broken["snapshot"]
    state["seq"] += 1
    jobs = state["workspaces"]["ws_acme"]["collections"].setdefault("jobs", {})
    jobs["job_bare"] = {"id": "job_bare", "_seq": state["seq"]}

    response = put_snapshot(control, broken)

    assert response.status_code == 400, response.text
    assert response.json()["details"]["reason"] == "invalid_snapshot"
    paths = {e["path"] for e in response.json()["details"]["errors"]}
    assert "/workspaces/ws_acme/collections/jobs/job_bare/status" in paths
    assert get_snapshot(control) == before
    assert api.get("/v1/jobs").status_code == 200


def test_a_snapshot_the_mock_cannot_take_in_changes_nothing(api, control, mock_app, monkeypatch):
    """Should taking in a checked snapshot still fail, the state before the PUT is put back."""
    before = get_snapshot(control)
    restore = type(mock_app.runtime).restore

    def failing_restore(runtime: Any, data: dict[str, Any]) -> None:
        restore(runtime, data)  # the world is replaced, then the failure
        raise RuntimeError("taking it in failed")

    monkeypatch.setattr(type(mock_app.runtime), "restore", failing_restore)
    changed = copy.deepcopy(before)
    changed["snapshot"]["workspaces"]["ws_acme"]["credits"] = 1

    response = put_snapshot(control, changed)

    assert response.status_code == 400, response.text
    assert response.json()["details"]["reason"] == "invalid_snapshot"
    monkeypatch.undo()
    assert get_snapshot(control) == before
    assert api.get("/v1/capabilities").json()["balance"]["credits"] == 10000


# -- a restored snapshot can be served -------------------------------------------------------


def list_operations() -> list[str]:
    """Every GET of the API without path parameters (the lists, and the reads of one thing)."""
    return sorted(
        op.path
        for op in default_contract().operations.values()
        if op.method == "GET" and "{" not in op.path
    )


def read_all(api: ApiClient, path: str, key: str) -> list[dict[str, Any]]:
    """Every page of a GET (following nextCursor); each answer is 200."""
    pages, params = [], {}
    while True:
        response = api.get(path, key=key, params=params)
        assert response.status_code == 200, (path, key, response.text)
        page = response.json()
        pages.append(page)
        if not page.get("nextCursor"):
            return pages
        params = {"cursor": page["nextCursor"]}


def test_a_restored_snapshot_serves_every_list(api, control):
    assert api.post("/v1/products", json={"name": "Lived in"}).status_code == 200
    subscription = api.post(
        "/v1/webhook-subscriptions",
        json={"url": CALLBACK_URL, "events": ["job.failed"], "secret": SECRET},
        headers={"Idempotency-Key": "snapshot-walk"},
    )
    assert subscription.status_code == 200, subscription.text
    queue_a_delivery(api, control)
    running = {"projectId": "prj_acme_02", "story": "Still running."}
    assert api.post("/v1/video/render", json=running).status_code == 200
    control.advance(60)
    taken = get_snapshot(control)
    control.reset()

    assert put_snapshot(control, taken).status_code == 200

    state = taken["snapshot"]
    for key in ("owner", "globex"):
        for path in list_operations():
            read_all(api, path, key)
    jobs = state["workspaces"]["ws_acme"]["collections"]["jobs"]
    for job_id in jobs:
        assert api.get(f"/v1/jobs/{job_id}").status_code == 200
        assert api.get(f"/v1/jobs/{job_id}/events").status_code == 200
    for project_id in state["workspaces"]["ws_acme"]["collections"]["projects"]:
        read_all(api, f"/v1/projects/{project_id}/comments", "owner")
    for domain in state["fixtures"]["catalog"]["domains"]:
        read_all(api, f"/v1/video/catalog/{domain}", "owner")
    assert control.call("GET", "/deliveries")["deliveries"]


def test_a_snapshot_taken_after_the_whole_api_walk_is_taken_back(api, control):
    """Every collection and section the API fills, in the shapes the areas write them: the
    checks accept all of it, and the restored state serves every list."""
    walk_every_operation(api, control)
    taken = get_snapshot(control)
    control.reset()

    response = put_snapshot(control, taken)

    assert response.status_code == 200, response.text
    assert get_snapshot(control)["snapshot"]["workspaces"] == taken["snapshot"]["workspaces"]
    for key in ("owner", "globex"):
        for path in list_operations():
            read_all(api, path, key)


def test_a_default_snapshot_checks_in_well_under_100_ms(control):
    snapshot = get_snapshot(control)["snapshot"]
    timings = []
    for _ in range(5):
        started = time.perf_counter()
        assert SNAPSHOT_CHECK.problems(snapshot) == []
        timings.append(time.perf_counter() - started)
    assert min(timings) < 0.1, timings


def test_a_contract_mark_that_names_nothing_fails_at_start_up():
    document = copy.deepcopy(control_contract().document)
    project = document["components"]["schemas"]["SnapshotProject"]
    project["properties"]["title"] = {"x-contract": "#/components/schemas/NoSuchSchema"}
    with pytest.raises(ValueError, match="names nothing"):
        SnapshotCheck(document)
