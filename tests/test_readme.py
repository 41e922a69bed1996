"""The README stays true: its Quick start and CI agree, and every Python and shell example runs.

Each ```` ```python ```` and ```` ```sh ```` block of README.md is found here by the section it is
in and its place there ("Your first hour #3"), and either run, as written, by a test below, or
listed in ``NOT_RUN`` with the reason it cannot be (a deployment it needs, a server that runs
until stopped, a synopsis); a block in neither fails :func:`test_every_example_is_run_or_says_why`.

The examples run from the install the Quick start tells its reader to do (``.venv`` made by
``pip install -e '.[conformance]'``): the shell examples in a directory where ``.venv`` is this
interpreter's environment, with ``python3`` on the path, and the Python examples by this
interpreter (pytest examples as a test file of their own). The one liberty taken: the mock the
examples start listens on a free port instead of 8080 (``8080`` in them is replaced by it, and
``MOCKSERVER_URL`` names it for ``mockserver listen``/``trigger``), so that the test can run
beside anything else on the machine; likewise port 3000 of the receiver example.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from mockserver.platform import signing
from tests.support.serve import free_port

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
RUN_LANGUAGES = ("python", "sh")

#: The examples no test runs as written, and why (kept few: each needs what a test lacks).
NOT_RUN = {
    "Quick start #1": "makes a virtual environment, installs the kit from PyPI and starts the "
    "mock until Ctrl-C; tests/test_packaging.py installs the kit the same way, and the mock is "
    "started as written in 'Your first hour #1'",
    "Quick start #2": "the kit's whole test suite, this test among them; .ci/run runs exactly "
    "this line (test_ci_runs_the_readme_test_command_as_written)",
    "Container #1": "needs a container engine (docker) and openssl; building and running the "
    "image is CI's work (issue 27 part 4), and tests/test_packaging.py checks the files",
    "Container #2": "makes a base image with mmdebstrap and builds the image with buildah (root, "
    "minutes); .ci/run's last step runs the same commands (tests/container/build_and_call.sh)",
    "The mock server #1": "a synopsis of the options, not a command",
    "Watching live traffic #1": "needs a staging deployment (staging.example.com), a test suite "
    "of yours and an endpoint of yours; tests/conformance/test_proxy.py and test_relay.py run "
    "conformance proxy with these options (--report-html, --har, -- COMMAND, --relay-to) against "
    "the bundled mock",
    "The conformance suite #1": "two of its lines need a deployment at api.example.com, and "
    "verify-signature's S, T and SIG stand for a delivery's values; tests/conformance/test_cli.py "
    "runs list-checks, verify-signature and run --mock",
    "Against your deployment #1": "needs a deployment, its keys and a public receiver URL",
    "Against your deployment #2": "runs for 9 minutes against a mock on the real clock; "
    "bench/deployment.py runs it as written, tests/conformance/test_deployment.py on simulated "
    "time",
    "Exposing the webhook receiver #1": "needs a deployment and a tunnel to hooks.ci.example.com",
    "From pytest, and from code #1": "needs a deployment ($BASE_URL, $API_KEY)",
    "From pytest, and from code #2": "a fragment: url and key are your deployment's",
    "For QA: fuzzing staging #1": "needs a staging deployment and 20,000 requests",
}


@dataclass(frozen=True)
class Example:
    name: str  # "<section> #<n>": the n-th runnable block of the section
    language: str
    code: str


def examples() -> dict[str, Example]:
    """Every ```python and ```sh block of the README, by section and place."""
    found: dict[str, Example] = {}
    section = ""
    counts: dict[str, int] = {}
    lines = README.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        heading = re.match(r"#{2,4} (.+)", line)
        if heading:
            section = heading.group(1).strip()
        fence = re.fullmatch(r"```(\w*)", line)
        if fence:
            end = lines.index("```", i + 1)
            if fence.group(1) in RUN_LANGUAGES:
                counts[section] = counts.get(section, 0) + 1
                name = f"{section} #{counts[section]}"
                code = "\n".join(lines[i + 1 : end]) + "\n"
                found[name] = Example(name, fence.group(1), code)
            i = end
        i += 1
    return found


EXAMPLES = examples()


def example(name: str) -> Example:
    """The example a test runs (it must be one of RUNNERS)."""
    assert name in RUNNERS, name
    return EXAMPLES[name]


# -- the Quick start and CI ------------------------------------------------------------------


def quick_start_commands() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_quick_start_is_exactly_two_commands():
    commands = quick_start_commands()
    assert len(commands) == 2
    assert commands[0].endswith("mockserver")
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_as_written():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert quick_start_commands()[1] in ci.splitlines()


def extras_of(requirement_extras: set[str]) -> set[str]:
    """The distributions the kit's extras bring in, following extras that name extras."""
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    names: set[str] = set()
    todo = list(requirement_extras)
    while todo:
        for requirement in optional[todo.pop()]:
            nested = re.fullmatch(r"cgcas-kit\[(.+)\]", requirement)
            if nested:
                todo += nested.group(1).split(",")
            else:
                names.add(re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0])
    return names


