"""Checking a snapshot before it replaces the state (``PUT /_mock/snapshot``).

A snapshot is taken in whole or not at all, and only when the mock can serve it. Two layers,
both run before anything is replaced:

1. Its shape: ``#/components/schemas/Snapshot`` of the control plane's document (JSON Schema
   2020-12), compiled once with jsonschema-rs when the control plane starts. The shape covers
   every record of every collection that ``SnapshotCollections`` names, and every section the
   areas read, down to what the areas read. Records are held to the API contract's own
   schemas: the control document marks a schema ``x-contract: '#/components/schemas/...'``,
   a pointer into the API contract, and :func:`linked` makes each mark a ``$ref`` into the
   contract's components, which the compiled root carries under ``$defs`` as a resource of its
   own (:data:`CONTRACT_ID`), so both documents' components live in one root under distinct
   names and the contract's own references resolve inside it. Two more things JSON Schema
   cannot say are compiled in: ``x-integer-literal`` (:class:`IntegerLiteral`) and the formats
   of :data:`FORMATS` (a ``date-time`` the mock can read, an IANA time zone it can resolve).
2. The references between its sections: the small functions below, one rule each, run in
   :data:`RULES` order on a snapshot whose shape is right (so they index without fear).

Each problem is ``{"path": JSON Pointer into the snapshot, "message": ...}``. Every problem of
the failing layer is reported, not only the first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from functools import cache
from typing import Any

import jsonschema_rs

from mockserver.areas.autopilots import timing
from mockserver.areas.discovery.plan import SOURCES
from mockserver.contract import Contract, default_contract
from mockserver.platform import auth
from mockserver.platform.clock import parse_time
from mockserver.platform.errors import ApiError
from mockserver.platform.validation import pointer

Problem = dict[str, str]
Rule = Callable[[Mapping[str, Any]], Iterator[Problem]]


def problem(parts: Iterable[Any], message: str) -> Problem:
    return {"path": pointer(parts), "message": message}


# The base URI the API contract's components are embedded under in the compiled root.
CONTRACT_ID = "urn:mockserver:contract"
RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


class SnapshotCheck:
    """The compiled shape of a snapshot, and the rules that follow it."""

    def __init__(self, document: Mapping[str, Any], contract: Contract | None = None) -> None:
        contract = contract or default_contract()
        root = {
            "$ref": "#/components/schemas/Snapshot",
            "components": linked(document["components"], contract),
            "$defs": {
                "contract": {"$id": CONTRACT_ID, "components": contract.document["components"]}
            },
        }
        self._shape = jsonschema_rs.Draft202012Validator(
            root, validate_formats=True, formats=FORMATS, keywords=KEYWORDS, offline=True
        )

    def problems(self, snapshot: Any) -> list[Problem]:
        """Everything that keeps ``snapshot`` from being served; empty when it can be."""
        found = [_shape_problem(error) for error in self._shape.iter_errors(snapshot)]
        if found:
            return found
        return [each for rule in RULES for each in rule(snapshot)]


def linked(node: Any, contract: Contract) -> Any:
    """A copy of the control document's ``node`` with every ``x-contract`` mark made a ``$ref``
    into the API contract's components (embedded under :data:`CONTRACT_ID`). A mark that names
    nothing in the contract fails here, when the control plane starts."""
    if isinstance(node, list):
        return [linked(item, contract) for item in node]
    if not isinstance(node, dict):
        return node
    copied = {key: linked(value, contract) for key, value in node.items()}
    target = copied.pop("x-contract", None)
    if target is not None:
        if "$ref" in copied or not isinstance(target, str) or not target.startswith("#/"):
            raise ValueError(f"x-contract {target!r}: a local pointer, never beside a $ref")
        try:
            contract.pointer(target)
        except (KeyError, IndexError, TypeError):
            raise ValueError(f"x-contract {target!r} names nothing in the API contract") from None
        copied["$ref"] = CONTRACT_ID + target
    return copied


class IntegerLiteral:
    """``x-integer-literal: true``: a whole number written without a fraction (``2``, never
    ``2.0``, which JSON Schema's ``integer`` admits): the mock counts or indexes with it."""

    def __init__(self, parent_schema: Any, value: Any, schema_path: Any) -> None:
        self.enabled = value is True

    def validate(self, instance: Any) -> None:
        if self.enabled and isinstance(instance, float):
            raise ValueError(f"{instance!r} must be written without a fraction")


def is_timestamp(text: str) -> bool:
    """``format: date-time``, as the mock reads it: RFC 3339, and a moment Python can hold (no
    leap second, no year 0)."""
    if not RFC3339.fullmatch(text):
        return False
    try:
        parse_time(text)
    except (ValueError, OverflowError):
        return False
    return True


def is_time_zone(name: str) -> bool:
    """``format: iana-time-zone``: a zone name the areas resolve (autopilots/timing.py)."""
    try:
        timing.zone(name)
    except ApiError:
        return False
    return True


FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": is_timestamp,
    "iana-time-zone": is_time_zone,
}
KEYWORDS: dict[str, Any] = {"x-integer-literal": IntegerLiteral}


