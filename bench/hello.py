"""The ceiling of bench/peers.py: a Starlette hello world on the mock's server stack.

    python -m uvicorn hello:app --app-dir bench --port 8081 --log-level warning

Every method and path answers 200 with a small JSON body; uvicorn picks uvloop and httptools
(its standard extras, as the mock's) when they are installed.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


async def hello(request: Request) -> JSONResponse:
    return JSONResponse({"hello": "world"})


app = Starlette(routes=[Route("/{path:path}", hello, methods=["GET", "POST"])])
