"""The mock's image, built from the repository's Dockerfile and called, for real.

``build_and_call.sh`` holds every step (a base from Debian's packages, ``buildah build``, the
image's own command under ``buildah run``, the calls, the stop) and prints what it checked; this
test runs it and fails with its output when any check fails.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.container.engine import require

SCRIPT = Path(__file__).with_name("build_and_call.sh")
CHECKS = (
    "the image's configured user is mock, not root",
    "GET /v1/openapi.json answers 200",
    "GET /v1/capabilities answers 200 with the fixture key sk_test_acme_owner",
    "the control plane (GET /_mock/clock) refuses a call without its token",
    "the HEALTHCHECK command succeeds against the started mock",
    "stopped; the HEALTHCHECK command then fails",
)


def test_the_image_builds_runs_as_a_user_answers_and_keeps_its_control_plane_closed():
    require("mmdebstrap", "buildah", "podman", "curl")
    run = subprocess.run(
        [str(SCRIPT)], capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL
    )
    print(run.stdout)  # the timings and checks, shown with -s or on failure
    assert run.returncode == 0, f"{SCRIPT.name} exited {run.returncode}:\n{run.stdout}{run.stderr}"
    lines = run.stdout.splitlines()
    passed = [line.removeprefix("ok: ") for line in lines if line.startswith("ok: ")]
    for check in CHECKS:
        assert any(line.startswith(check) for line in passed), f"not checked: {check}\n{run.stdout}"
