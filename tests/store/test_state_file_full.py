"""``--state PATH``: the state file cannot be written (its disk full), then can again.

A real ``mockserver`` process on a SQLite file. The disk is filled for that process alone:
its file-size limit (``RLIMIT_FSIZE``, set from outside with ``prlimit``) is lowered to 0, so
every write to the file fails as it would on a full disk (a ``chmod`` would not do: the tests
run as root, and the mock holds the file open). While it is full, writes answer
``503 upstream_unavailable`` with ``Retry-After`` and change nothing; reads are served from
what was kept. Once the limit is back, the same mock serves writes again, and every write
acknowledged with a 2xx is there, charged once.
"""

from __future__ import annotations

import resource
from contextlib import contextmanager

from tests.store.process import running
from tests.store.test_durable import clients


@contextmanager
def disk_full(pid: int):
    """No file of process ``pid`` can grow (nor be written past its start) until the end."""
    soft, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (0, hard))
    try:
        yield
    finally:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (soft, hard))


def test_a_full_disk_answers_503_then_the_mock_recovers(tmp_path):
    with running("--state", str(tmp_path / "state.db")) as mock:
        assert mock.process is not None
        api, control, http = clients(mock.base_url)
        kept = api.post("/v1/products", json={"name": "before"}, headers={"Idempotency-Key": "k0"})
        assert kept.status_code == 200, kept.text
        balance = control.credits()
        story = {"projectId": "prj_acme_01", "story": "A walk in the rain."}

        with disk_full(mock.process.pid):
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

    with running("--state", str(tmp_path / "state.db")) as mock:
        api, control, http = clients(mock.base_url)
        names = [p["name"] for p in api.walk("/v1/products", "products", limit=100)]
        assert "before" in names and "while full" in names, "acknowledged writes are on disk"
        assert names.count("while full") == 1
        http.close()
