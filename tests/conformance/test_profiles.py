"""Profiles: `contract` relaxes what the contract marks inferred; `full` holds all of it."""

from __future__ import annotations

from conformance.api import RunConfig
from tests.conformance.fake import KEY, FakeDeployment
from tests.conformance.support import Served, run_quietly

ONLY = ["envelope-json", "schema-responses"]


def test_a_response_breaking_only_an_inferred_constraint_passes_contract_and_fails_full():
    fake = FakeDeployment(capabilities_missing_inferred_fields=True)
    with Served(fake) as server:
        relaxed = run_quietly(base_url=server.base_url, api_key=KEY, only=ONLY)
        strict = run_quietly(base_url=server.base_url, api_key=KEY, only=ONLY, profile="full")
    assert relaxed.profile == "contract"
    assert relaxed.ok, [f.message for f in relaxed.failures]
    assert relaxed.result("schema-responses").passed > 0
    assert not strict.ok
    assert strict.failed_checks() == ["schema-responses"]
    failure = strict.failures[0]
    assert failure.subject == "getCapabilities" and failure.rule == "body"
    assert "capabilities" in failure.message


def test_the_default_profile_is_contract_for_a_deployment_and_full_for_the_mock():
    assert RunConfig(base_url="https://x.example", api_key="k").effective_profile == "contract"
    assert RunConfig(mock=True).effective_profile == "full"
    assert RunConfig(mock=True, profile="contract").effective_profile == "contract"


def test_inferred_operations_are_skipped_under_contract():
    fake = FakeDeployment()
    with Served(fake) as server:
        report = run_quietly(
            base_url=server.base_url, api_key=KEY, only=["auth-missing-key"], max_requests=200
        )
    result = report.result("auth-missing-key")
    assert result.skipped["method and path are inferred"] == 6
    requested = {entry["path"] for entry in fake.log}
    assert "/v1/discovery/configs" not in requested  # an inferred list
    assert result.passed > 40
