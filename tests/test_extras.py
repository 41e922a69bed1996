"""The install hints name the command for the way the kit was installed (mockserver/extras.py).

Each way is a real distribution's metadata (a ``.dist-info`` directory with the
``direct_url.json`` pip writes, PEP 610), read through importlib.metadata; the hints are read
where a user meets them: ``conformance`` without its extra, the PostgreSQL store without psycopg.
"""

from __future__ import annotations

import builtins
import json
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from mockserver import extras


def installed(tmp_path: Path, direct_url: dict[str, Any] | None) -> metadata.Distribution:
    """The kit's distribution as pip leaves it, with ``direct_url`` (None: from an index)."""
    info = tmp_path / "site-packages" / "cgcas_kit-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.4\nName: cgcas-kit\nVersion: 0.1.0\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return metadata.PathDistribution(info)


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    path = tmp_path / "my clone"  # a space: the command must still be one argument
    path.mkdir()
    return path


def ways(tmp_path: Path, clone: Path) -> dict[str, tuple[metadata.Distribution, str]]:
    url = clone.as_uri()
    return {
        "editable clone": (
            installed(tmp_path / "e", {"url": url, "dir_info": {"editable": True}}),
            f"pip install -e '{clone}[conformance]'",
        ),
        "directory": (
            installed(tmp_path / "d", {"url": url, "dir_info": {}}),
            f"pip install '{clone}[conformance]'",
        ),
        "wheel file": (
            installed(
                tmp_path / "w",
                {"url": "file:///tmp/cgcas_kit-0.1.0-py3-none-any.whl", "archive_info": {}},
            ),
            "pip install 'cgcas-kit[conformance]'",
        ),
        "index": (installed(tmp_path / "i", None), "pip install 'cgcas-kit[conformance]'"),
    }


@pytest.mark.parametrize("way", ["editable clone", "directory", "wheel file", "index"])
def test_the_command_fits_the_install(tmp_path: Path, clone: Path, way: str):
    distribution, expected = ways(tmp_path, clone)[way]
    assert extras.install_command("conformance", distribution) == expected


def test_a_clone_that_is_gone_gets_the_wheel_command(tmp_path: Path):
    gone = tmp_path / "deleted"
    distribution = installed(tmp_path, {"url": gone.as_uri(), "dir_info": {"editable": True}})
    assert extras.install_command("test", distribution) == "pip install 'cgcas-kit[test]'"


def test_uninstalled_source_tree_gets_the_editable_command(monkeypatch: pytest.MonkeyPatch):
    def not_found(name: str) -> metadata.Distribution:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(extras.metadata, "distribution", not_found)
    root = Path(extras.__file__).resolve().parents[1]
    assert extras.install_command("postgresql") == f"pip install -e '{root}[postgresql]'"


@pytest.mark.parametrize("way", ["editable clone", "wheel file"])
def test_conformance_without_its_extra_names_the_command(
    tmp_path: Path,
    clone: Path,
    way: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    from conformance import cli

    distribution, expected = ways(tmp_path, clone)[way]
    monkeypatch.setattr(extras.metadata, "distribution", lambda name: distribution)
    real = cli.find_spec
    monkeypatch.setattr(cli, "find_spec", lambda name: None if name == "rich" else real(name))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (
        "conformance: the conformance suite is not installed (missing: rich); "
        f"install it with: {expected}\n"
    )


@pytest.mark.parametrize("way", ["editable clone", "index"])
def test_the_postgresql_store_without_psycopg_names_the_command(
    tmp_path: Path, clone: Path, way: str, monkeypatch: pytest.MonkeyPatch
):
    from mockserver.store.base import StoreError
    from mockserver.store.postgres import PostgresDialect

    distribution, expected = ways(tmp_path, clone)[way]
    monkeypatch.setattr(extras.metadata, "distribution", lambda name: distribution)
    real_import = builtins.__import__

    def without_psycopg(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.partition(".")[0] == "psycopg":
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_psycopg)
    with pytest.raises(StoreError) as error:
        PostgresDialect("postgresql://u@127.0.0.1:9/x")
    assert str(error.value) == "the PostgreSQL store needs psycopg: " + expected.replace(
        "conformance", "postgresql"
    )
