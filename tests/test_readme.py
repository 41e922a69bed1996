"""The README stays true: its Quick start and CI agree, and every Python and shell example runs.

Each ```` ```python ```` and ```` ```sh ```` block of README.md is found here by the section it is
in and its place there ("Your first hour #3"), and either run, as written, by a test below, or
listed in ``NOT_RUN`` with the reason it cannot be (an image registry it needs, root and
minutes, this very suite, a synopsis); a block in neither fails
:func:`test_every_example_is_run_or_says_why`.

The examples run from the install the Quick start tells its reader to do (``.venv`` made by
``pip install -e '.[conformance]'``; 'Quick start #1' itself runs in a copy of the clone): the
shell examples in a directory where ``.venv`` is this interpreter's environment, with
``python3`` on the path (and ``.venv/bin`` first on it for the examples that call
``conformance`` or ``pytest`` by name, as in an activated environment), and the Python examples
by this interpreter (pytest examples as a test file of their own).

The liberties taken, each mechanical and each checked to apply (the text it replaces must be in
the example):

- Ports: the mock the examples start listens on a free port instead of 8080 (``8080`` in them is
  replaced by it, ``--port N`` is added where none is given, and ``MOCKSERVER_URL`` names it for
  ``mockserver listen``/``trigger``); likewise port 3000 of the receiver example and port 8443 of
  the suite's receiver (``0.0.0.0:8443`` becomes a free port on loopback), and the proxy's
  8788 and the relay's 8789 (the relay command, which gives no ``--listen``, gets
  ``--listen 127.0.0.1:N``: its proxy would take the default 8788).
- A deployment: where an example needs one, the bundled mock is the deployment, started by the
  test as the image starts it (the real clock, the stated rate limit of 100 requests a minute;
  ``--allow-private-callbacks`` where the suite's receiver is on loopback, as in the README's
  stand-in; for the fuzzing example, fixtures whose jobs take a second a step). ``ADDRESSES``
  replaces ``https://api.example.com`` and ``https://staging.example.com`` with its URL, and a
  tunnel's public address with the receiver's own on loopback, and the relay's target
  (``http://localhost:3000/hooks``) with a receiver's on loopback. The environment variables the
  examples read are given its values: ``$BASE_URL`` its URL; ``$API_KEY`` and ``$STAGING_KEY``
  an owner's key, ``$OTHER_WORKSPACE_KEY`` another workspace's owner's, ``$EDITOR_KEY`` an
  editor's of the first workspace (the fixture keys the mock prints as it starts);
  ``$RECEIVER_URL`` the suite's receiver on loopback; ``$WEBHOOK_SECRET``, ``$TIMESTAMP`` and
  ``$SIGNATURE`` (and ``body.json``) one delivery of the kit's signature test vectors. The
  Python fragment's ``url`` and ``key`` are given as names.
- Numbers the README shows as option values are lowered where the run would not fit a test at
  the stated rate limit (``LOWERED``): ``--time-budget 10m`` to 15 s; ``--max-requests 20000``,
  ``--conformance-max-requests 1000`` and ``max_requests=1000`` to 100.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

from mockserver.platform.delivery import signing
from mockserver.testing import webhook_receiver
from tests.support import stores
from tests.support.serve import free_port
from tests.test_packaging import NOT_PASSED_ON, copy_sources, pypi_unreachable

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
RUN_LANGUAGES = ("python", "sh")

#: The examples run against a mock process of their own (its state in memory, as the image's),
#: which the runs on the SQL stores (MOCKSERVER_TEST_STORE) would only repeat, minutes each.
once = pytest.mark.skipif(
    stores.test_store() != "memory",
    reason="the example runs against a mock process of its own, the same on every store: "
    "it runs once, in the memory store's run",
)

#: The examples no test runs as written, and why (kept few: each needs what a test lacks).
NOT_RUN = {
    "Quick start #2": "the kit's whole test suite, this test among them; .ci/run runs exactly "
    "this line (test_ci_runs_the_readme_test_command_as_written)",
    "Container #1": "builds FROM the Dockerfile's default base, python:3.11-slim, pulled from "
    "Docker Hub: no image registry can be reached from the kit's CI machines (podman pull "
    "docker.io/library/python:3.11-slim: 'lookup registry-1.docker.io: no such host'), and no "
    "docker daemon runs there (the docker CLI finds no /var/run/docker.sock); with podman standing "
    "in for docker, `run` is refused too (crun: setrlimit RLIMIT_NOFILE: Operation not "
    "permitted). .ci/run builds the same Dockerfile on a base of Debian's packages ('Container "
    "#2', tests/container/build_and_call.sh) and runs the image's command with buildah",
    "Container #2": "makes a base image with mmdebstrap and builds the image with buildah (root, "
    "minutes); .ci/run's last step runs the same commands (tests/container/build_and_call.sh)",
    "The mock server #1": "a synopsis of the options, not a command",
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


@once
def test_the_quick_start_installs_and_starts_the_mock(tmp_path: Path):
    """'Quick start #1' as written, in a copy of the clone (tests/test_packaging.py's): a fresh
    virtual environment, the kit installed from it with its conformance extra (dependencies
    from PyPI), then the mock, on a free port (``--port N`` added), stopped (Ctrl-C) once it
    answers."""
    if reason := pypi_unreachable():
        if os.environ.get("CI"):
            pytest.fail(f"CI runs the Quick start: {reason}")
        pytest.skip(reason)
    clone = copy_sources(tmp_path / "clone")
    port = free_port()
    code = example("Quick start #1").code.strip()
    assert code.endswith("&& .venv/bin/mockserver"), code
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in NOT_PASSED_ON and not k.startswith("MOCKSERVER_")
    }
    log = tmp_path / "quick-start.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            ["bash", "-c", f"{code} --port {port}"],
            cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/v1/openapi.json", timeout=2)
                if answer.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, f"exit {process.returncode}\n{log.read_text()}"
            assert time.monotonic() < deadline, f"no mock within 180 s\n{log.read_text()}"
            time.sleep(0.2)
        extra = subprocess.run(  # the conformance extra: the suite's own libraries
            [str(clone / ".venv" / "bin" / "python"), "-c", "import schemathesis, hypothesis"],
            cwd=tmp_path, env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert extra.returncode == 0, extra.stderr
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=30)
    assert f"mockserver listening on http://127.0.0.1:{port}" in log.read_text()
    assert "mockserver stopped" in log.read_text()


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
    assert len(NOT_RUN) <= 4  # few, each with its reason


#: The examples the tests below run (each test names its own).
RUNNERS = {
    "Quick start #1",
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
    "The conformance suite #1",
    "Against your deployment #1",
    "Against your deployment #2",
    "For QA: fuzzing staging #1",
    "From pytest, and from code #1",
    "From pytest, and from code #2",
    "Watching live traffic #1",
    "Exposing the webhook receiver #1",
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


def wait_for_port(
    port: int, timeout: float = 15, process: subprocess.Popen[str] | None = None
) -> None:
    """Until something accepts connections on ``port`` (failing at once if ``process`` ends);
    nothing is sent (a relay would forward a request)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process is not None and process.poll() is not None:
                raise AssertionError(f"exit {process.returncode}:\n{stop(process)}") from None
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


# -- examples against a deployment ----------------------------------------------------------
#
# The deployment is the bundled mock, started by the test as the image starts it (the real
# clock, the stated rate limit; with --allow-private-callbacks where the example's receiver is on
# loopback, as in the README's stand-in), on a free port; its fixture keys are read from what it
# prints. The substitutions are declared here, and each must be found in its example.

#: Where an example names a deployment, the mock's URL (``{url}``) stands in; a tunnel's public
#: address is the receiver's own on loopback (``{receiver}``); ports are free ones.
ADDRESSES = {
    "https://api.example.com": "{url}",
    "https://staging.example.com": "{url}",
    "https://hooks.ci.example.com": "{receiver}",
    "0.0.0.0:8443": "127.0.0.1:{receiver_port}",
    "127.0.0.1:8443": "127.0.0.1:{receiver_port}",
    "127.0.0.1:8080": "127.0.0.1:{port}",
    "--port 8080": "--port {port}",
    "127.0.0.1:8788": "127.0.0.1:{proxy_port}",
    "0.0.0.0:8789": "127.0.0.1:{relay_port}",
    "http://localhost:3000/hooks": "{hooks}",
}
#: Numbers the README shows as option values, lowered to fit a test (at the stated 100 requests a
#: minute): a time budget of 10 minutes, and request counts of 20,000 and 1,000.
LOWERED = {
    "--time-budget 10m": "--time-budget 15s",
    "--max-requests 20000": "--max-requests 100",
    "--conformance-max-requests 1000": "--conformance-max-requests 100",
    "max_requests=1000": "max_requests=100",
}


@dataclass
class Deployment:
    url: str
    keys: dict[str, tuple[str, str, str]]  # key: (workspace, person, role), as the mock prints
    process: subprocess.Popen[bytes] | None = None

    def key(self, role: str, workspace: str | None = None, other_than: str | None = None) -> str:
        """A fixture key the mock printed: of ``role``, in ``workspace`` or in another one."""
        return next(
            key
            for key, (space, _, held) in self.keys.items()
            if held == role
            and (workspace is None or space == workspace)
            and (other_than is None or space != other_than)
        )

    def variables(self, receiver_url: str) -> dict[str, str]:
        """The environment variables the examples read, with this deployment's values."""
        owner = self.key("owner")
        workspace = self.keys[owner][0]
        return {
            "BASE_URL": self.url,
            "API_KEY": owner,
            "STAGING_KEY": owner,
            "OTHER_WORKSPACE_KEY": self.key("owner", other_than=workspace),
            "EDITOR_KEY": self.key("editor", workspace=workspace),
            "RECEIVER_URL": receiver_url,
        }


def fixture_keys(banner: str) -> dict[str, tuple[str, str, str]]:
    """The keys a mock printed as it started: ``sk_test_acme_owner   acme / alice (owner)``."""
    found = re.findall(r"^\s+(sk_\w+)\s+(\S+) / (\S+) \((\w+)\)$", banner, re.M)
    return {key: (workspace, person, role) for key, workspace, person, role in found}


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Callable[..., Deployment]]:
    """Starts the mock as a deployment (``*options`` added to its command); stopped after."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*options: str) -> Deployment:
        port = free_port()
        log = tmp_path / f"deployment-{port}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSERVER_")}
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "mockserver", "--port", str(port), *options],
                env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        started.append(process)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/v1/openapi.json", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the mock did not answer within 60 s"
            time.sleep(0.1)
        keys = fixture_keys(log.read_text())
        assert keys, log.read_text()
        return Deployment(url, keys, process)

    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=30)


def liberties(code: str, values: dict[str, object], *lowered: str) -> str:
    """The example with the addresses of ADDRESSES it holds filled with ``values``, and the
    numbers ``lowered`` (keys of LOWERED, each of which it must hold) lowered."""
    for old, new in ADDRESSES.items():
        if old in code:
            code = code.replace(old, new.format(**values))
    for option in lowered:
        assert option in code, f"the example no longer says {option}"
        code = code.replace(option, LOWERED[option])
    return code


@dataclass
class Ran:
    status: int
    out: str  # stdout and stderr together


def run_block(shell: Shell, code: str, env: dict[str, str], timeout: float = 150) -> Ran:
    """A shell example as a script (``bash -eu -o pipefail``), in ``shell``'s folder, with the
    environment's ``bin`` first on PATH (the kit's commands, as in an activated environment).
    What it left running in the background is stopped (Ctrl-C) once it ends."""
    path = os.pathsep.join([str(shell.cwd / ".venv" / "bin"), env.get("PATH", "")])
    log = shell.cwd / f"block-{time.monotonic_ns()}.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", code],
            cwd=shell.cwd, env=env | {"PATH": path}, stdout=out, stderr=subprocess.STDOUT,
            text=True, start_new_session=True,
        )  # fmt: skip
        try:
            status = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            status = None
        finally:
            for sig in (signal.SIGINT, signal.SIGKILL):
                try:
                    os.killpg(process.pid, sig)
                except ProcessLookupError:
                    break
                time.sleep(1)
    assert status is not None, f"still running after {timeout} s:\n{log.read_text()}"
    return Ran(status, log.read_text())


@once
def test_the_conformance_suite_overview(shell: Shell, deployment: Callable[..., Deployment]):
    """Its five lines: a run and a preflight against a deployment, a run of the bundled mock,
    the list of checks, and one delivery verified offline (a vector of the kit's tests)."""
    target = deployment()
    vector = next(
        v
        for v in json.loads((ROOT / "fixtures" / "webhooks" / "vectors.json").read_text())[
            "vectors"
        ]
        if v["valid"] is True
    )
    (shell.cwd / "body.json").write_bytes(base64.b64decode(vector["body_base64"]))
    env = shell.env | target.variables("") | {
        "WEBHOOK_SECRET": vector["secret"],
        "TIMESTAMP": vector["timestamp"],
        "SIGNATURE": vector["signature"],
    }  # fmt: skip
    code = liberties(
        example("The conformance suite #1").code, {"url": target.url}, "--time-budget 10m"
    )
    ran = run_block(shell, code, env, timeout=170)
    assert ran.status == 0, ran.out
    assert len(re.findall(r"^PASSED: \d+ of \d+ judgeable rules judged", ran.out, re.M)) == 2
    assert re.search(r"^preflight: --api-key authenticates", ran.out, re.M), ran.out
    assert "schema-positive" in ran.out  # list-checks
    assert "valid: the signature matches the raw body and the timestamp" in ran.out


@once
def test_the_command_for_ci(shell: Shell, deployment: Callable[..., Deployment]):
    """'Against your deployment #1', its time budget lowered: too short to judge 80% of the
    rules, so the gate is unmet (exit 4, nothing broken) and the three reports say so."""
    target = deployment("--allow-private-callbacks")  # the suite's receiver is on loopback
    port = free_port()
    env = shell.env | target.variables(f"http://127.0.0.1:{port}")
    code = liberties(
        example("Against your deployment #1").code,
        {"receiver_port": port},
        "--time-budget 10m",
    )
    assert "0.0.0.0:8443" not in code
    ran = run_block(shell, code, env)
    assert ran.status == 4, ran.out
    assert re.search(r"^preflight: --receiver-url reaches the suite's receiver", ran.out, re.M)
    assert re.search(r"^preflight: --second-key authenticates", ran.out, re.M), ran.out
    assert re.search(r"^preflight: --restricted-key authenticates", ran.out, re.M), ran.out
    report = json.loads((shell.cwd / "reports" / "conformance.json").read_text())
    assert report["verdict"] == "insufficient coverage", report["verdict"]
    junit = (shell.cwd / "reports" / "conformance.xml").read_text()
    assert "conformance-gates" in junit
    assert (shell.cwd / "reports" / "conformance.html").stat().st_size > 0


@once
def test_exposing_the_webhook_receiver(shell: Shell, deployment: Callable[..., Deployment]):
    """'Exposing the webhook receiver #1', its time budget lowered, the tunnel's address the
    receiver's own on loopback: the deployment reaches the suite's receiver, whose deliveries
    are judged."""
    target = deployment("--allow-private-callbacks")  # the receiver is on loopback
    port = free_port()
    code = liberties(
        example("Exposing the webhook receiver #1").code,
        {"receiver": f"http://127.0.0.1:{port}", "receiver_port": port},
        "--time-budget 10m",
    )
    assert "example.com" not in code
    ran = run_block(shell, code, shell.env | target.variables(""))
    assert ran.status == 0, ran.out
    assert re.search(r"^preflight: --receiver-url reaches the suite's receiver", ran.out, re.M)
    assert re.search(r"end webhooks-subscription-deliveries: passed", ran.out), ran.out


@once
def test_the_bundled_mock_as_a_stand_in(shell: Shell):
    """'Against your deployment #2': the mock started in the background, then the suite against
    it (its time budget lowered); the mock is stopped once the block ends."""
    port = free_port()
    code = liberties(
        example("Against your deployment #2").code,
        {"port": shell.port, "receiver_port": port},
        "--time-budget 10m",
    )
    ran = run_block(shell, code, shell.env)
    assert ran.status == 0, ran.out
    assert f"mockserver listening on http://127.0.0.1:{shell.port}" in ran.out
    assert re.search(r"^PASSED: \d+ of \d+ judgeable rules judged", ran.out, re.M), ran.out
    assert re.search(r"^preflight: --receiver-url reaches the suite's receiver", ran.out, re.M)


def quick_jobs(tmp_path: Path) -> Path:
    """The default fixtures, their jobs' every step one second long: a deployment whose renders
    end within the suite's first read of them (every 30 s, as the document recommends)."""
    fixtures = tmp_path / "fixtures"
    shutil.copytree(ROOT / "fixtures", fixtures)
    jobs = yaml.safe_load((fixtures / "jobs.yaml").read_text())

    def shorten(node: object) -> object:
        if isinstance(node, dict):
            return {k: 1 if k == "seconds" else shorten(v) for k, v in node.items()}
        if isinstance(node, list):
            return [shorten(item) for item in node]
        return node

    (fixtures / "jobs.yaml").write_text(yaml.safe_dump(shorten(jobs)))
    return fixtures / "default.yaml"


@once
def test_fuzzing_staging(shell: Shell, deployment: Callable[..., Deployment], tmp_path: Path):
    """'For QA: fuzzing staging #1', 100 requests instead of 20,000 (200 minutes at the stated
    limit): the schema family alone, under the full profile, with its seed. Its
    schema-deprecated-fields follows a render to its end, so the deployment's jobs are quick."""
    target = deployment("--fixtures", str(quick_jobs(tmp_path)))
    code = liberties(
        example("For QA: fuzzing staging #1").code, {"url": target.url}, "--max-requests 20000"
    )
    ran = run_block(shell, code, shell.env | target.variables(""))
    assert ran.status == 0, ran.out
    assert re.search(r"^PASSED: ", ran.out, re.M) and "seed 4711" in ran.out, ran.out
    ended = dict(re.findall(r"^\[conformance [\d:]+\] end ([a-z0-9-]+): (\w+)", ran.out, re.M))
    assert ended and all(name.startswith("schema-") for name in ended), ended
    assert set(ended.values()) == {"passed"}, ended
    assert "<html" in (shell.cwd / "fuzz.html").read_text().lower()


@once
def test_the_pytest_plugin(shell: Shell, deployment: Callable[..., Deployment]):
    """'From pytest, and from code #1', 100 requests instead of 1,000: one pytest test per
    check, run from a folder of the reader's with no tests of its own."""
    target = deployment()
    code = liberties(
        example("From pytest, and from code #1").code, {}, "--conformance-max-requests 1000"
    )
    ran = run_block(shell, code, shell.env | target.variables(""))
    assert ran.status == 0, ran.out
    assert re.search(r"\d+ passed", ran.out), ran.out
    assert "test_conformance" in ran.out or "passed" in ran.out


@once
def test_the_api_from_code(deployment: Callable[..., Deployment]):
    """'From pytest, and from code #2', 100 requests instead of 1,000; ``url`` and ``key``, the
    deployment's, are given as names."""
    target = deployment()
    code = liberties(example("From pytest, and from code #2").code, {}, "max_requests=1000")
    code = code.replace("\nreport.exit_code,", "\nanswer = report.exit_code,")
    namespace: dict[str, object] = {"url": target.url, "key": target.key("owner")}
    exec(compile(code, "README.md", "exec"), namespace)
    exit_code, failed, document = namespace["answer"]  # type: ignore[misc]
    assert exit_code == 0 and failed == [], (exit_code, failed)
    assert document["verdict"] == "passed", document["verdict"]


INTEGRATION_TEST = """
import os

import httpx


def test_projects_through_the_proxy():
    answer = httpx.get(
        os.environ["CONFORMANCE_PROXY_URL"] + "/v1/projects",
        headers={"Authorization": "Bearer " + os.environ["API_KEY"]},
    )
    assert answer.status_code == 200
"""


def commands(code: str) -> list[str]:
    """A block's commands, one a paragraph, without their comment lines."""
    return [
        "\n".join(line for line in paragraph.splitlines() if not line.startswith("#"))
        for paragraph in code.strip().split("\n\n")
    ]


@once
def test_watching_live_traffic(shell: Shell, deployment: Callable[..., Deployment]):
    """Its four commands in turn: the validating proxy (a call through it, then Ctrl-C: its
    reports), a test run wrapped (a test of the reader's in tests/integration, through
    $CONFORMANCE_PROXY_URL), the relay (the deployment subscribed to it delivers an event,
    forwarded to the reader's endpoint, here a receiver on loopback verifying its signature), and
    the proxy in the mock's inspector (its page answers, and a call through it is journalled)."""
    target = deployment("--allow-private-callbacks")  # the relay is on loopback
    validating, wrapping, relaying, inspected = commands(example("Watching live traffic #1").code)
    path = os.pathsep.join([str(shell.cwd / ".venv" / "bin"), shell.env.get("PATH", "")])
    here = Shell(shell.cwd, shell.port, shell.env | target.variables("") | {"PATH": path})
    key = target.key("owner")

    port = free_port()
    proxy = here.start(liberties(validating, {"url": target.url, "proxy_port": port}))
    try:
        read_until(proxy, "listening on", timeout=60)  # Ctrl-C is taken from then on
        answer = httpx.get(
            f"http://127.0.0.1:{port}/v1/projects", headers={"Authorization": f"Bearer {key}"}
        )
        assert answer.status_code == 200, answer.text
    finally:
        out = stop(proxy)
    assert proxy.returncode == 0, out
    assert "/v1/projects" in (shell.cwd / "proxy.html").read_text()
    har = json.loads((shell.cwd / "proxy.har").read_text())
    assert any(e["request"]["url"].endswith("/v1/projects") for e in har["log"]["entries"])
    assert key not in (shell.cwd / "proxy.har").read_text()

    (shell.cwd / "tests" / "integration").mkdir(parents=True)
    (shell.cwd / "tests" / "integration" / "test_example.py").write_text(INTEGRATION_TEST)
    ran = run_block(shell, liberties(wrapping, {"url": target.url}), here.env)
    assert ran.status == 0, ran.out
    assert "1 passed" in ran.out, ran.out
    assert "<testsuite" in (shell.cwd / "proxy.xml").read_text()

    relay_port = free_port()
    with webhook_receiver() as receiver, httpx.Client(base_url=target.url, timeout=30) as http:
        subscribed = http.post(
            "/v1/webhook-subscriptions",
            json={
                "url": f"http://127.0.0.1:{relay_port}/hooks",
                "events": ["job.completed"],
                "secret": receiver.secret,
            },
            headers={"Authorization": f"Bearer {key}", "Idempotency-Key": "readme-relay"},
        )
        assert subscribed.status_code == 200, subscribed.text
        code = liberties(
            relaying, {"url": target.url, "relay_port": relay_port, "hooks": receiver.url}
        )
        assert "--listen" not in code  # its proxy would take the default 127.0.0.1:8788
        code += f" --listen 127.0.0.1:{free_port()}"
        relay = Shell(
            shell.cwd, shell.port, here.env | {"WEBHOOK_SECRET": str(receiver.secret)}
        ).start(code)
        try:
            read_until(relay, "listening on", timeout=60)
            wait_for_port(relay_port, timeout=60, process=relay)
            triggered = http.post("/_mock/events/trigger", json={"event": "job.completed"})
            assert triggered.status_code == 200, triggered.text
            http.post("/_mock/deliveries/flush", json={"timeoutSeconds": 15})
            receiver.wait(1, event="job.completed", timeout=30)
        finally:
            out = stop(relay)
        assert relay.returncode == 0, out
        assert "FINDING" not in out, out

    port = free_port()
    proxy = here.start(liberties(inspected, {"url": target.url, "proxy_port": port}))
    try:
        read_until(proxy, "listening on", timeout=60)  # Ctrl-C is taken from then on
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            assert http.get("/_mock/ui").status_code == 200
            answer = http.get("/v1/projects", headers={"Authorization": f"Bearer {key}"})
            assert answer.status_code == 200, answer.text
            deadline = time.monotonic() + 30
            while True:  # journalled as it passes (judged a moment later)
                journal = http.get("/_mock/requests", params={"limit": 10}).json()
                if any(e.get("path") == "/v1/projects" for e in journal["requests"]):
                    break
                assert time.monotonic() < deadline, journal
                time.sleep(0.2)
    finally:
        out = stop(proxy)
    assert proxy.returncode == 0, out


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