def test_the_quick_start_installs_what_the_examples_need():
    """pytest for the pytest examples, the conformance suite for its examples."""
    installed = re.search(r"pip install -q -e '\.\[([a-z,]+)\]'", quick_start_commands()[0])
    assert installed, quick_start_commands()[0]
    brought = extras_of(set(installed.group(1).split(",")))
    assert {"pytest", "schemathesis", "hypothesis"} <= brought, brought
    assert "pytest-xdist" not in brought  # the kit's own test tools stay in [test]


# -- every example is run, or says why not ---------------------------------------------------


def test_every_example_is_run_or_says_why():
    runners = {name for name in EXAMPLES if name not in NOT_RUN}
    assert runners == RUNNERS, (
        f"run by no test and not in NOT_RUN: {sorted(runners - RUNNERS)}; "
        f"named by a test but no longer in the README: {sorted(RUNNERS - runners)}"
    )
    assert set(NOT_RUN) <= set(EXAMPLES), sorted(set(NOT_RUN) - set(EXAMPLES))
    assert len(NOT_RUN) <= 13  # few, each with its reason


#: The examples the tests below run (each test names its own).
RUNNERS = {
    "Your first hour #1",
    "Your first hour #2",
    "Your first hour #3",
    "Your first hour #4",
    "Your first hour #5",
    "Your first hour #6",
    "In your own tests #1",
    "In your own tests #2",
    "Per-request answers (`Prefer`) #1",
    "Webhooks you can see and cause #1",
}


# -- running shell examples ------------------------------------------------------------------


@dataclass
class Shell:
    """Where the shell examples run: ``.venv`` is this interpreter's environment, the mock's
    port a free one."""

    cwd: Path
    port: int
    env: dict[str, str]

    def text(self, code: str) -> str:
        return code.replace("127.0.0.1:8080", f"127.0.0.1:{self.port}")

    def run(self, code: str, timeout: float = 60) -> str:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", self.text(code)],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, f"{code}\nexit {done.returncode}\n{done.stdout}{done.stderr}"
        return done.stdout

    def start(self, code: str) -> subprocess.Popen[str]:
        """Start a command that runs until stopped (its output read line by line)."""
        return subprocess.Popen(
            ["bash", "-c", "exec " + self.text(code).strip()],
            cwd=self.cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )


def venv_unavailable() -> str | None:
    if sys.prefix == sys.base_prefix:
        return "the tests run outside a virtual environment, so there is no .venv to run from"
    if not (Path(sys.prefix) / "bin" / "mockserver").exists():
        return f"no mockserver command in {sys.prefix}/bin (the kit is not installed there)"
    if shutil.which("curl") is None:
        return "curl is not installed"
    return None


@pytest.fixture
def shell(tmp_path: Path) -> Shell:
    if reason := venv_unavailable():
        if os.environ.get("CI"):
            pytest.fail(f"CI runs the README's examples: {reason}")
        pytest.skip(reason)
    (tmp_path / ".venv").symlink_to(sys.prefix)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSERVER_")}
    env |= {
        "MOCKSERVER_URL": f"http://127.0.0.1:{port}",
        "MOCKSERVER_CACHE_DIR": str(tmp_path / "cache"),
    }
    return Shell(tmp_path, port, env)


def stop(process: subprocess.Popen[str]) -> str:
    """Ctrl-C, as the README says; the output it printed."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
    try:
        out, _ = process.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate()
    return out


def read_until(process: subprocess.Popen[str], wanted: str, timeout: float = 30) -> str:
    """The process's output up to the first line holding ``wanted``."""
    assert process.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    os.set_blocking(process.stdout.fileno(), False)
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line:
            seen.append(line)
            if wanted in line:
                return "".join(seen)
        elif process.poll() is not None:
            break
        else:
            time.sleep(0.02)
    raise AssertionError(f"no {wanted!r} in:\n{''.join(seen)}")


