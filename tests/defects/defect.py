"""One defect of the overlay: the rule of the contract it breaks, and how it replaces seams."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mockserver.seams import Seams

Apply = Callable[[Seams], Seams]


@dataclass(frozen=True)
class Defect:
    rule: str  # the rule of the contract it breaks
    apply: Apply  # the seams with this defect's replacements (dataclasses.replace)
