"""The Starlette application."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mockserver.contract import Contract


def create_app(contract: Contract | None = None) -> Starlette:
    contract = contract or Contract.load()

    async def openapi_json(request: Request) -> Response:
        return Response(contract.json_bytes, media_type="application/json")

    return Starlette(routes=[Route("/v1/openapi.json", openapi_json, methods=["GET"])])
