"""The one way the mock reads YAML: PyYAML's safe loader, parsed by libyaml when the installed
PyYAML has it (its wheels do), else by PyYAML's pure-Python parser.

Both build the same documents (the safe constructor and resolver are PyYAML's own either way);
libyaml only parses several times faster, which is most of the mock's start-up.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import yaml

SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse(source: str | bytes | IO[str] | IO[bytes]) -> Any:
    """A YAML document (text, bytes or an open file), read safely."""
    return yaml.load(source, Loader=SafeLoader)


def load(path: str | Path) -> Any:
    """The YAML document of a file (UTF-8), read safely."""
    with open(path, encoding="utf-8") as fh:
        return parse(fh)
