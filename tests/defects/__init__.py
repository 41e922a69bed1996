"""Test-only defects: a mock that breaks one rule of the contract on purpose, built by replacing
named seams of the product (mockserver/seams.py). The product itself carries no defect.

They exist to prove the conformance suite able to fail: tests/conformance/test_defects.py runs
the suite against the mock with each defect and expects the check named for it in
tests/conformance/defects.py to catch it. Never use one for anything else.

- ``DEFECTS``: every defect's name -> the rule of the contract it breaks.
- ``seams_for(names)``: the product's seams with those defects' replacements (ValueError for an
  unknown name).
- ``create_app(settings, names)``: a mock app with those defects.
- ``python -m tests.defects --defect NAME [mockserver serve options]``: serve one (the option may
  be repeated).

The defects live by what they replace: wire.py (finished responses, requests before validation,
public admission), paging.py (cursors, pages, ordered streams), state.py (the workspace boundary,
idempotency, credits), webhooks.py (the subscription shown, delivery signing and retries) and
workflows.py (autopilot pauses, footage-edit generations, remix pricing, maxCredits, word and
legacy cursors).
Each replacement wraps the seam it finds (``previous``), so defects compose.

How to add a defect
-------------------
1. Find the seam where the rule is decided in mockserver/seams.py. When there is none, add one:
   a field named by what the product does there (never by the defect), whose default is the
   product's own function, moved out to a plain function of the module that owns the rule; the
   product calls it as ``rt.seams.NAME(...)`` (or is constructed with it, as the cursor codec
   and the world are). A rule visible on the wire alone needs no new seam: rewrite the finished
   response (``rewriting_responses``) or the request (``rewriting_requests``) in wire.py.
2. Write the replacement in the module of this package it belongs to: a function
   ``Seams -> Seams`` (``dataclasses.replace``) that wraps the seam it finds, and list it in that
   module's ``DEFECTS`` with the rule it breaks.
3. List it in tests/conformance/defects.py with the selection that catches it quickly and the
   check that must fail; tests/conformance/test_defects.py then proves it caught.
"""

from __future__ import annotations

from collections.abc import Iterable

from mockserver.app import MockApp
from mockserver.app import create_app as create_mock_app
from mockserver.seams import Seams
from mockserver.settings import Settings
from tests.defects import paging, responses, semantics, state, webhooks, wire, workflows
from tests.defects.defect import Defect

__all__ = ["DEFECTS", "REGISTRY", "Defect", "create_app", "seams_for"]

#: every defect by name, in the order they are applied
REGISTRY: dict[str, Defect] = {
    **wire.DEFECTS,
    **paging.DEFECTS,
    **state.DEFECTS,
    **webhooks.DEFECTS,
    **semantics.DEFECTS,
    **responses.DEFECTS,
    **workflows.DEFECTS,
}

#: name -> the rule of the contract it breaks
DEFECTS: dict[str, str] = {name: defect.rule for name, defect in REGISTRY.items()}


def seams_for(names: Iterable[str]) -> Seams:
    """The product's seams with the named defects' replacements."""
    wanted = set(names)
    unknown = sorted(wanted - set(REGISTRY))
    if unknown:
        raise ValueError(
            "unknown defect(s): " + ", ".join(unknown) + "; known: " + ", ".join(REGISTRY)
        )
    seams = Seams()
    for name, defect in REGISTRY.items():
        if name in wanted:
            seams = defect.apply(seams)
    return seams


def create_app(settings: Settings | None, names: Iterable[str]) -> MockApp:
    """A mock app with the named defects."""
    return create_mock_app(settings, seams=seams_for(names))
