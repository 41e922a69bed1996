"""docs/ci/: the GitHub Actions workflow and the GitLab CI file, run against the bundled mock.

Each recipe is parsed as YAML, and each of its jobs' shell steps is run with bash as the CI
service would run it (GitHub: ``bash --noprofile --norc -eo pipefail``; GitLab: each script entry
in turn), in a job folder of its own, with the job's environment in which the secrets and
variables are the bundled mock's: its URL and its fixture keys. The service container of the
integrator's job is a ``mockserver`` process started as the image starts it (its command, its
control token from the service's environment), on a free loopback port that stands in for the
published 8080. Steps that only check out code, set up Python, install the kit or upload
artifacts are not run, and the test says which and why: this test runs in an environment that
already has the kit and pytest (tests/test_packaging.py installs the kit from scratch).

The implementer's job runs the suite on the mock's real clock at the stated rate limit with a
time budget of 15 s instead of 10 minutes (the variable the recipes read): too little to judge
80% of the rules, so its gate is unmet and the step must say so and exit ``4`` after writing the
JUnit report it uploads; given an unknown key, it must say "setup problem" and exit ``2``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import yaml

from tests.support import stores
from tests.support.serve import free_port

# The recipes start a mock of their own, on the in-memory store as the image does: the runs on
# the SQL stores would repeat the memory run's (about a minute) to no purpose.
pytestmark = pytest.mark.skipif(
    stores.test_store() != "memory",
    reason="the recipes' mock keeps its state in memory, as the image's",
)

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ROOT / "docs" / "ci"
GITHUB = RECIPES / "github-actions.yml"
GITLAB = RECIPES / "gitlab-ci.yml"
#: The time budget the implementer's job is given here (its recipes default to 10m).
TIME_BUDGET = "15s"
#: A test of an integrator's own, for the integrator's job to run (tests/ of their repository).
INTEGRATOR_TEST = """
import httpx


def test_an_empty_balance_refuses_a_paid_call(mockserver):
    mockserver.set_credits(0)  # the mock's control plane, in this test's sandbox
    answer = httpx.post(f"{mockserver.base_url}/v1/text/film", headers=mockserver.auth(), json={
        "title": "T", "logline": "L", "genre": "drama", "projectId": "prj_acme_01"})
    assert answer.status_code == 402
"""
#: Why a step is not run, by what it does.
NOT_RUN = {
    "actions/checkout": "checks out code: the job folder is made by the test",
    "actions/setup-python": "sets up Python: the test's own interpreter runs the steps",
    "actions/upload-artifact": "uploads artifacts: the test reads the reports instead",
    "git clone": "checks out code (this kit): the test runs in a checkout of it",
    "pip install": "installs the kit: the test's environment has it (tests/test_packaging.py "
    "installs it from scratch)",
}


@dataclass
class Step:
    name: str
    script: str | None  # None: not run
    env: dict[str, str] = field(default_factory=dict)
    why_not: str = ""


@dataclass
class Mock:
    url: str
    token: str
    log: Path


@pytest.fixture
def start_mock(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """Starts the bundled mock as the image starts it (real clock, the stated rate limit, no
    private callbacks), on a free loopback port; stopped after the test."""
    started: list[subprocess.Popen[bytes]] = []

    def start(token: str) -> Mock:
        port = free_port()
        env = {**os.environ, "MOCKSERVER_CONTROL_TOKEN": token}
        log = tmp_path_factory.mktemp("mock") / "mock.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "mockserver", "--host", "127.0.0.1", "--port", str(port)],
                env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        started.append(process)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/v1/openapi.json", timeout=2).status_code == 200:
                    return Mock(url, token, log)
            except httpx.TransportError:
                pass
            assert process.poll() is None, "the mock exited"
            assert time.monotonic() < deadline, "the mock did not answer within 60 s"
            time.sleep(0.1)

    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=30)


# ---------------------------------------------------------------------------------------------
# Reading the recipes


def github_value(expression: str, contexts: dict[str, str]) -> str:
    """``${{ a || 'b' }}``: the first of its terms that is set (a context or a quoted string)."""
    for term in expression.split("||"):
        term = term.strip()
        if term[:1] in "'\"":
            return term[1:-1]
        assert term in contexts, f"the recipe reads {term}, which the test does not provide"
        if contexts[term]:
            return contexts[term]
    return ""


def github_expand(text: str, contexts: dict[str, str]) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: github_value(m.group(1), contexts), str(text))


def gitlab_expand(text: str, variables: dict[str, str]) -> str:
    """A variable's ``$NAME`` and ``${NAME}`` in another's value, as GitLab expands them."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        assert name in variables, f"the recipe reads ${name}, which the test does not provide"
        return variables[name]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, str(text))


