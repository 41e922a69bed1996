"""Validators for the contract's component schemas, for tests that judge a body directly."""

from __future__ import annotations

from functools import cache

import jsonschema

from mockserver.contract import default_contract


@cache
def schema_validator(name: str) -> jsonschema.Draft202012Validator:
    """A validator for ``#/components/schemas/<name>`` (formats checked)."""
    components = default_contract().document["components"]
    return jsonschema.Draft202012Validator(
        {"$ref": f"#/components/schemas/{name}", "components": components},
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )
