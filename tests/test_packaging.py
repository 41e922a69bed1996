"""Packaging: a plain ``pip install`` of the kit is the mock alone, and still a good citizen.

The kit is installed, without extras, into a fresh virtual environment (no system site-packages)
from a copy of the sources, as a user would install it; its dependencies come from PyPI, or the
index pip is configured with (pip's cache makes a second run quicker, where the index's answers
may be cached). The pip that installs is this interpreter's, run by the environment's interpreter
(what ``pip --python`` does), when it can: the environment then needs no pip of its own. The test
is skipped only when PyPI cannot be reached.

The container files are checked statically here; tests/container builds the image and calls it.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from mockserver.webhook_cli import ENV_TOKEN

ROOT = Path(__file__).resolve().parents[1]
#: What a source distribution of the kit holds (and the Dockerfile copies).
SOURCES = (
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "spec",
    "fixtures",
    "mockserver",
    "conformance",
)
EXTRA_MESSAGE = "pip install 'cgcas-kit[conformance]'"
PIP_TIMEOUT = 600
#: What the environment's processes do not inherit from the test's: where Python would look for
#: modules and bytecode (the kit's tests keep theirs under their own prefix: tests/conftest.py).
NOT_PASSED_ON = (
    "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX",
)  # fmt: skip


def index_url() -> str:
    configured = os.environ.get("PIP_INDEX_URL")
    if not configured:
        found = subprocess.run(
            [sys.executable, "-m", "pip", "config", "get", "global.index-url"],
            capture_output=True,
            text=True,
        )
        configured = found.stdout.strip() if found.returncode == 0 else ""
    return (configured or "https://pypi.org/simple").rstrip("/")


def pypi_unreachable() -> str | None:
    """Why PyPI cannot be reached, or None when it can."""
    url = f"{index_url()}/pip/"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            response.read(1)
    except (urllib.error.URLError, OSError) as exc:
        return f"PyPI is unreachable ({url}: {exc}); the kit's dependencies come from there"
    return None


def outer_pip() -> str | None:
    """This interpreter's pip, when it can install into another environment (pip 22.3 and
    later): the environment is then made without a pip of its own (~4 s less).

    What is returned is the script ``pip --python PYTHON`` hands to PYTHON (``__pip-runner__.py``:
    this copy of pip, run in that environment), run directly by the environment's interpreter:
    ``pip --python`` would first start this interpreter only to start that one (~0.2 s of CPU
    each install)."""
    try:
        version = metadata.version("pip")
    except metadata.PackageNotFoundError:
        return None
    if tuple(int(part) for part in re.findall(r"\d+", version)[:2]) < (22, 3):
        return None
    runner = Path(metadata.distribution("pip").locate_file("pip/__pip-runner__.py"))
    return str(runner) if runner.is_file() else None


class Venv:
    def __init__(self, path: Path, cwd: Path) -> None:
        self.path = path
        self.pip = outer_pip()
        created = subprocess.run(
            [sys.executable, "-m", "venv", *(["--without-pip"] if self.pip else []), str(path)],
            capture_output=True,
            text=True,
        )
        assert created.returncode == 0, created.stderr
        self.cwd = cwd  # outside the repository: imports must come from the environment
        self.bin = path / ("Scripts" if os.name == "nt" else "bin")
        self.python = str(self.bin / "python")
        # The environment's interpreter writes the bytecode of what it imports, as Python does by
        # default: each run after the first reads it (a pytest run: ~0.6 s of CPU, then ~0.25).
        self.env = {k: v for k, v in os.environ.items() if k not in NOT_PASSED_ON} | {
            "PIP_DISABLE_PIP_VERSION_CHECK": "1"
        }

    def run(
        self, *argv: str, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        program = argv[0] if argv[0] == self.python else str(self.bin / argv[0])
        return subprocess.run(
            [program, *argv[1:]],
            capture_output=True,
            text=True,
            cwd=self.cwd,
            env=self.env if env is None else env,
            timeout=timeout,
        )

    def py(self, code: str) -> subprocess.CompletedProcess[str]:
        return self.run(self.python, "-c", code)

    def pip_install(self, *what: str) -> None:
        """``pip install`` into the environment, without compiling all it installs to bytecode:
        the checks import little of it, and their runs write the bytecode of what they import."""
        pip = [self.python, self.pip] if self.pip else [self.python, "-m", "pip"]
        done = self.run(
            *pip, "install", "-q", "--no-compile", *what,
            env=self.env | {"PYTHONDONTWRITEBYTECODE": "1"}, timeout=PIP_TIMEOUT,
        )  # fmt: skip
        assert done.returncode == 0, f"pip install {' '.join(what)}:\n{done.stdout}{done.stderr}"


def copy_sources(target: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")
    target.mkdir()
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            # mockserver/_bundled holds relative symlinks to spec/ and fixtures/: keep them links.
            shutil.copytree(source, target / name, symlinks=True, ignore=ignore)
        else:
            shutil.copy2(source, target / name)
    return target


def test_a_plain_install_is_the_mock_alone(tmp_path: Path):
    """One test, in order, so that the environment is built once (also under pytest-xdist)."""
    if reason := pypi_unreachable():
        pytest.skip(reason)
    sources = copy_sources(tmp_path / "src")
    (tmp_path / "work").mkdir()
    venv = Venv(tmp_path / "venv", tmp_path / "work")
    venv.pip_install(wheel_of(sources, tmp_path / "dist"))  # no extras

    check_the_mock_runs(venv)
    check_the_inspector_is_packaged(venv)
    check_the_license(venv)
    check_the_extras_are_not_installed(venv)
    for argv in (["conformance", "--help"], ["conformance", "run", "--mock"]):
        check_conformance_names_the_extra(venv, argv)
    check_pytest_alone_is_not_broken_by_the_plugin(venv)
    check_an_editable_clone_is_told_its_own_command(venv, sources)


def wheel_of(sources: Path, dist: Path) -> str:
    """The kit's wheel, built from ``sources`` as a release is (installed, pip records it came
    from a file, not a directory: tests/test_extras.py tells the ways apart)."""
    pip = [sys.executable, "-m", "pip"]
    built = subprocess.run(
        [*pip, "wheel", "-q", "--no-deps", "-w", str(dist), str(sources)],
        capture_output=True, text=True, timeout=PIP_TIMEOUT,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = dist.glob("cgcas_kit-*.whl")
    return str(wheel)


def check_the_mock_runs(venv: Venv) -> None:
    version = venv.run("mockserver", "--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == "mockserver 0.1.0"
    # Imported from the environment (not the repository), with its package data, and the fast
    # event loop and HTTP parser of uvicorn[standard].
    built = venv.py(
        "import mockserver.app, uvloop, httptools\n"
        "app = mockserver.app.create_app()\n"
        "print(mockserver.app.__file__)\n"
        "print(app.runtime.contract is not None)\n"
    )
    assert built.returncode == 0, built.stderr
    where, contract = built.stdout.split()
    assert Path(where).is_relative_to(venv.path) and contract == "True"


def check_the_inspector_is_packaged(venv: Venv) -> None:
    """The inspector's page and files (GET /_mock/ui) are in the installed package."""
    found = venv.py(
        "from importlib import resources\n"
        "ui = resources.files('mockserver.control') / 'ui'\n"
        "print(' '.join(sorted(p.name for p in ui.iterdir())))\n"
    )
    assert found.returncode == 0, found.stderr
    shipped = sorted(p.name for p in (ROOT / "mockserver" / "control" / "ui").iterdir())
    assert found.stdout.split() == shipped == ["app.css", "app.js", "index.html"]


