"""Every response a test receives is checked against the contract, twice.

Once by the kit's own checker (``conformance.responses``, profile ``full``) and once,
independently, by openapi-core. A response either finds wrong fails the test at once.

openapi-core is configured (through its ``Config``) to do once what does not change from one
response to the next: the contract's paths resolved, the schema validators, header
deserialisers and the path a URL finds are made once and kept, and a value a schema has found
valid is not validated again (it would be valid again). Every response is still checked, its
every documented header and its body, and openapi-core's verdict on it is the same.
"""

from __future__ import annotations

import hashlib
import marshal
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import httpx
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend
from jsonschema_path import SchemaPath
from openapi_core import OpenAPI
from openapi_core.casting.schemas import oas31_types_caster
from openapi_core.casting.schemas.factories import SchemaCastersFactory
from openapi_core.configurations import Config
from openapi_core.datatypes import RequestParameters
from openapi_core.deserializing.styles import StyleDeserializersFactory, style_deserializers
from openapi_core.deserializing.styles.deserializers import StyleDeserializer
from openapi_core.templating.paths.datatypes import PathOperationServer
from openapi_core.templating.paths.finders import APICallPathFinder
from openapi_core.validation.response.validators import V31ResponseValidator
from openapi_core.validation.schemas.datatypes import FormatValidatorsDict
from openapi_core.validation.schemas.factories import DialectSchemaValidatorsFactory
from openapi_core.validation.schemas.validators import SchemaValidator
from openapi_schema_validator import OAS31_BASE_DIALECT_ID, OAS30ReadValidator, OAS31Validator
from werkzeug.datastructures import Headers

from conformance.responses import ResponseChecker
from mockserver.contract import default_contract
from mockserver.dispatch import Router


@dataclass
class _Request:
    method: str
    host_url: str
    path: str
    body: bytes | None
    content_type: str
    parameters: RequestParameters


@dataclass
class _Response:
    status_code: int
    content_type: str
    headers: Headers
    data: bytes


@cache
def checker() -> ResponseChecker:
    return ResponseChecker(default_contract().document, "full")


class _RememberingSchemaValidator(SchemaValidator):
    """openapi-core's schema validator, which remembers the values it has found valid.

    Whether a value is valid for a schema does not depend on the response it came in: a value
    found valid before is valid again, and is not walked by jsonschema anew. Values are known
    by their ``marshal`` bytes, which tell every type apart (a tuple from a list, an int key
    from a string key, 1 from 1.0 and True) and refuse anything else (a subclass, an object):
    equal bytes, an equal value of the same types. Any other value is validated; one found
    invalid is never remembered, nor is a big one (a page of records seldom comes twice, and
    a test process would keep every body it received)."""

    MOST = 4096  # bytes of a value worth remembering (headers, small bodies)

    def __init__(self, schema: SchemaPath, validator: Any) -> None:
        super().__init__(schema, validator)
        self._valid: set[bytes] = set()

    def validate(self, value: Any) -> None:
        try:
            known = marshal.dumps(value)
        except ValueError:  # not plain data: validated every time
            super().validate(value)
            return
        if known not in self._valid:
            super().validate(value)
            if len(known) <= self.MOST:
                self._valid.add(known)


def _remembering(validator_class: type[Validator]) -> type[Validator]:
    """``validator_class`` whose ``$ref`` keyword remembers the objects and arrays it found
    valid: a record found valid against ``#/components/schemas/Project`` in one page is not
    walked again in the next page, nor in a later test's.

    Whether a value is valid against what a ``$ref`` names depends on the value, the reference
    (the contract has one base URI and does not change), the validator class and its format
    checker: a value is known by those and the digest of its ``marshal`` bytes (which tell
    every type apart, as above). Only a reference found to give no error is remembered."""
    follow = validator_class.VALIDATORS["$ref"]
    known: dict[tuple[Any, ...], tuple[Any, set[bytes]]] = {}

    def remembering_ref(
        validator: Any, ref: str, instance: Any, schema: Any
    ) -> Iterator[ValidationError]:
        if not isinstance(instance, dict | list):
            yield from follow(validator, ref, instance, schema)
            return
        try:
            digest = hashlib.blake2b(marshal.dumps(instance), digest_size=16).digest()
        except ValueError:  # not plain data: walked every time
            yield from follow(validator, ref, instance, schema)
            return
        checker = validator.format_checker
        # the checker is kept with its values, so that its id names no other checker later
        _, valid = known.setdefault((type(validator), id(checker), ref), (checker, set()))
        if digest in valid:
            return
        errors = list(follow(validator, ref, instance, schema))
        if not errors:
            valid.add(digest)
        yield from errors

    return extend(validator_class, validators={"$ref": remembering_ref})


