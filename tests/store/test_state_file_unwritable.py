"""``--state PATH``: the state file cannot be written (its disk full, or the file made
read-only), then can again.

A real ``mockserver`` process on a SQLite file, made unwritable from outside in two ways:

- **Disk full**, for that process alone: its file-size limit (``RLIMIT_FSIZE``, set with
  ``prlimit``) is lowered to 0, so every write to the file fails as on a full disk.
- **Read-only**: the state file and its WAL files are made immutable (``chattr +i``), which
  refuses writes even through the descriptors the mock holds open, and even to root (a
  ``chmod`` would not do: the tests run as root, and an open descriptor keeps its mode).

While the file cannot be written, writes answer ``503 upstream_unavailable`` with
``Retry-After`` and change nothing; reads are served from what was kept. Once it can be
written again, the same mock serves writes, and every write acknowledged with a 2xx is there,
charged once.
"""

from __future__ import annotations

import resource
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from tests.store.process import running
from tests.store.test_durable import clients


@contextmanager
def disk_full(pid: int, state: Path) -> Iterator[None]:
    """No file of process ``pid`` can grow (nor be written past its start) until the end."""
    soft, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (0, hard))
    try:
        yield
    finally:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (soft, hard))


def _immutable(paths: list[Path], flag: str) -> subprocess.CompletedProcess:
    return subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True, text=True)


@contextmanager
def read_only(pid: int, state: Path) -> Iterator[None]:
    """The state file and its ``-wal`` and ``-shm`` files immutable until the end."""
    files = [path for path in state.parent.iterdir() if path.name.startswith(state.name)]
    made = _immutable(files, "+i")
    if made.returncode != 0:  # a file system without the attribute (tmpfs, overlay...)
        _immutable(files, "-i")
        pytest.skip(f"cannot make the state file read-only here: chattr: {made.stderr.strip()}")
    try:
        yield
    finally:
        _immutable(files, "-i")


Unwritable = Callable[[int, Path], AbstractContextManager[None]]


@pytest.mark.parametrize("unwritable", [disk_full, read_only], ids=["disk-full", "read-only"])
def test_an_unwritable_state_file_answers_503_then_the_mock_recovers(
    tmp_path: Path, unwritable: Unwritable
) -> None:
    state = tmp_path / "state.db"
    with running("--state", str(state)) as mock:
        assert mock.process is not None
        api, control, http = clients(mock.base_url)
        kept = api.post("/v1/products", json={"name": "before"}, headers={"Idempotency-Key": "k0"})
        assert kept.status_code == 200, kept.text
        balance = control.credits()
        story = {"projectId": "prj_acme_01", "story": "A walk in the rain."}

        with unwritable(mock.process.pid, state):
            for path, body in (
                ("/v1/products", {"name": "while full"}),
                ("/v1/video/render", story),
            ):
                full = api.post(path, json=body, headers={"Idempotency-Key": f"full {path}"})
                assert full.status_code == 503, full.text
                assert full.json()["code"] == "upstream_unavailable"
                assert "cannot be written" in full.json()["error"]
                assert int(full.headers["Retry-After"]) >= 1
            assert control.credits() == balance, "nothing was charged"
            listed = api.get("/v1/products", params={"limit": 100})
            assert listed.status_code == 200, "reads are served from what was kept"
            names = [p["name"] for p in listed.json()["products"]]
            assert "before" in names and "while full" not in names, "nothing half-written"

        told = [line for line in mock.lines if "store failed" in line]
        assert told and not any("cannot rollback" in line for line in told), "the first error"
        # The same process, the same file: the requests retried with their keys apply once.
        made = api.post(
            "/v1/products",
            json={"name": "while full"},
            headers={"Idempotency-Key": "full /v1/products"},
        )
        assert made.status_code == 200, made.text
        render = api.post("/v1/video/render", json=story, headers={"Idempotency-Key": "again"})
        assert render.status_code in (200, 202), render.text
        charged = balance - control.credits()
        assert charged > 0
        replay = api.post("/v1/video/render", json=story, headers={"Idempotency-Key": "again"})
        assert replay.headers.get("idempotent-replayed") == "true"
        assert balance - control.credits() == charged, "charged once"
        http.close()

    with running("--state", str(state)) as mock:
        api, control, http = clients(mock.base_url)
        names = [p["name"] for p in api.walk("/v1/products", "products", limit=100)]
        assert "before" in names and "while full" in names, "acknowledged writes are on disk"
        assert names.count("while full") == 1
        http.close()
