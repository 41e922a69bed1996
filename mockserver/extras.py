"""How to install one of the kit's extras, said for the way the kit itself was installed.

Every "install the extra" hint (the conformance suite's, the PostgreSQL store's) names its
command with :func:`install_command`, read from the installed distribution's metadata
(``direct_url.json``, PEP 610):

- an editable clone (``pip install -e .``): ``pip install -e '/path/to/clone[conformance]'``;
- a directory installed as is (``pip install .``): ``pip install '/path/to/clone[conformance]'``;
- a wheel, from an index or a file: ``pip install 'cgcas-kit[conformance]'``.

Run from a source tree without being installed (``PYTHONPATH``), it names the editable install
of that tree.
"""

from __future__ import annotations

import json
import shlex
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

DISTRIBUTION = "cgcas-kit"
#: The source tree this module sits in, when it is one (a clone, not an installed wheel).
SOURCE_TREE = Path(__file__).resolve().parents[1]


def install_command(extra: str, distribution: metadata.Distribution | None = None) -> str:
    """The pip command that adds ``extra`` to the kit as it is installed (``distribution``:
    the kit's, found by name unless given)."""
    if distribution is None:
        try:
            distribution = metadata.distribution(DISTRIBUTION)
        except metadata.PackageNotFoundError:
            if (SOURCE_TREE / "pyproject.toml").is_file():
                return _pip(f"{SOURCE_TREE}[{extra}]", editable=True)
            return _pip(f"{DISTRIBUTION}[{extra}]")
    origin = _direct_url(distribution)
    directory = _local_directory(origin)
    if directory is not None:
        dir_info = origin["dir_info"]
        editable = isinstance(dir_info, dict) and bool(dir_info.get("editable"))
        return _pip(f"{directory}[{extra}]", editable=editable)
    return _pip(f"{DISTRIBUTION}[{extra}]")


def _pip(requirement: str, *, editable: bool = False) -> str:
    return "pip install " + ("-e " if editable else "") + shlex.quote(requirement)


def _direct_url(distribution: metadata.Distribution) -> dict[str, object]:
    """The distribution's ``direct_url.json`` (empty when it came from an index)."""
    text = distribution.read_text("direct_url.json")
    if not text:
        return {}
    try:
        origin = json.loads(text)
    except ValueError:
        return {}
    return origin if isinstance(origin, dict) else {}


def _local_directory(origin: dict[str, object]) -> Path | None:
    """The directory the kit was installed from, when it was one (``dir_info``) and still is."""
    url = origin.get("url")
    if "dir_info" not in origin or not isinstance(url, str):
        return None
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return None
    directory = Path(unquote(parsed.path))
    return directory if directory.is_dir() else None
