"""The cache of parsed YAML (mockserver/platform/yamlload.py): what it serves is what a fresh
parse gives, and a changed file is read again, never served from an old entry."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest
import yaml

from mockserver.contract import Contract
from mockserver.platform import yamlload
from mockserver.resources import spec_path

ANCHORED = """\
shared: &box {a: 1, b: [1, 2]}
first: *box
second: *box
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv(yamlload.CACHE_ENV, str(directory))
    return directory


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*" + yamlload.SUFFIX)) if directory.exists() else []


def test_a_cached_document_is_what_a_fresh_parse_gives(cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "doc.yaml"
    source.write_text(ANCHORED, encoding="utf-8")
    first = yamlload.load(source)
    assert len(entries(cache)) == 1
    second = yamlload.load(source)  # from the entry
    assert first == second == yaml.safe_load(ANCHORED)
    assert second is not first and second["shared"] is not first["shared"]  # one's own copy
    assert second["first"] is second["second"] is second["shared"]  # aliases stay shared


def test_a_changed_file_is_read_again(cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "doc.yaml"
    source.write_text("value: 1\n", encoding="utf-8")
    assert yamlload.load(source) == {"value": 1}
    stat = source.stat()
    source.write_text("value: 2\n", encoding="utf-8")
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, same time
    assert yamlload.load(source) == {"value": 2}
    assert len(entries(cache)) == 2


def test_the_contract_follows_a_changed_spec(cache: Path, tmp_path: Path) -> None:
    spec = tmp_path / "openapi.yaml"
    text = spec_path().read_text(encoding="utf-8")
    spec.write_text(text, encoding="utf-8")
    assert "scratchProbe" not in Contract.load(spec).document["components"]["schemas"]
    before = len(entries(cache))
    spec.write_text(
        text.replace("  schemas:\n", "  schemas:\n    scratchProbe: {type: string}\n", 1),
        encoding="utf-8",
    )
    assert "scratchProbe" in Contract.load(spec).document["components"]["schemas"]
    assert len(entries(cache)) == before + 1


def test_a_damaged_entry_is_not_used(cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "doc.yaml"
    source.write_text("value: 1\n", encoding="utf-8")
    yamlload.load(source)
    (entry,) = entries(cache)
    data = bytearray(entry.read_bytes())
    data[-2] ^= 0xFF
    entry.write_bytes(bytes(data))
    assert yamlload.load(source) == {"value": 1}
    entry.write_bytes(b"short")
    assert yamlload.load(source) == {"value": 1}
    assert yamlload._read(entry) is not None  # written again, whole


def test_what_marshal_cannot_hold_is_read_but_not_kept(cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "doc.yaml"
    source.write_text("when: 2026-01-02\n", encoding="utf-8")
    assert yamlload.load(source) == {"when": datetime.date(2026, 1, 2)}
    assert entries(cache) == []


def test_no_cache_when_the_setting_is_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(yamlload.CACHE_ENV, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert yamlload.cache_dir() is None
    assert yamlload.parse("a: 1\n") == {"a": 1}
    assert not (tmp_path / "xdg").exists()


def test_the_default_place_is_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(yamlload.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert yamlload.cache_dir() == tmp_path / "mockserver"


def test_a_cache_that_cannot_be_written_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(yamlload.CACHE_ENV, str(blocker / "cache"))
    assert yamlload.parse("a: [1, 2]\n") == {"a": [1, 2]}


def test_old_entries_go_beyond_the_limit(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlload, "MAX_ENTRIES", 3)
    yamlload.parse("kept: 0\n")
    for number in range(1, 6):
        yamlload.parse("kept: 0\n")  # used again each time: the most recent
        yamlload.parse(f"value: {number}\n")
    assert len(entries(cache)) == 3
    assert yamlload.entry_path("kept: 0\n", cache).exists()


def test_the_parser_is_libyaml_when_present() -> None:
    assert yamlload.SafeLoader is getattr(yaml, "CSafeLoader", yaml.SafeLoader)
