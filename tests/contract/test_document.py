"""The contract is a valid OpenAPI 3.1 document that the tools of the trade accept."""

from __future__ import annotations

import filecmp
import shutil
import subprocess
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from openapi_spec_validator import validate

from mockserver.resources import spec_path

from .conftest import DATA

SHARED = Path(__file__).resolve().parents[3] / "shared" / "contract"


def test_is_openapi_3_1(doc):
    assert doc["openapi"] == "3.1.0"


def test_openapi_spec_validator_accepts_it(doc):
    validate(doc)


@pytest.mark.skipif(shutil.which("npx") is None, reason="Node.js (npx) is not installed")
def test_redocly_recommended_lint_reports_no_errors():
    result = subprocess.run(
        ["npx", "--yes", "@redocly/cli@2.77.0", "lint", "--format=summary", str(spec_path())],
        capture_output=True,
        text=True,
        timeout=300,
    )
    # Exit status 1 means errors under the built-in `recommended` ruleset; warnings exit 0.
    assert result.returncode == 0, result.stdout + result.stderr


def test_schemathesis_generates_a_case_for_every_operation(contract):
    schema = schemathesis.openapi.from_path(spec_path())
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.definition.raw["operationId"] for op in operations} == set(contract.operations)
    for operation in operations:
        cases = []

        @given(operation.as_strategy())
        @settings(
            max_examples=1,
            phases=[Phase.generate],
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def generate(case):
            cases.append(case)  # noqa: B023 (called at once, inside this iteration)

        generate()
        assert cases, operation.label


def test_bundled_spec_is_the_repository_spec():
    repo_spec = Path(__file__).resolve().parents[2] / "spec" / "openapi.yaml"
    if repo_spec.exists():
        assert spec_path().read_bytes() == repo_spec.read_bytes()


@pytest.mark.skipif(
    not SHARED.exists(), reason="the shared contract folder is not beside this checkout"
)
@pytest.mark.parametrize("name", ["operations.tsv", "titled-operations.md"])
def test_data_copies_match_the_interface_documents_lists(name):
    assert filecmp.cmp(DATA / name, SHARED / name, shallow=False)