class _SchemaValidators(DialectSchemaValidatorsFactory):
    """openapi-core's OAS 3.1 schema validators factory, each validator built once per schema.

    openapi-core builds a fresh jsonschema validator (a deep copy of the format checker, the
    schema's ``$ref`` resolved anew) for every header and body it checks; the validator for
    a given schema of the (unchanging) contract is always the same, so it is kept."""

    def __init__(self) -> None:
        super().__init__(
            OAS31Validator,
            OAS31_BASE_DIALECT_ID,
            format_checker=OAS30ReadValidator.FORMAT_CHECKER,  # as openapi-core's own
        )
        self._built: dict[tuple[Any, ...], SchemaValidator] = {}
        self._classes: dict[type[Validator], type[Validator]] = {}

    def get_validator_cls(self, spec: SchemaPath, schema: SchemaPath) -> type[Validator]:
        dialect_class = super().get_validator_cls(spec, schema)
        if (made := self._classes.get(dialect_class)) is None:
            made = self._classes[dialect_class] = _remembering(dialect_class)
        return made

    def create(
        self,
        spec: SchemaPath,
        schema: SchemaPath,
        format_validators: FormatValidatorsDict | None = None,
        extra_format_validators: FormatValidatorsDict | None = None,
        forbid_unspecified_additional_properties: bool = False,
        enforce_properties_required: bool = False,
    ) -> SchemaValidator:
        options = (forbid_unspecified_additional_properties, enforce_properties_required)
        if format_validators is not None or extra_format_validators is not None:
            return super().create(
                spec, schema, format_validators, extra_format_validators, *options
            )
        key = (spec, schema, *options)
        if (built := self._built.get(key)) is None:
            made = super().create(spec, schema, None, None, *options)
            built = self._built[key] = _RememberingSchemaValidator(made.schema, made.validator)
        return built


class _StyleDeserializers(StyleDeserializersFactory):
    """openapi-core's style deserialisers (headers), each built once per header."""

    def __init__(self, casters: SchemaCastersFactory) -> None:
        super().__init__(casters, style_deserializers=style_deserializers)
        self._built: dict[tuple[Any, ...], StyleDeserializer] = {}

    def create(
        self, spec: SchemaPath, schema: SchemaPath, style: str, explode: bool, name: str
    ) -> StyleDeserializer:
        key = (spec, schema, style, explode, name)
        if (built := self._built.get(key)) is None:
            built = self._built[key] = super().create(spec, schema, style, explode, name)
        return built


class _PathFinder(APICallPathFinder):
    """openapi-core's path finder, which finds each (method, URL) it is asked once: the
    contract's paths and servers do not change, nor then what a URL finds in them."""

    def __init__(self, spec: SchemaPath, base_url: str | None = None) -> None:
        super().__init__(spec, base_url=base_url)
        self._found: dict[tuple[str, str], PathOperationServer] = {}

    def find(self, method: str, name: str) -> PathOperationServer:
        if (found := self._found.get((method, name))) is None:
            found = self._found[method, name] = super().find(method, name)
        return found


@cache
def openapi() -> OpenAPI:
    validators = _SchemaValidators()
    casters = SchemaCastersFactory(validators, oas31_types_caster)
    config = Config(
        schema_validators_factory=validators,
        schema_casters_factory=casters,
        style_deserializers_factory=_StyleDeserializers(casters),
        path_finder_cls=_PathFinder,
    )
    # The contract's paths resolved ($refs followed) once each, not at every step of every check.
    spec = SchemaPath.from_dict(default_contract().document, resolved_cache_maxsize=1 << 16)
    openapi = OpenAPI(spec, config=config)
    # the factories above are those of OpenAPI 3.1, the contract's version
    assert isinstance(openapi.response_validator, V31ResponseValidator), openapi.version
    return openapi


@cache
def router() -> Router:
    return Router(default_contract().operations)


class ContractViolation(AssertionError):
    pass


def check_response(response: httpx.Response) -> None:
    """Fail unless the response is what the contract allows for its request."""
    request = response.request
    path = request.url.path
    assert response.headers.get("x-request-id"), f"{request.method} {path}: no x-request-id"
    operation, _ = router().match(
        request.method, request.url.raw_path.decode("latin-1").split("?")[0], encoded=True
    )
    if operation is None:
        body = response.json()
        assert (
            response.status_code == 404 and body["success"] is False and body["code"] == "not_found"
        ), body
        return
    problems = checker().check(
        operation.operation_id, response.status_code, response.headers, response.content
    )
    if problems:
        raise ContractViolation(
            f"{request.method} {path} -> {response.status_code}: "
            + "; ".join(f"{p.rule} {p.pointer} {p.message}" for p in problems)
            + f"\nbody: {response.text[:2000]}"
        )
    _openapi_core_check(response)


def _openapi_core_check(response: httpx.Response) -> None:
    request = response.request
    base = f"{request.url.scheme}://{request.url.netloc.decode()}"
    req = _Request(
        request.method.lower(),
        base,
        request.url.raw_path.decode("latin-1").split("?")[0],
        request.content or None,
        request.headers.get("content-type", "application/json"),
        RequestParameters(query=dict(request.url.params), header=Headers(dict(request.headers))),
    )
    resp = _Response(
        response.status_code,
        response.headers.get("content-type", ""),
        Headers(dict(response.headers)),
        response.content,
    )
    spec = openapi()
    # openapi-core checks against the document's server url; ours is templated.
    try:
        spec.validate_response(req, resp)
    except Exception as exc:  # openapi-core raises several unrelated types
        raise ContractViolation(
            f"openapi-core: {request.method} {request.url.path} -> {response.status_code}: "
            f"{type(exc).__name__}: {exc} {getattr(exc, '__cause__', '') or ''}\n"
            f"body: {response.text[:2000]}"
        ) from exc


def json_of(response: httpx.Response) -> Any:
    return response.json()
