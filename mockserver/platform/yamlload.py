"""The one way the mock reads YAML: PyYAML's safe loader, parsed by libyaml when the installed
PyYAML has it (its wheels do), else by PyYAML's pure-Python parser; and a cache of what it read.

Both parsers build the same documents (the safe constructor and resolver are PyYAML's own either
way). Building them is still most of the mock's start-up (the contract, the fixtures and the
control plane's documents: ~120 ms with libyaml), so each document read is also kept on disk, as
:mod:`marshal` data, in a cache directory: ``$MOCKSERVER_CACHE_DIR`` when set (empty: no cache),
else ``$XDG_CACHE_HOME/mockserver`` or ``~/.cache/mockserver``. An entry is named by the SHA-256
of the text it was read from (with the versions of Python, PyYAML and this format), so a changed
file is read again and never served from an old entry. An entry carries the digest of its data,
checked before the data is used. A document marshal cannot hold (a YAML timestamp) is not
kept; a cache that cannot be read or written is not used. At most :data:`MAX_ENTRIES` entries
are kept (the least recently used go first).

Each call returns a document of its own (callers may change it), with the same shared nodes
as a fresh parse (YAML anchors and aliases: marshal keeps them shared).
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import yaml

SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

CACHE_ENV = "MOCKSERVER_CACHE_DIR"
FORMAT = 1  # of an entry: the digest of the marshal data, then the data
MAX_ENTRIES = 64
SUFFIX = ".yaml.marshal"
_SALT = (
    f"mockserver-yaml/{FORMAT}/python{sys.version_info[0]}.{sys.version_info[1]}"
    f"/marshal{marshal.version}/pyyaml{yaml.__version__}/{SafeLoader.__name__}\n"
).encode()


def parse(source: str | bytes | IO[str] | IO[bytes]) -> Any:
    """A YAML document (text, bytes or an open file), read safely; text is read through the
    cache."""
    if isinstance(source, str):
        return _cached(source, cache_dir())
    return yaml.load(source, Loader=SafeLoader)


def load(path: str | Path) -> Any:
    """The YAML document of a file (UTF-8), read safely through the cache."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    return _cached(text, cache_dir())


def cache_dir() -> Path | None:
    """Where parsed documents are kept, or None for nowhere."""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mockserver"


def entry_path(text: str, directory: Path) -> Path:
    """The cache entry of a text."""
    key = hashlib.sha256(_SALT + text.encode("utf-8", "surrogatepass")).hexdigest()
    return directory / (key + SUFFIX)


def _cached(text: str, directory: Path | None) -> Any:
    if directory is None:
        return yaml.load(text, Loader=SafeLoader)
    entry = entry_path(text, directory)
    found = _read(entry)
    if found is not None:
        return found[0]
    document = yaml.load(text, Loader=SafeLoader)
    _write(entry, document)
    return document


def _read(entry: Path) -> tuple[Any] | None:
    """(the document) of an entry, or None when there is none to trust."""
    try:
        with open(entry, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    digest, payload = data[:32], data[32:]
    if len(digest) != 32 or hashlib.sha256(payload).digest() != digest:
        return None
    try:
        document = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    _touch(entry)  # recently used: kept when older entries go
    return (document,)


def _write(entry: Path, document: Any) -> None:
    """Keep a document (atomically: a reader sees a whole entry or none); never fails."""
    try:
        payload = marshal.dumps(document)
    except ValueError:  # a type marshal cannot hold (a YAML timestamp): not kept
        return
    temporary = None
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
        with os.fdopen(handle, "wb") as fh:
            fh.write(hashlib.sha256(payload).digest() + payload)
        os.replace(temporary, entry)
        temporary = None
        _touch(entry)
        _prune(entry.parent)
    except OSError:
        pass
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _touch(entry: Path) -> None:
    now = time.time_ns()  # finer than the file system's own clock: the order of uses is kept
    with contextlib.suppress(OSError):
        os.utime(entry, ns=(now, now))


def _prune(directory: Path) -> None:
    """Drop the least recently used entries beyond :data:`MAX_ENTRIES`."""
    entries = []
    for path in directory.glob("*" + SUFFIX):
        with contextlib.suppress(OSError):
            entries.append((path.stat().st_mtime_ns, path))
    entries.sort(reverse=True)
    for _, path in entries[MAX_ENTRIES:]:
        with contextlib.suppress(OSError):
            path.unlink()
