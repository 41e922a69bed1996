"""A PostgreSQL server for the tests: the one ``MOCKSERVER_TEST_PG_URL`` names, else a
throwaway cluster started here from the machine's PostgreSQL binaries (``initdb``; as the
``postgres`` user when the tests run as root), on a free loopback port, stopped at exit.

:func:`server_url` answers None when neither is possible; tests then skip with the reason
(:data:`UNAVAILABLE`), except under CI (``CI`` set), where a missing server is a failure.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

UNAVAILABLE: str = ""
_url: str | None = None
_tried = False


def _binaries() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    for root in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (root / "initdb").exists():
            return root
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


class Cluster:
    """A PostgreSQL cluster a test may stop, start and restart with ``pg_ctl``: by default a
    throwaway one of this process's own (its data in a temporary folder, on a free loopback
    port), removed at exit; or (:func:`restartable_server`) the one CI started."""

    def __init__(self, bin_dir: Path, base: Path | None = None, options: str = "") -> None:
        self.bin_dir = bin_dir
        self.owned = base is None
        self.base = Path(tempfile.mkdtemp(prefix="mockserver-pg-")) if base is None else base
        self.data = self.base / "data"
        if self.owned:
            if os.geteuid() == 0:
                shutil.chown(self.base, "postgres")
            port = _free_port()
            self.options = f"-p {port} -k {self.base} -c listen_addresses=127.0.0.1 -c fsync=off"
            self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
            subprocess.run(
                _as_postgres([str(bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres",
                              "--auth=trust", "-E", "UTF8", "--no-sync"]),
                check=True, capture_output=True, timeout=120,
            )  # fmt: skip
            atexit.register(self.remove)
            self.pg_ctl("start")
        else:  # a server started elsewhere: its own options, a schema of this test's own
            self.options = options
            self.url = fresh_schema_url()

    def pg_ctl(self, action: str, *options: str) -> None:
        """``pg_ctl ACTION`` on this cluster, waiting until it is done (``-w``)."""
        subprocess.run(
            _as_postgres([str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-w", "-l",
                          str(self.base / "log"), "-o", self.options, *options, action]),
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip

    def remove(self) -> None:
        if not self.owned:
            return
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            self.pg_ctl("stop", "-m", "immediate")
        shutil.rmtree(self.base, ignore_errors=True)


def own_cluster() -> Cluster:
    """A cluster of the caller's own (never the shared server: a test may restart it);
    raises :class:`RuntimeError` when the machine has no PostgreSQL binaries or it fails."""
    bin_dir = _binaries()
    if bin_dir is None:
        raise RuntimeError("no PostgreSQL binaries (initdb, pg_ctl): install postgresql")
    try:
        return Cluster(bin_dir)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RuntimeError(f"could not start a PostgreSQL server here: {exc}") from exc


def restartable_server() -> Cluster:
    """The server a restart test may stop and start: the one CI started for the whole run
    when ``MOCKSERVER_TEST_PG_DIR`` names its folder (data in ``data/``, log in ``log``,
    started with ``MOCKSERVER_TEST_PG_OPTIONS``; ``.ci/run`` sets them only for a step of
    its own, when no other test shares the server), else :func:`own_cluster`."""
    folder = os.environ.get("MOCKSERVER_TEST_PG_DIR")
    if not folder:
        return own_cluster()
    bin_dir = _binaries()
    if bin_dir is None:
        raise RuntimeError("no PostgreSQL binaries (initdb, pg_ctl): install postgresql")
    return Cluster(bin_dir, Path(folder), os.environ["MOCKSERVER_TEST_PG_OPTIONS"])


def _start() -> str | None:
    global UNAVAILABLE
    try:
        return own_cluster().url
    except RuntimeError as exc:
        UNAVAILABLE = str(exc)
        if "no PostgreSQL binaries" in UNAVAILABLE:
            UNAVAILABLE = "no PostgreSQL server: set MOCKSERVER_TEST_PG_URL or install postgresql"
        return None


def server_url() -> str | None:
    """The URL of a server to test against (a database the tests may fill), or None."""
    global _url, _tried
    if not _tried:
        _tried = True
        _url = os.environ.get("MOCKSERVER_TEST_PG_URL") or _start()
    return _url


def fresh_schema_url() -> str:
    """A URL whose connections use a new, empty schema (one mock's tables, apart)."""
    import psycopg

    url = server_url()
    if url is None:
        raise RuntimeError(UNAVAILABLE)
    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options=-csearch_path%3D{schema}"


def required_server_url() -> str:
    """The PostgreSQL server the tests share: skipped without one, except under CI (which
    installs PostgreSQL), where a missing server fails the test."""
    import os

    import pytest

    url = server_url()
    if url is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs a PostgreSQL server for these tests: {UNAVAILABLE}")
        pytest.skip(UNAVAILABLE)
    return url