def not_run(step: str) -> str:
    return next((why for what, why in NOT_RUN.items() if step.startswith(what)), "")


def github_steps(job: dict, contexts: dict[str, str]) -> list[Step]:
    job_env = {k: github_expand(v, contexts) for k, v in (job.get("env") or {}).items()}
    steps = []
    for index, step in enumerate(job["steps"]):
        name = step.get("name") or step.get("uses") or step.get("run", "").splitlines()[0]
        if "uses" in step:
            why = not_run(step["uses"])
            assert why, f"step {index} uses {step['uses']}, which the test does not know"
            steps.append(Step(name, None, why_not=why))
            continue
        why = not_run(step["run"])
        env = {**job_env, **{k: github_expand(v, contexts) for k, v in step.get("env", {}).items()}}
        assert step.get("shell", "bash") == "bash", name
        steps.append(Step(name, None if why else github_expand(step["run"], contexts), env, why))
    return steps


def gitlab_steps(job: dict, variables: dict[str, str]) -> list[Step]:
    """The job's script entries; ``variables`` are the project's CI/CD variables (they win over
    the job's own, as in GitLab)."""
    env = {k: gitlab_expand(v, variables) for k, v in (job.get("variables") or {}).items()}
    env.update(variables)
    steps = []
    for entry in job["script"]:
        why = not_run(entry)
        steps.append(Step(entry.splitlines()[0], None if why else entry, env, why))
    return steps


def run_steps(steps: list[Step], folder: Path) -> tuple[list[subprocess.CompletedProcess], str]:
    """Runs the steps that are run, in order, until one fails; answers their results and the
    list of those not run, with why."""
    results = []
    for step in steps:
        if step.script is None:
            continue
        # The test's environment stands in for the one the skipped steps set up: its `python`,
        # `pip`, `conformance` and `pytest` come first.
        path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
        env = {**os.environ, **step.env, "PATH": path}
        run = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step.script],
            cwd=folder, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        results.append(run)
        if run.returncode != 0:
            break
    skipped = "\n".join(f"not run: {s.name}: {s.why_not}" for s in steps if s.script is None)
    print(skipped)
    return results, skipped


def implementer_contexts(mock: Mock, api_key: str) -> dict[str, str]:
    return {
        "vars.STAGING_URL": mock.url,
        "secrets.CONFORMANCE_API_KEY": api_key,
        "secrets.CONFORMANCE_SECOND_KEY": "sk_test_globex_owner",
        "secrets.CONFORMANCE_EDITOR_KEY": "sk_test_acme_editor",
        "vars.CONFORMANCE_TIME_BUDGET": TIME_BUDGET,
    }


def gitlab_variables(contexts: dict[str, str]) -> dict[str, str]:
    """The same values as GitLab CI/CD variables."""
    return {
        "STAGING_URL": contexts["vars.STAGING_URL"],
        "CONFORMANCE_API_KEY": contexts["secrets.CONFORMANCE_API_KEY"],
        "CONFORMANCE_SECOND_KEY": contexts["secrets.CONFORMANCE_SECOND_KEY"],
        "CONFORMANCE_EDITOR_KEY": contexts["secrets.CONFORMANCE_EDITOR_KEY"],
        "TIME_BUDGET": TIME_BUDGET,
        "KIT_REPOSITORY": str(ROOT),
    }