def _shape_problem(error: Any) -> Problem:
    parts = list(error.instance_path)
    missing = getattr(error.kind, "property", None)
    if missing is not None:  # ``required``: point at the field that is missing
        parts.append(missing)
    return problem(parts, error.message)


@cache
def job_kinds() -> tuple[str, ...]:
    """The job kinds the contract names (``JobKind``): the areas start jobs of each."""
    return tuple(default_contract().document["components"]["schemas"]["JobKind"]["enum"])


@cache
def known_roles() -> frozenset[str]:
    """The roles auth.py knows: those it gives powers to, and the contract's ``x-roles`` it
    documents them by (the read-only role appears only there)."""
    scheme = default_contract().document["components"]["securitySchemes"]["apiKey"]
    documented = {name for name in scheme["x-roles"] if name not in ("x-inferred", "description")}
    return frozenset(documented | auth.GOVERNING_ROLES | auth.SPENDING_ROLES)


def _records(data: Mapping[str, Any]) -> Iterator[tuple[list[str], str, Mapping[str, Any]]]:
    """Every record: the path of its collection, its key there, and the record."""
    for workspace_id, workspace in data["workspaces"].items():
        for name, records in workspace.get("collections", {}).items():
            for key, record in records.items():
                yield ["workspaces", workspace_id, "collections", name], key, record


def _collection(
    data: Mapping[str, Any], name: str
) -> Iterator[tuple[list[str], str, Mapping[str, Any]]]:
    """Every record of one collection, in every workspace: its path, key and record."""
    for workspace_id, workspace in data["workspaces"].items():
        for key, record in workspace.get("collections", {}).get(name, {}).items():
            yield ["workspaces", workspace_id, "collections", name, key], key, record


# -- workspaces and members --------------------------------------------------------------------


def workspaces_are_filed_under_their_id(data: Mapping[str, Any]) -> Iterator[Problem]:
    for key, workspace in data["workspaces"].items():
        if workspace["id"] != key:
            yield problem(
                ["workspaces", key, "id"],
                f"workspace {workspace['id']!r} is filed under {key!r}: its id must be its key",
            )


def workspace_slugs_are_unique(data: Mapping[str, Any]) -> Iterator[Problem]:
    seen: dict[str, str] = {}
    for key, workspace in data["workspaces"].items():
        slug = workspace["slug"]
        if slug in seen:
            yield problem(
                ["workspaces", key, "slug"],
                f"slug {slug!r} is already the slug of workspace {seen[slug]!r}",
            )
        seen.setdefault(slug, key)


def members_are_filed_under_their_name(data: Mapping[str, Any]) -> Iterator[Problem]:
    for workspace_id, workspace in data["workspaces"].items():
        for key, member in workspace["members"].items():
            if member["name"] != key:
                yield problem(
                    ["workspaces", workspace_id, "members", key, "name"],
                    f"member {member['name']!r} is filed under {key!r}: its name must be its key",
                )


def member_roles_are_known(data: Mapping[str, Any]) -> Iterator[Problem]:
    roles = known_roles()
    for workspace_id, workspace in data["workspaces"].items():
        for key, member in workspace["members"].items():
            if member["role"] not in roles:
                yield problem(
                    ["workspaces", workspace_id, "members", key, "role"],
                    f"unknown role {member['role']!r}; the roles are {', '.join(sorted(roles))}",
                )


