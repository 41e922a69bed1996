"""``compose.yaml`` as the container engine's own compose reads it: Debian's podman-compose.

podman-compose 1.0.3 (Debian bookworm) has no ``config`` command; ``--dry-run up`` resolves the
file (interpolation, the build, the order of ``depends_on``) and prints the ``podman`` commands
it would run, which this test reads. It runs none of them: ``podman run`` is refused on the kit's
CI machine and ``postgres:15`` would come from a registry. (Even in a dry run it creates the
project's volume and network; the test removes both.)
"""

from __future__ import annotations

import os
import shlex
import subprocess
import uuid
from pathlib import Path

import yaml

from tests.container.engine import require

ROOT = Path(__file__).resolve().parents[2]
ENV_TOKEN = "MOCKSERVER_CONTROL_TOKEN"


def dry_run(project: str) -> list[list[str]]:
    """The podman commands ``podman-compose up`` would run, each as its words."""
    env = {**os.environ, ENV_TOKEN: "a-token-from-the-shell"}
    try:
        run = subprocess.run(
            ["podman-compose", "--dry-run", "-p", project, "-f", "compose.yaml", "up", "-d"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        for kind, name in (("volume", f"{project}_mock-state"), ("network", f"{project}_default")):
            subprocess.run(["podman", kind, "rm", "-f", name], capture_output=True)
    assert run.returncode == 0, run.stdout + run.stderr
    return [shlex.split(line) for line in run.stdout.splitlines() if line.startswith("podman ")]


def test_podman_compose_resolves_the_file_into_the_documented_services():
    require("podman-compose", "podman")
    project = f"cgcas-compose-{uuid.uuid4().hex[:8]}"
    commands = dry_run(project)
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    image = compose["services"]["mockserver"]["image"]
    assert ["podman", "build", "-t", image, "-f", "./Dockerfile", "."] in commands, commands
    runs = {
        next(w.removeprefix("--name=") for w in c if w.startswith("--name=")): c
        for c in commands
        if c[1] == "run"
    }
    postgres, mockserver = f"{project}_postgres_1", f"{project}_mockserver_1"
    assert list(runs) == [postgres, mockserver], "postgres starts first"
    mock = runs[mockserver]
    # Every ${...} was resolved: none reaches podman as those characters.
    assert not [w for c in commands for w in c if "${" in w], commands
    # The token is passed on from the environment compose runs in (podman's `-e NAME`).
    environment = [mock[i + 1] for i, w in enumerate(mock) if w == "-e"]
    assert ENV_TOKEN in environment, environment
    assert mock[mock.index("-p") + 1] == "8080:8080"
    command = compose["services"]["mockserver"]["command"]
    assert mock[mock.index(image) + 1 :] == command
    assert command[:5] == ["mockserver", "--host", "0.0.0.0", "--port", "8080"]
    database = runs[postgres]
    assert f"{project}_mock-state:/var/lib/postgresql/data" in database
