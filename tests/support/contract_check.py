"""Every response a test receives is checked against the contract, twice.

Once by the kit's own checker (``conformance.responses``, profile ``full``) and once,
independently, by openapi-core. A response either finds wrong fails the test at once.

openapi-core is configured (through its ``Config``) to do once what does not change from one
response to the next: the contract's paths made and resolved (found or not), the schema
validators, header deserialisers and the path a URL finds are made once and kept, and a value
a schema has found valid, or a header found valid with the same values, is not validated again
(it would be valid again). Every response is still checked, its every documented header and
its body, and openapi-core's verdict on it is the same.
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
from jsonschema_path.accessors import SchemaAccessor
from jsonschema_path.paths import SPEC_SEPARATOR
from openapi_core import OpenAPI
from openapi_core.casting.schemas import oas31_types_caster
from openapi_core.casting.schemas.factories import SchemaCastersFactory
from openapi_core.configurations import Config
from openapi_core.datatypes import RequestParameters
from openapi_core.deserializing.styles import StyleDeserializersFactory, style_deserializers
from openapi_core.deserializing.styles.deserializers import StyleDeserializer
from openapi_core.protocols import Request, Response, WebhookRequest
from openapi_core.schema.parameters import get_style
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


def _digest(value: Any) -> bytes | None:
    """What a value is known by: the digest of its ``marshal`` bytes, which tell every type apart
    (a tuple from a list, an int key from a string key, 1 from 1.0 and True) and refuse anything
    else (a subclass, an object): equal digests, an equal value of the same types. None for a
    value that is not plain data."""
    try:
        return hashlib.blake2b(marshal.dumps(value), digest_size=16).digest()
    except ValueError:
        return None


class _RememberingSchemaValidator(SchemaValidator):
    """openapi-core's schema validator, which remembers the values it has found valid.

    Whether a value is valid for a schema does not depend on the response it came in: a value
    found valid before is valid again, and is not walked by jsonschema anew. Values are known
    by their :func:`_digest`; one that is not plain data is validated every time, and one
    found invalid is never remembered."""

    def __init__(self, schema: SchemaPath, validator: Any) -> None:
        super().__init__(schema, validator)
        self._valid: set[bytes] = set()

    def validate(self, value: Any) -> None:
        known = _digest(value)
        if known is None or known not in self._valid:
            super().validate(value)
            if known is not None:
                self._valid.add(known)


def _remembering(validator_class: type[Validator]) -> type[Validator]:
    """``validator_class`` whose ``$ref`` keyword remembers the objects and arrays it found
    valid: a record found valid against ``#/components/schemas/Project`` in one page is not
    walked again in the next page, nor in a later test's.

    Whether a value is valid against what a ``$ref`` names depends on the value, the reference
    (the contract has one base URI and does not change), the validator class and its format
    checker: a value is known by those and its :func:`_digest`. Only a reference found to give
    no error is remembered."""
    follow = validator_class.VALIDATORS["$ref"]
    known: dict[tuple[Any, ...], tuple[Any, set[bytes]]] = {}

    def remembering_ref(
        validator: Any, ref: str, instance: Any, schema: Any
    ) -> Iterator[ValidationError]:
        digest = _digest(instance) if isinstance(instance, dict | list) else None
        if digest is None:  # a scalar (not worth it), or not plain data: walked every time
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


class _ContractAccessor(SchemaAccessor):
    """jsonschema-path's accessor of the contract, which remembers what each path in it
    resolves to, and each path that names nothing there.

    openapi-core reads the contract through paths, many of them to keys a header or a schema
    does not have (``deprecated``, ``style``, ``explode``, ``allowEmptyValue``...): the
    accessor keeps what it found, but looks again, every time, for what it did not (~20 of
    those a response). The contract does not change: a path that named nothing names nothing
    again, and fails as it did (an exception of the same type and arguments, made anew)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._found: dict[tuple[Any, ...], Any] = {}  # referencing's Resolved
        self._paths: dict[tuple[Any, ...], _ContractPath] = {}  # see _ContractPath
        self._missing: dict[tuple[Any, ...], tuple[type[Exception], tuple[Any, ...]]] = {}

    def get_resolved(self, parts: Any) -> Any:
        key = tuple(parts)
        try:
            found = self._found.get(key)
        except TypeError:  # a part that cannot be hashed: not remembered, as by the accessor
            return super().get_resolved(parts)
        if found is not None:
            return found
        if (missing := self._missing.get(key)) is not None:
            kind, args = missing
            raise kind(*args)
        try:
            found = super().get_resolved(parts)
        except (KeyError, IndexError, TypeError) as exc:
            self._missing[key] = (type(exc), exc.args)
            raise
        self._found[key] = found
        return found


