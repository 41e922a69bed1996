"""The contract itself, public and never rate limited."""

from __future__ import annotations

from starlette.responses import Response

from mockserver.registry import handler
from mockserver.runtime import Runtime


@handler("getOpenApi", writes=False)
def get_openapi(runtime: Runtime) -> Response:
    return Response(runtime.contract.json_bytes, media_type="application/json")
