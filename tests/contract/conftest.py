from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import pytest

from mockserver.contract import Contract

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def contract() -> Contract:
    return Contract.load()


@pytest.fixture(scope="session")
def doc(contract: Contract) -> dict[str, Any]:
    return contract.document


def stated_operations() -> list[dict[str, str]]:
    """Rows of the interface document's operations.tsv (a copy; see test_data_copies)."""
    with open(DATA / "operations.tsv", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def titled_operations() -> list[tuple[str, str]]:
    """(area, title) rows of titled-operations.md."""
    rows = []
    for line in (DATA / "titled-operations.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0] not in ("Area", "-"):
            rows.append((cells[0], cells[1]))
    return rows


def template_shape(path: str) -> str:
    """A path template with its parameter names erased: how OpenAPI compares templates."""
    return re.sub(r"\{[^}]+\}", "{}", path)