def check_the_license(venv: Venv) -> None:
    found = venv.py(
        "import json\n"
        "from importlib.metadata import distribution\n"
        "d = distribution('cgcas-kit')\n"
        "print(json.dumps([d.metadata['License-Expression'], [str(f) for f in d.files]]))\n"
    )
    assert found.returncode == 0, found.stderr
    expression, files = json.loads(found.stdout)
    assert expression == "Apache-2.0"
    assert any(f.endswith(".dist-info/licenses/LICENSE") for f in files), files


def check_the_extras_are_not_installed(venv: Venv) -> None:
    extras = ("schemathesis", "hypothesis", "rich", "openapi_core", "pytest")
    found = venv.py(
        "from importlib.util import find_spec\n"
        f"print(' '.join(module for module in {extras!r} if find_spec(module)))\n"
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == [], f"installed without extras: {found.stdout}"


def check_conformance_names_the_extra(venv: Venv, argv: list[str]) -> None:
    result = venv.run(*argv)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("conformance: the conformance suite is not installed")
    assert EXTRA_MESSAGE in result.stderr


def check_pytest_alone_is_not_broken_by_the_plugin(venv: Venv) -> None:
    """The pytest11 entry point is loaded by any pytest in the environment.

    A plain run passes, with the plugin's options registered (it was loaded through the entry
    point; ``pytest --help`` would list them); asking for the suite names the extra."""
    venv.pip_install("pytest")
    (venv.cwd / "test_plain.py").write_text(
        "def test_nothing():\n"
        "    pass\n"
        "\n"
        "\n"
        "def test_the_plugin_is_loaded(pytestconfig):\n"
        "    # ValueError (no option named ...) when the entry point was not loaded\n"
        "    assert pytestconfig.getoption('--conformance-base-url') is None\n"
    )
    plain = venv.run(venv.python, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert plain.returncode == 0 and "2 passed" in plain.stdout, plain.stdout + plain.stderr
    asked = venv.run(
        venv.python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
        "--conformance-base-url", "http://127.0.0.1:9", "--conformance-api-key", "k",
    )  # fmt: skip
    assert asked.returncode == 4, asked.stdout + asked.stderr  # pytest's usage error
    assert EXTRA_MESSAGE in asked.stderr and "Traceback" not in asked.stderr


def check_an_editable_clone_is_told_its_own_command(venv: Venv, sources: Path) -> None:
    """Installed again as an editable clone, the hint names ``pip install -e`` of the clone."""
    venv.pip_install("--no-deps", "-e", str(sources))
    result = venv.run("conformance", "--help")
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"install it with: pip install -e '{sources}[conformance]'\n" in result.stderr


def test_conformance_without_its_extra_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """The same message as in the plain install above, without needing PyPI (the command it
    names, for each way the kit can be installed: tests/test_extras.py)."""
    from conformance import cli
    from mockserver.extras import install_command

    real = cli.find_spec
    monkeypatch.setattr(cli, "find_spec", lambda name: None if name == "rich" else real(name))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (
        "conformance: the conformance suite is not installed (missing: rich); "
        f"install it with: {install_command('conformance')}\n"
    )


# ---------------------------------------------------------------------------------------------
# Container files (static checks; tests/container builds and calls the image)


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    logical: list[str] = []
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip()) for line in logical]