# -- API keys ----------------------------------------------------------------------------------


def keys_name_an_existing_workspace(data: Mapping[str, Any]) -> Iterator[Problem]:
    for digest, key in data["keys"].items():
        if key["workspace"] not in data["workspaces"]:
            yield problem(
                ["keys", digest, "workspace"], f"no workspace {key['workspace']!r} in the snapshot"
            )


def keys_name_a_member_of_their_workspace(data: Mapping[str, Any]) -> Iterator[Problem]:
    for digest, key in data["keys"].items():
        workspace = data["workspaces"].get(key["workspace"])
        if workspace is not None and key["member"] not in workspace["members"]:
            yield problem(
                ["keys", digest, "member"],
                f"{key['member']!r} is not a member of workspace {key['workspace']!r}",
            )


# -- records -----------------------------------------------------------------------------------


def records_are_filed_under_their_id(data: Mapping[str, Any]) -> Iterator[Problem]:
    for where, key, record in _records(data):
        if record["id"] != key:
            yield problem(
                [*where, key, "id"],
                f"record {record['id']!r} is filed under {key!r}: its id must be its key",
            )


def record_seqs_are_within_seq(data: Mapping[str, Any]) -> Iterator[Problem]:
    for where, key, record in _records(data):
        if record["_seq"] > data["seq"]:
            yield problem(
                [*where, key, "_seq"],
                f"_seq {record['_seq']} is beyond the snapshot's seq {data['seq']}",
            )


def record_seqs_increase_in_collection_order(data: Mapping[str, Any]) -> Iterator[Problem]:
    """Paging reads a collection in order and resumes after a ``_seq``: order and _seq agree."""
    for workspace_id, workspace in data["workspaces"].items():
        for name, records in workspace.get("collections", {}).items():
            last = 0
            for key, record in records.items():
                if record["_seq"] <= last:
                    yield problem(
                        ["workspaces", workspace_id, "collections", name, key, "_seq"],
                        f"_seq {record['_seq']} does not follow the previous record's {last}: "
                        "a collection is kept in insertion order",
                    )
                last = max(last, record["_seq"])


# -- what collections read from each other -----------------------------------------------------


def community_general_records_have_their_community_campaign(
    data: Mapping[str, Any],
) -> Iterator[Problem]:
    """A campaign whose source is ``community`` keeps only its general fields: its view reads
    the rest from the community campaign of the same id (campaigns/state.py)."""
    for path, key, campaign in _collection(data, "campaigns"):
        workspace = data["workspaces"][path[1]]
        if campaign.get("source") == "community" and key not in workspace.get(
            "collections", {}
        ).get("communityCampaigns", {}):
            yield problem(
                [*path, "source"],
                f"campaign {key!r} is a community campaign's general record, and there is no "
                "community campaign of that id to read its title, status and caps from",
            )


def community_cycles_are_not_before_creation(data: Mapping[str, Any]) -> Iterator[Problem]:
    """The agent works through every cycle due since ``_nextCycleAt``: never before creation."""
    for path, _key, campaign in _collection(data, "communityCampaigns"):
        due = campaign.get("_nextCycleAt")
        if due is not None and due < parse_time(campaign["createdAt"]).timestamp():
            yield problem(
                [*path, "_nextCycleAt"],
                f"the next cycle ({due}) is before the campaign was created "
                f"({campaign['createdAt']})",
            )


def discovery_sources_are_known(data: Mapping[str, Any]) -> Iterator[Problem]:
    """Configurations, and the runs going on, name sources discovery collects from."""
    known = ", ".join(SOURCES)
    for path, _key, config in _collection(data, "discoveryConfigs"):
        for index, source in enumerate(config["sources"]):
            if source not in SOURCES:
                yield problem(
                    [*path, "sources", index], f"{source!r} is not a discovery source ({known})"
                )
    for path, _key, run in _collection(data, "discoveryRuns"):
        if run["status"] != "running":
            continue
        for index, source in enumerate(run["_plan"]["sources"]):
            if source not in SOURCES:
                yield problem(
                    [*path, "_plan", "sources", index],
                    f"{source!r} is not a discovery source ({known})",
                )


