"""Run pinned code generators over spec/openapi.yaml, once per session, into tmp dirs.

The Python generators (openapi-python-client, datamodel-code-generator) come from the `test`
extra; the TypeScript ones (openapi-typescript, typescript) are pinned in ts/package.json and
ts/package-lock.json and installed with `npm ci` into ts/node_modules, which is kept between runs
(and gitignored): a later session reinstalls only when the lock file changed.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from mockserver.resources import spec_path

HERE = Path(__file__).resolve().parent
TS_DIR = HERE / "ts"
NODE_MODULES = TS_DIR / "node_modules"
INSTALL_STAMP = NODE_MODULES / ".cgcas-lock-sha256"
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def spec() -> Path:
    return spec_path()


@pytest.fixture(scope="session")
def doc(spec: Path) -> dict[str, Any]:
    with open(spec, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def tool_env() -> dict[str, str]:
    """The environment generators run in: this venv's tools (ruff, the generators) first."""
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def run(args: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=tool_env(), capture_output=True, text=True, timeout=timeout
    )


def venv_tool(name: str) -> str:
    path = VENV_BIN / name
    if not path.exists():
        pytest.fail(f"{name} is not installed in this venv: pip install -e '.[test]'")
    return str(path)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    # pytest-xdist workers share ts/node_modules: one installs while the others wait.
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def node_tools() -> Path:
    """ts/node_modules/.bin, installed with `npm ci` from the lock file when it changed."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        pytest.skip(
            f"{' and '.join(missing)} not installed: the TypeScript generator needs Node.js"
        )
    lock_sha = hashlib.sha256((TS_DIR / "package-lock.json").read_bytes()).hexdigest()
    with _locked(TS_DIR / ".npm-ci.lock"):
        if not INSTALL_STAMP.exists() or INSTALL_STAMP.read_text().strip() != lock_sha:
            result = run(["npm", "ci", "--no-audit", "--no-fund"], cwd=TS_DIR)
            assert result.returncode == 0, result.stdout + result.stderr
            INSTALL_STAMP.write_text(lock_sha + "\n")
    return NODE_MODULES / ".bin"


def operation_ids(doc: dict[str, Any]) -> list[str]:
    return [
        op["operationId"]
        for item in doc["paths"].values()
        for method, op in item.items()
        if method in ("get", "put", "post", "patch", "delete")
    ]