class _ContractPath(SchemaPath):
    """A path into the contract, made once: ``path / "schema"``, or a child ``items()`` gives,
    is the same path object every time openapi-core asks for it (some thirty times a
    response), and so is what the path resolved, which ``SchemaPath`` keeps on the object.

    Each path is kept by its parts (names and indexes; one with a ``bool`` part, equal to an
    index but not one, is made anew every time, as before), and each path keeps the children
    it was asked for by name or index (``str`` or ``int``)."""

    def __truediv__(self, key: Any) -> Any:
        if type(key) is not str and type(key) is not int:
            return super().__truediv__(key)
        children = self.__dict__.setdefault("_children", {})
        if (child := children.get(key)) is None:
            child = children[key] = super().__truediv__(key)
        return child

    def _clone_with_parts(self, parts: tuple[Any, ...]) -> Any:
        if any(type(part) is bool for part in parts):
            return super()._clone_with_parts(parts)
        made: dict[tuple[Any, ...], _ContractPath] = self.accessor._paths  # type: ignore[attr-defined]
        if (path := made.get(parts)) is None:
            path = made[parts] = super()._clone_with_parts(parts)
        return path


class _ResponseValidator(V31ResponseValidator):
    """openapi-core's OAS 3.1 response validator, which remembers the headers it found valid.

    openapi-core checks each documented header of a response anew: it reads the header object
    (deprecated? required? its style, its schema), deserialises and casts what the response
    has under the header's name, and validates the result. With style ``simple`` (a header's
    only style) it reads nothing of the response but the values under that name, so the
    verdict and the value it answers depend on the header object, known by its place in the
    contract (which does not change), and on those values (``getlist``: all of them, in any
    case), and on nothing else. A header found valid with the same values is valid again: it
    answers the value it made then. A header found missing or wrong is never remembered (it
    is checked, and fails, every time), nor one that is deprecated (openapi-core warns each
    time it is present). Values such as request ids never come twice: beyond ``MOST``
    remembered, all are forgotten at once."""

    MOST = 4096

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._memorable: dict[tuple[Any, ...], bool] = {}
        self._valid_headers: dict[tuple[Any, ...], Any] = {}

    def _get_header(self, headers: Any, name: str, header: SchemaPath) -> Any:
        where = header.parts
        if (memorable := self._memorable.get(where)) is None:
            memorable = self._memorable[where] = (
                not (header / "deprecated").read_bool(default=False)
                and get_style(header) == "simple"
            )
        if not memorable or not isinstance(headers, Headers):
            return super()._get_header(headers, name, header)
        key = (where, name, tuple(headers.getlist(name)))
        if (known := self._valid_headers.get(key, _UNKNOWN)) is not _UNKNOWN:
            return known
        value = super()._get_header(headers, name, header)
        if len(self._valid_headers) >= self.MOST:
            self._valid_headers.clear()
        self._valid_headers[key] = value
        return value


_UNKNOWN: Any = object()


@cache
def openapi() -> OpenAPI:
    validators = _SchemaValidators()
    casters = SchemaCastersFactory(validators, oas31_types_caster)
    config = Config(
        schema_validators_factory=validators,
        schema_casters_factory=casters,
        style_deserializers_factory=_StyleDeserializers(casters),
        path_finder_cls=_PathFinder,
        response_validator_cls=_ResponseValidator,
        # The document is not validated again by every test process that checks a response
        # (~0.35 s of CPU each): tests/contract/test_document.py validates the same document
        # (Contract.load()) with the same validator (openapi_spec_validator.validate).
        spec_validator_cls=None,
    )
    # The contract's paths resolved ($refs followed) once each, not at every step of every check.
    accessor = _ContractAccessor.from_schema(
        default_contract().document, resolved_cache_maxsize=1 << 16
    )
    spec = _ContractPath(accessor, separator=SPEC_SEPARATOR)  # as SchemaPath.from_dict makes it
    openapi = OpenAPI(spec, config=config)
    # the factories above are those of OpenAPI 3.1, the contract's version
    assert isinstance(openapi.response_validator, V31ResponseValidator), openapi.version
    return openapi


@cache
def _response_validator() -> V31ResponseValidator:
    """The validator ``OpenAPI.validate_response`` calls for a request and a response of the
    kinds this module makes, once it has found (by their attributes, as runtime protocols
    look) that they are an API call's request and response and not a webhook's: those are
    looked at here, once, since every ``_Request`` and every ``_Response`` has the same
    attributes (its dataclass fields)."""
    request = _Request("get", "http://mock.test", "/", None, "", RequestParameters())
    assert isinstance(request, Request) and not isinstance(request, WebhookRequest)
    assert isinstance(_Response(200, "", Headers(), b""), Response)
    validator = openapi().response_validator
    assert isinstance(validator, V31ResponseValidator), validator
    return validator


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
    # openapi-core checks against the document's server url; ours is templated.
    try:
        _response_validator().validate(*_for_openapi_core(response))
    except Exception as exc:  # openapi-core raises several unrelated types
        raise ContractViolation(
            f"openapi-core: {request.method} {request.url.path} -> {response.status_code}: "
            f"{type(exc).__name__}: {exc} {getattr(exc, '__cause__', '') or ''}\n"
            f"body: {response.text[:2000]}"
        ) from exc


def _for_openapi_core(response: httpx.Response) -> tuple[_Request, _Response]:
    """The response and its request as openapi-core reads them."""
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
    return req, resp


def json_of(response: httpx.Response) -> Any:
    return response.json()