def outputs(text: str) -> list[object]:
    """The JSON documents curl printed one after another (without newlines between them)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        value, at = decoder.raw_decode(text, at)
        found.append(value)
    return found


@pytest.fixture
def mock_process(shell: Shell) -> Iterator[subprocess.Popen[str]]:
    """'Your first hour #1' as written (on the free port): the mock on its manual clock."""
    code = example("Your first hour #1").code.strip()
    assert code == ".venv/bin/mockserver --clock manual"
    process = shell.start(f"{code} --port {shell.port}")
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{shell.env['MOCKSERVER_URL']}/v1/openapi.json").is_success:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, stop(process)
            assert time.monotonic() < deadline, "the mock did not start"
            time.sleep(0.05)
        yield process
    finally:
        stop(process)


def test_your_first_hour(shell: Shell, mock_process: subprocess.Popen[str], tmp_path: Path):
    (capabilities,) = outputs(shell.run(example("Your first hour #2").code))
    assert capabilities["success"] is True

    (created,) = outputs(shell.run(example("Your first hour #3").code))
    project = created["project"]["id"]

    advanced, job = outputs(shell.run(example("Your first hour #4").code))
    assert "now" in advanced
    assert job["job"]["status"] == "done" and job["job"]["projectId"] == project
    assert job["job"]["artifacts"]

    # mockserver listen (left running), then mockserver trigger
    listen_line, trigger_line = example("Your first hour #5").code.strip().splitlines()
    assert "leave it running" in listen_line
    listen = shell.start(listen_line.split("#")[0])
    try:
        read_until(listen, "ready (Ctrl-C")
        shell.run(trigger_line)
        delivered = read_until(listen, "job.completed")
        assert re.search(r"job\.completed +evt_\w+ +signature ok +-> 200", delivered), delivered
    finally:
        assert "Traceback" not in stop(listen)

    # The endpoint: listen restarted with --forward-to, receiver.py given its secret.
    port = free_port()
    receiver = tmp_path / "receiver.py"
    receiver.write_text(example("Your first hour #6").code.replace("3000", str(port)))
    forward = f".venv/bin/mockserver listen --forward-to http://127.0.0.1:{port}/hooks"
    assert "--forward-to http://127.0.0.1:3000/hooks" in README
    listen = shell.start(forward)
    endpoint = None
    try:
        banner = read_until(listen, "ready (Ctrl-C")
        found = re.search(r"signing secret (\S+)", banner)
        assert found, banner
        secret = found.group(1)
        endpoint = subprocess.Popen(
            ["python3", str(receiver)],
            cwd=shell.cwd,
            env=shell.env | {"WEBHOOK_SECRET": secret},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        wait_for_port(port)
        shell.run(trigger_line)
        assert "job.completed verified" in read_until(endpoint, "job.completed")
        assert re.search(r"job\.completed .* signature ok +-> 200", read_until(listen, "job.comp"))
    finally:
        stop(listen)
        if endpoint is not None:
            stop(endpoint)


def wait_for_port(port: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port}")


def test_the_prefer_examples(shell: Shell, mock_process: subprocess.Popen[str]):
    out = shell.run(example("Per-request answers (`Prefer`) #1").code)
    answers = re.findall(r"HTTP/[\d.]+ (\d+)", out)
    assert answers == ["429", "503"], out
    assert re.search(r"^retry-after: 30\r?$", out, re.M | re.I), out
    assert re.search(
        r"^preference-applied: code=503, reason=upstream_unavailable\r?$", out, re.M | re.I
    )
    assert '"code":"upstream_unavailable"' in out


# -- running Python examples -----------------------------------------------------------------


def test_the_pytest_examples(tmp_path: Path):
    """Each saved as a test file and run by pytest, as the README says (the kit's plugin gives
    the fixtures), in one run: every test in them passes."""
    expected = 0
    for number, name in enumerate(["In your own tests #1", "In your own tests #2"], 1):
        code = example(name).code
        tests = re.findall(r"^def (test_\w+)", code, re.M)
        assert tests, f"{name} defines no test"
        expected += len(tests)
        (tmp_path / f"test_example_{number}.py").write_text(code)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSERVER_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{expected} passed" in done.stdout, done.stdout


def test_the_signature_verifier_example():
    """The README's verifier holds to the kit's test vectors (signed by OpenSSL, not the kit)."""
    namespace: dict[str, object] = {}
    exec(compile(example("Webhooks you can see and cause #1").code, "README.md", "exec"), namespace)
    verify = namespace["verify"]
    vectors = json.loads((ROOT / "fixtures" / "webhooks" / "vectors.json").read_text())["vectors"]
    for vector in vectors:
        headers = {
            "x-service-timestamp": vector["timestamp"],
            "x-service-signature": vector["signature"],
        }
        body = base64.b64decode(vector["body_base64"])
        assert verify(vector["secret"], headers, body) is vector["valid"], vector["name"]  # type: ignore[operator]
    body = b'{"event":"job.completed"}'
    headers = {"x-service-timestamp": "2026-11-20T09:00:00Z"}
    headers["x-service-signature"] = signing.sign("k" * 32, headers["x-service-timestamp"], body)
    assert verify("k" * 32, headers, body) is True  # type: ignore[operator]
    assert verify("j" * 32, headers, body) is False  # type: ignore[operator]


# -- other sections ------------------------------------------------------------------------


def test_every_check_and_family_is_explained():
    from conformance.checks import FAMILIES, all_checks

    table = README.split("#### What each check means", 1)[1].split("\n\n", 2)[1]
    named = set(re.findall(r"`([a-z0-9-]+)`", table))
    assert [c.name for c in all_checks() if c.name not in named] == []
    families = README.split("`--only` and `--skip` take check names or families", 1)[1]
    assert all(f"`{family}`" in families.split(".", 1)[0] for family in FAMILIES)
