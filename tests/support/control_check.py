"""Control-plane answers checked against the control plane's own document (``/_mock/openapi.json``,
``mockserver/control/openapi.yaml`` with its fragments): the status must be one the operation
documents, the content type one it names, and a JSON body valid under its schema.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import httpx
import jsonschema

from mockserver.control.plane import control_contract
from mockserver.dispatch import Router


@cache
def _router() -> Router:
    return Router(control_contract().operations)


@cache
def _schema(operation_id: str, status: int, media_type: str) -> dict[str, Any] | None:
    contract = control_contract()
    responses = contract.operations[operation_id].definition["responses"]
    documented = responses.get(str(status))
    assert documented is not None, f"{operation_id} does not document {status}"
    content = contract.resolve(documented).get("content")
    if content is None:
        return None
    assert media_type in content, f"{operation_id} {status}: {media_type} is not documented"
    schema: dict[str, Any] | None = content[media_type].get("schema")
    return schema


@cache
def _validator(operation_id: str, status: int, media_type: str) -> Any:
    schema = _schema(operation_id, status, media_type)
    if schema is None:
        return None
    return jsonschema.Draft202012Validator(
        {**schema, "components": control_contract().document["components"]},
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )


def check_control(response: httpx.Response) -> None:
    """Fail unless the control plane's answer is what its document says."""
    request = response.request
    path = request.url.raw_path.decode("latin-1").split("?")[0]
    operation, _ = _router().match(request.method, path, encoded=True)
    assert operation is not None, f"{request.method} {path} is no control operation"
    media_type = response.headers.get("content-type", "").split(";")[0].strip()
    validator = _validator(operation.operation_id, response.status_code, media_type)
    if validator is not None and media_type == "application/json":
        errors = sorted(validator.iter_errors(response.json()), key=str)
        assert not errors, f"{request.method} {path} -> {response.status_code}: " + "; ".join(
            f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]
        )


class CheckedControl:
    """The control plane, every answer checked against its document."""

    def __init__(self, http: httpx.Client, token: str | None = None) -> None:
        self.http = http
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def request(self, method: str, path: str, body: Any = None, **params: Any) -> httpx.Response:
        response = self.http.request(
            method,
            f"/_mock{path}",
            json=body,
            params={k: v for k, v in params.items() if v is not None},
            headers=self.headers,
        )
        assert response.headers.get("x-request-id"), f"{method} {path}: no x-request-id"
        check_control(response)
        return response

    def call(self, method: str, path: str, body: Any = None, **params: Any) -> dict[str, Any]:
        response = self.request(method, path, body, **params)
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer
