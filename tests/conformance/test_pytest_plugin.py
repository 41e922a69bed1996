"""The pytest plugin: the checks as pytest tests, and nothing at all without its options."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

from tests.conformance.fake import KEY, FakeDeployment
from tests.conformance.support import Served

# Loaded by the pytest11 entry point once the kit declares it; by -p until then.
REGISTERED = any(ep.value == "conformance.pytest_plugin" for ep in entry_points(group="pytest11"))
PLUGIN = ([] if REGISTERED else ["-p", "conformance.pytest_plugin"]) + ["-p", "no:cacheprovider"]


def pytest_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    return subprocess.run(
        [sys.executable, "-m", "pytest", *PLUGIN, "-rA", str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


def test_without_its_options_the_plugin_adds_no_test(tmp_path: Path):
    result = pytest_run(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert "conformance" not in result.stdout.replace("conformance.pytest_plugin", "")


def test_each_check_is_a_test_against_a_deployment(tmp_path: Path):
    fake = FakeDeployment(capabilities_missing_inferred_fields=True)
    with Served(fake) as server:
        result = pytest_run(
            tmp_path,
            "--conformance-base-url", server.base_url,
            "--conformance-api-key", KEY,
            "--conformance-profile", "full",
            "--conformance-only", "envelope-json", "schema-responses", "auth-public-contract",
            "--conformance-seed", "3",
        )  # fmt: skip
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "PASSED conformance::envelope-json" in out
    assert "PASSED conformance::auth-public-contract" in out
    assert "FAILED conformance::schema-responses" in out
    assert "getCapabilities" in out and "seed: 3" in out and "curl" in out
    assert "1 failed, 3 passed" in out
    # the terminal summary ends with the rule coverage, as `conformance run` does
    assert re.search(r"FAILED: \d+ of \d+ judgeable rules judged \([\d.]+%\); \d+ not judged", out)


def test_a_usage_error_stops_the_session(tmp_path: Path):
    result = pytest_run(
        tmp_path, "--conformance-base-url", "https://x.example", "--conformance-only", "nope"
    )
    assert result.returncode == 4  # pytest's usage error
    assert "conformance" in result.stderr