def dockerignored(path: str) -> bool:
    """Whether .dockerignore leaves ``path`` out of the build context (last matching rule wins)."""
    rules = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for rule in rules:
        negated = rule.startswith("!")
        pattern = rule.removeprefix("!").strip("/")
        patterns = {pattern, pattern.removeprefix("**/")}
        if any(fnmatch.fnmatchcase(p, pat) for p in prefixes for pat in patterns):
            ignored = not negated
    return ignored


def test_the_dockerfile_copies_what_exists_and_runs_the_documented_command():
    instructions = dockerfile_instructions()
    # Every stage starts from the BASE build argument, python:3.11-slim unless CI names its own.
    froms = [arg for op, arg in instructions if op == "FROM"]
    assert froms and all(arg.split()[0] == "${BASE}" for arg in froms)
    assert ("ARG", "BASE=python:3.11-slim") in instructions
    copied = []
    for op, arg in instructions:
        if op in ("COPY", "ADD"):
            words = shlex.split(arg)
            if any(w.startswith("--from=") for w in words):
                continue
            sources = [w for w in words if not w.startswith("--")][:-1]
            assert sources, arg
            copied += sources
    for source in copied:
        assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"
        assert not dockerignored(source), f"COPY {source}: left out by .dockerignore"
    for source in SOURCES:  # everything the wheel is built from
        assert source in {c.rstrip("/") for c in copied}, f"the image is built without {source}"
    final = instructions[max(i for i, (op, _) in enumerate(instructions) if op == "FROM") :]
    ops = dict(final)
    assert json.loads(ops["CMD"]) == ["mockserver", "--host", "0.0.0.0", "--port", "8080"]
    # Off loopback the control plane needs a token: the image takes it from the environment.
    envs = " ".join(arg for op, arg in final if op == "ENV")
    assert re.search(rf"\b{ENV_TOKEN}=", envs), f"the image names no ${ENV_TOKEN}"
    assert ops["EXPOSE"] == "8080"
    assert ops["USER"] not in ("root", "0")
    assert "/v1/openapi.json" in ops["HEALTHCHECK"] and "urllib" in ops["HEALTHCHECK"]
    installs = [arg for op, arg in instructions if op == "RUN" and "pip " in arg]
    assert installs and not any("[test]" in arg or "[conformance]" in arg for arg in installs)
    assert not dockerignored("mockserver/app.py") and dockerignored(".venv")


def test_compose_starts_the_image():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    service = compose["services"]["mockserver"]
    assert service["build"] == "."
    assert "8080:8080" in service["ports"]
    # Two workers over the PostgreSQL service, whose data sits in a named volume.
    command = service["command"]
    store = command[command.index("--store") + 1]
    assert command[:5] == ["mockserver", "--host", "0.0.0.0", "--port", "8080"]
    assert store.startswith("postgresql://") and "@postgres:5432/" in store
    assert int(command[command.index("--workers") + 1]) > 1
    assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
    # The control plane's token comes from the environment compose runs in (a name without a
    # value: tests/container/test_compose.py shows how podman-compose reads it).
    assert ENV_TOKEN in service["environment"] and service["environment"][ENV_TOKEN] is None
    database = compose["services"]["postgres"]
    volume = database["volumes"][0].split(":")[0]
    assert volume in compose["volumes"] and database["image"].startswith("postgres:")
