"""openapi-python-client generates a whole client from the contract: no error, no warning.

Before the contract was shaped for generators it stopped with 8 errors (callbacks given as
`$ref`, `ChannelProducts` as a `const` array) and, on a patched copy, warned 461 times, dropped
all 11 error schemas and skipped `POST /v1/video/remix`.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from openapi_python_client.strings import pascal_case, snake_case

from .conftest import operation_ids, run, venv_tool

PACKAGE = "cgcas_generated_client"

# What the generator prints when it leaves something out; none may appear.
DROP_MARKERS = (
    "WARNING",
    "Warning(s) encountered",
    "will not be generated",
    "Unable to",
    "Failure to process schema",
    "removal of",
    "response will be omitted",
    "Skipping Integration",
    "Error(s) encountered",
)


@pytest.fixture(scope="module")
def generated(spec: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    """(generator output, the imported client package)."""
    root = tmp_path_factory.mktemp("openapi-python-client")
    result = run(
        [
            venv_tool("openapi-python-client"),
            "generate",
            "--path",
            str(spec),
            "--output-path",
            str(root / PACKAGE),
            "--meta",
            "none",
        ],
        cwd=root,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    sys.path.insert(0, str(root))
    try:
        package = importlib.import_module(PACKAGE)
        importlib.import_module(f"{PACKAGE}.models")
        yield output, package
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def test_no_warning_no_skipped_endpoint_no_dropped_schema(generated):
    output, _ = generated
    found = [marker for marker in DROP_MARKERS if marker in output]
    assert not found, output


def _endpoint_modules(package) -> dict[str, Any]:
    """Every generated endpoint module, by module name."""
    root = Path(package.__file__).parent / "api"
    modules = {}
    for path in sorted(root.glob("*/*.py")):
        if path.name == "__init__.py":
            continue
        name = f"{package.__name__}.api.{path.parent.name}.{path.stem}"
        modules[path.stem] = importlib.import_module(name)
    return modules


def test_every_operation_has_an_endpoint_module_with_its_functions(generated, doc):
    _, package = generated
    modules = _endpoint_modules(package)
    ids = operation_ids(doc)
    assert len(ids) == 62
    assert sorted(modules) == sorted(snake_case(i) for i in ids)
    for name, module in modules.items():
        for function in ("sync_detailed", "sync", "asyncio_detailed", "asyncio"):
            assert inspect.isfunction(getattr(module, function, None)), (name, function)


def _expects_model(schema: dict[str, Any]) -> bool:
    """True for a schema the generator turns into a class (an object, an enum, an allOf)."""
    if "enum" in schema or schema.get("type") == "object" or "properties" in schema:
        return True
    return "allOf" in schema and "type" not in schema


def test_every_object_and_enum_component_schema_produced_a_model(generated, doc):
    _, package = generated
    models = importlib.import_module(f"{package.__name__}.models")
    schemas = doc["components"]["schemas"]
    expected = [name for name, schema in schemas.items() if _expects_model(schema)]
    # Unions of inline objects (RemixSource, TranscriptEdit) produce one model per titled branch.
    for schema in schemas.values():
        for branch in schema.get("oneOf", []) + schema.get("anyOf", []):
            if branch.get("type") == "object" and "title" in branch:
                expected.append(branch["title"])
    missing = [
        name for name in expected if not inspect.isclass(getattr(models, pascal_case(name), None))
    ]
    assert not missing
    assert len(expected) >= 110


def _error_schema_names(doc: dict[str, Any]) -> dict[str, str]:
    """Reusable error response -> the component schema its body refers to."""
    names = {}
    for name, response in doc["components"]["responses"].items():
        schema = response.get("content", {}).get("application/json", {}).get("schema", {})
        ref = schema.get("$ref", "")
        if ref.endswith("Error"):
            names[name] = ref.rsplit("/", 1)[-1]
    return names


def test_every_error_response_schema_produced_a_model_with_code_and_details(generated, doc):
    _, package = generated
    models = importlib.import_module(f"{package.__name__}.models")
    names = _error_schema_names(doc)
    assert len(names) == 11
    for schema_name in names.values():
        cls = getattr(models, pascal_case(schema_name))
        fields = {f.name for f in attrs.fields(cls)}
        assert {"success", "error", "code", "details"} <= fields, schema_name


ERROR_BODIES = {
    402: {
        "success": False,
        "error": "Not enough credits.",
        "code": "insufficient_credits",
        "details": {"price": 150, "balance": 100, "shortfall": 50, "capability": "video-render"},
    },
    409: {
        "success": False,
        "error": "Stale generation.",
        "code": "conflict",
        "details": {"reason": "stale_generation", "currentGeneration": 2},
    },
    429: {"success": False, "error": "Slow down.", "code": "rate_limited"},
}


def _operations_declaring(doc: dict[str, Any], status: int) -> list[str]:
    return [
        op["operationId"]
        for item in doc["paths"].values()
        for method, op in item.items()
        if method in ("get", "put", "post", "patch", "delete") and str(status) in op["responses"]
    ]


@pytest.mark.parametrize("status", sorted(ERROR_BODIES))
def test_every_endpoint_parses_402_409_429_into_typed_errors(generated, doc, status):
    _, package = generated
    modules = _endpoint_modules(package)
    client = package.AuthenticatedClient(base_url="http://api.test", token="k")
    body = ERROR_BODIES[status]
    operations = _operations_declaring(doc, status)
    assert operations
    for operation_id in operations:
        module = modules[snake_case(operation_id)]
        parsed = module._parse_response(client=client, response=httpx.Response(status, json=body))
        assert parsed.code == body["code"], operation_id
        if status == 402:
            assert parsed.details.shortfall == 50 and parsed.details.price == 150, operation_id
        elif status == 409:
            assert parsed.details.current_generation == 2, operation_id
            assert parsed.details.reason == "stale_generation", operation_id
        else:
            assert not parsed.details, operation_id  # Unset: the body has none


def test_a_generated_call_reads_an_error_without_touching_json(generated):
    # End to end through the generated client (an in-process transport, no network): a render
    # refused for credits comes back as a typed PaymentRequiredError.
    _, package = generated
    render_video = importlib.import_module(f"{package.__name__}.api.generation.render_video")
    models = importlib.import_module(f"{package.__name__}.models")
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(402, json=ERROR_BODIES[402])

    client = package.AuthenticatedClient(
        base_url="http://api.test",
        token="k",
        httpx_args={"transport": httpx.MockTransport(handler)},
    )
    with client:
        result = render_video.sync(
            client=client, body=models.RenderRequest(project_id="prj_1", story="A story.")
        )
    assert isinstance(result, models.PaymentRequiredError)
    assert (result.code, result.details.shortfall) == ("insufficient_credits", 50)
    assert isinstance(result.details, models.CreditShortfall)
    assert seen[0].url.path == "/v1/video/render"
    assert seen[0].headers["authorization"] == "Bearer k"