def recipe(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------
# The implementer's job


def implementer_steps(flavour: str, mock: Mock, api_key: str) -> list[Step]:
    contexts = implementer_contexts(mock, api_key)
    if flavour == "github":
        return github_steps(recipe(GITHUB)["jobs"]["conformance"], contexts)
    return gitlab_steps(recipe(GITLAB)["conformance"], gitlab_variables(contexts))


@pytest.mark.parametrize("flavour", ["github", "gitlab"])
def test_the_implementers_job_reports_an_unmet_gate_as_4_with_its_junit_report(
    flavour, start_mock, tmp_path
):
    mock = start_mock("implementer-token")
    steps = implementer_steps(flavour, mock, "sk_test_acme_owner")
    results, skipped = run_steps(steps, tmp_path)
    assert [r.args[-1] for r in results] == [s.script for s in steps if s.script], "all ran"
    run = results[-1]
    assert "conformance run --base-url" in run.args[-1]
    assert run.returncode == 4, run.stdout[-3000:] + run.stderr[-3000:]
    assert "too little judged for the gate" in run.stdout
    assert "judgeable rules judged" in run.stdout
    suite = ET.parse(tmp_path / "reports" / "conformance.xml").getroot()
    assert list(suite.iter("testcase")), "the JUnit report has its test cases"
    assert (tmp_path / "reports" / "conformance.html").is_file()
    # What was not run, and why: the checkout, the install, the upload.
    assert "pip install" in skipped and "checks out code" in skipped
    if flavour == "github":
        assert "uploads artifacts" in skipped
    else:
        gitlab = recipe(GITLAB)["conformance"]["artifacts"]
        assert gitlab["reports"]["junit"] == "reports/conformance.xml"


@pytest.mark.parametrize("flavour", ["github", "gitlab"])
def test_the_implementers_job_reports_a_setup_problem_as_2(flavour, start_mock, tmp_path):
    mock = start_mock("implementer-token")
    steps = implementer_steps(flavour, mock, "sk_test_nobody_has_this_key")
    results, _ = run_steps(steps, tmp_path)
    run = results[-1]
    assert run.returncode == 2, run.stdout[-3000:] + run.stderr[-3000:]
    assert "a setup problem, no verdict on the deployment" in run.stdout
    assert (tmp_path / "reports" / "conformance.xml").is_file(), "the report is still written"


# ---------------------------------------------------------------------------------------------
# The integrator's job


def dockerfile_command_port() -> str:
    command = next(
        line for line in (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines()
        if line.startswith("CMD ")
    )  # fmt: skip
    return re.search(r'"--port", "(\d+)"', command).group(1)


def integrator_job(flavour: str, token_contexts: dict[str, str]) -> tuple[str, str, str, dict]:
    """The job, with the service's control token, the URL the tests are given, and the port
    the service publishes (the image's)."""
    if flavour == "github":
        job = recipe(GITHUB)["jobs"]["integration"]
        (service,) = job["services"].values()
        token = github_expand(service["env"]["MOCKSERVER_CONTROL_TOKEN"], token_contexts)
        url = github_expand(job["env"]["MOCKSERVER_URL"], token_contexts)
        (ports,) = service["ports"]
        published, inside = ports.split(":")
        assert inside == dockerfile_command_port()
        return token, url, published, job
    job = recipe(GITLAB)["integration"]
    (service,) = job["services"]
    variables = job["variables"]
    assert gitlab_expand(service["name"], variables) == variables["MOCK_IMAGE"]
    token = gitlab_expand(variables["MOCKSERVER_CONTROL_TOKEN"], token_contexts)
    url = variables["MOCKSERVER_URL"]
    assert httpx.URL(url).host == service["alias"], "the tests reach the service by its alias"
    return token, url, dockerfile_command_port(), job


@pytest.mark.parametrize("flavour", ["github", "gitlab"])
def test_the_integrators_job_runs_its_tests_against_the_mock_service(flavour, start_mock, tmp_path):
    ids = {"github.run_id": "101", "github.run_attempt": "1"}
    ids |= {"CI_PIPELINE_ID": "202", "CI_JOB_ID": "303"}
    token, url, port, job = integrator_job(flavour, ids)
    assert token and "${" not in token and "$" not in token, token
    # The tests are pointed at the service's port, which is the image's.
    assert httpx.URL(url).port == int(port), (url, port)
    mock = start_mock(token)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_billing.py").write_text(INTEGRATOR_TEST, encoding="utf-8")
    if flavour == "github":
        steps = github_steps(job, ids)
        for step in steps:
            assert step.script is None or step.env["MOCKSERVER_CONTROL_TOKEN"] == token
            # The service's URL on this machine (a free port, not the runner's 8080).
            step.env["MOCKSERVER_URL"] = mock.url
    else:
        variables = {"CI_PIPELINE_ID": "202", "CI_JOB_ID": "303", "KIT_REPOSITORY": str(ROOT)}
        steps = gitlab_steps(job, variables)
        for step in steps:
            assert step.env["MOCKSERVER_CONTROL_TOKEN"] == token
            step.env["MOCKSERVER_URL"] = mock.url
    results, skipped = run_steps(steps, tmp_path)
    (run,) = results
    assert "pytest tests/" in run.args[-1]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = ET.parse(tmp_path / "reports" / "integration.xml").getroot()
    suite = report if report.tag == "testsuite" else report.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("1", "0", "0")
    # The test reached the service: its sandbox was made and ended there, with the token.
    served = mock.log.read_text(encoding="utf-8")
    assert re.search(r'"POST /_mock/sandboxes HTTP/1.1" 200', served), served[-3000:]
    assert re.search(r'"POST /v1/text/film HTTP/1.1" 402', served), served[-3000:]
    assert "pip install" in skipped and "checks out code" in skipped
