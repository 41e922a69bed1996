"""A link's runtime expressions (conformance.contract.link_value), and the contract's links the
stateful check follows once each (schema-stateful's deterministic part)."""

from __future__ import annotations

from conformance.checks.schema import link_of, target_must_exist
from conformance.contract import Contract, link_value

BODY = {"project": {"id": "prj_1", "a/b": {"~x": 7}}, "list": [1]}


def test_response_body_pointers_and_request_path_values():
    assert link_value("$response.body#/project/id", {}, BODY) == "prj_1"
    assert link_value("$response.body#/project/a~1b/~0x", {}, BODY) == 7
    assert link_value("$request.path.channelId", {"channelId": "chn_1"}, BODY) == "chn_1"


def test_what_an_expression_does_not_reach_is_none():
    assert link_value("$response.body#/project/missing", {}, BODY) is None
    assert link_value("$response.body#/list/0", {}, BODY) is None  # arrays are not walked
    assert link_value("$request.path.other", {"channelId": "chn_1"}, BODY) is None
    assert link_value("$request.query.limit", {}, BODY) is None
    assert link_value("$response.header.Location", {}, BODY) is None


def test_every_link_with_parameters_uses_expressions_link_value_reads():
    contract = Contract()
    found = 0
    for op in contract.full.operations.values():
        for response in op.definition.get("responses", {}).values():
            for link in contract.full.resolve(response).get("links", {}).values():
                for expression in link.get("parameters", {}).values():
                    found += 1
                    assert str(expression).startswith(("$response.body#/", "$request.path."))
    assert found >= 10


def test_a_transition_finds_the_link_it_followed_and_what_that_link_allows():
    """schema-stateful names a transition ``SOURCE -> [STATUS] NAME -> TARGET``: the link is
    found by it (not only by its name), so a link that says its target may answer 404
    (GetJobProposal: footage edits only) is not held to ``link-target-exists``."""
    full = Contract().full
    transition = "POST /v1/video/render -> [200] GetJobProposal -> GET /v1/jobs/{jobId}/proposal"
    link = link_of(full, transition)
    assert link["operationId"] == "getJobProposal"
    assert not target_must_exist(link, "GET")
    assert link_of(full, "GetJobProposal") == link
    assert link_of(full, "POST /v1/video/render -> [200] NoSuchLink -> GET /x") == {}
