"""When the container tests run: in ``.ci/run``'s step of their own, or where asked.

They build an image (about two minutes), so the README's test command and the runs on the SQL
stores skip them: ``.ci/run`` runs them once, alone, with ``MOCKSERVER_TEST_CONTAINER=1``, after
installing Debian's ``buildah``, ``podman``, ``mmdebstrap`` and ``podman-compose``. Asked to run
where those are missing (or not as root), they are skipped with the reason, except under CI
(``CI`` set), where that is a failure.
"""

from __future__ import annotations

import os
import shutil

import pytest

ASKED = "MOCKSERVER_TEST_CONTAINER"
INSTALL = "apt-get install buildah podman mmdebstrap podman-compose"


def require(*tools: str) -> None:
    """Skip (or, under CI, fail) unless the container tests were asked for and can run."""
    if os.environ.get(ASKED) != "1":
        pytest.skip(
            f"builds and runs the mock's image (about two minutes): .ci/run runs it once, in a "
            f"step of its own; set {ASKED}=1 to run it here"
        )
    missing = [tool for tool in tools if shutil.which(tool) is None]
    why = ""
    if missing:
        why = f"{', '.join(missing)} not installed (Debian: {INSTALL})"
    elif os.geteuid() != 0:
        why = "buildah's chroot isolation and mmdebstrap's root mode need root"
    if why and os.environ.get("CI"):
        pytest.fail(f"CI builds and calls the mock's image: {why}")
    if why:
        pytest.skip(why)