def discovery_configs_name_a_running_run(data: Mapping[str, Any]) -> Iterator[Problem]:
    for path, _key, config in _collection(data, "discoveryConfigs"):
        run_id = config.get("_running")
        if run_id is None:
            continue
        runs = data["workspaces"][path[1]].get("collections", {}).get("discoveryRuns", {})
        run = runs.get(run_id)
        if run is None or run["status"] != "running":
            yield problem(
                [*path, "_running"],
                f"{run_id!r} is not a running discovery run of the workspace",
            )


# -- the fixtures' rules -----------------------------------------------------------------------


def job_kinds_have_their_settings(data: Mapping[str, Any]) -> Iterator[Problem]:
    """The jobs engine reads each kind's steps when it starts or ends a job of that kind."""
    kinds = data["fixtures"]["jobs"]["kinds"]
    for kind in job_kinds():
        if kind not in kinds:
            yield problem(
                ["fixtures", "jobs", "kinds", kind],
                f"no settings for the job kind {kind!r}, which the areas start jobs of",
            )


def ranges_run_upwards(data: Mapping[str, Any]) -> Iterator[Problem]:
    generation = data["fixtures"]["generation"]
    for parts in (("media", "unknownLengthSeconds"), ("footageEdit", "cutSeconds")):
        span = generation[parts[0]][parts[1]]
        if span["min"] > span["max"]:
            yield problem(
                ["fixtures", "generation", *parts, "min"],
                f"min {span['min']} is above max {span['max']}",
            )


# -- idempotency and deliveries ----------------------------------------------------------------


def idempotency_names_existing_workspaces(data: Mapping[str, Any]) -> Iterator[Problem]:
    for workspace_id in data.get("idempotency", {}):
        if workspace_id not in data["workspaces"]:
            yield problem(["idempotency", workspace_id], f"no workspace {workspace_id!r}")


def kept_answers_are_json(data: Mapping[str, Any]) -> Iterator[Problem]:
    """A kept answer is replayed byte for byte as ``application/json``."""
    for workspace_id, entries in data.get("idempotency", {}).items():
        for key, entry in entries.items():
            try:
                json.loads(entry["body"])
            except (ValueError, RecursionError):
                yield problem(
                    ["idempotency", workspace_id, key, "body"], "the kept answer is not JSON"
                )


def deliveries_are_filed_under_their_id(data: Mapping[str, Any]) -> Iterator[Problem]:
    for key, delivery in data.get("deliveries", {}).items():
        if delivery["id"] != key:
            yield problem(
                ["deliveries", key, "id"],
                f"delivery {delivery['id']!r} is filed under {key!r}: its id must be its key",
            )


def deliveries_name_existing_workspaces(data: Mapping[str, Any]) -> Iterator[Problem]:
    for key, delivery in data.get("deliveries", {}).items():
        if delivery["workspaceId"] not in data["workspaces"]:
            yield problem(
                ["deliveries", key, "workspaceId"], f"no workspace {delivery['workspaceId']!r}"
            )


# -- the clock ---------------------------------------------------------------------------------


def clock_is_a_utc_timestamp(data: Mapping[str, Any]) -> Iterator[Problem]:
    if "clock" not in data:
        return
    text = data["clock"]
    try:
        parse_time(text)
        written = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        yield problem(["clock"], f"not a timestamp the mock can read: {exc}")
        return
    if written.utcoffset() != timedelta(0):
        yield problem(["clock"], f"{text!r} is not in UTC: write it with Z")


RULES: tuple[Rule, ...] = (
    workspaces_are_filed_under_their_id,
    workspace_slugs_are_unique,
    members_are_filed_under_their_name,
    member_roles_are_known,
    keys_name_an_existing_workspace,
    keys_name_a_member_of_their_workspace,
    records_are_filed_under_their_id,
    record_seqs_are_within_seq,
    record_seqs_increase_in_collection_order,
    community_general_records_have_their_community_campaign,
    community_cycles_are_not_before_creation,
    discovery_sources_are_known,
    discovery_configs_name_a_running_run,
    job_kinds_have_their_settings,
    ranges_run_upwards,
    idempotency_names_existing_workspaces,
    kept_answers_are_json,
    deliveries_are_filed_under_their_id,
    deliveries_name_existing_workspaces,
    clock_is_a_utc_timestamp,
)
