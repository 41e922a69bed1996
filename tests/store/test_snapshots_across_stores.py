"""A snapshot taken from one store loads into another, and reads back the same."""

from __future__ import annotations

import os

import httpx
import pytest

from mockserver.app import create_app
from mockserver.settings import Settings
from tests.support.client import ApiClient, ControlClient
from tests.support.inproc import InProcessClient
from tests.support.postgres import UNAVAILABLE, fresh_schema_url, server_url


def settings_for(kind: str, tmp_path) -> Settings:
    base = Settings(clock="manual", seed=7, allow_private_callbacks=True)
    if kind == "sqlite":
        return Settings(**{**base.__dict__, "state": tmp_path / f"{kind}.db"})
    if kind == "postgresql":
        if server_url() is None:
            if os.environ.get("CI"):
                pytest.fail(f"CI needs a PostgreSQL server: {UNAVAILABLE}")
            pytest.skip(UNAVAILABLE)
        return Settings(**{**base.__dict__, "store": fresh_schema_url()})
    return base


def snapshot(client: httpx.Client) -> dict:
    return ControlClient(client).call("GET", "/snapshot")["snapshot"]


@pytest.mark.parametrize(
    ("source", "target"),
    [("memory", "sqlite"), ("sqlite", "postgresql"), ("postgresql", "memory"),
     ("sqlite", "memory")],
)  # fmt: skip
def test_a_snapshot_moves_between_stores(source, target, tmp_path):
    with InProcessClient(
        create_app(settings_for(source, tmp_path)), base_url="http://testserver"
    ) as first:
        api = ApiClient(first)
        api.post("/v1/products", json={"name": "Travels well"})
        api.post("/v1/video/render", json={"projectId": "prj_acme_01", "story": "A trip."})
        ControlClient(first).advance(90)
        taken = snapshot(first)
    app = create_app(settings_for(target, tmp_path))
    with InProcessClient(app, base_url="http://testserver") as second:
        ControlClient(second).call("PUT", "/snapshot", {"snapshot": taken})
        assert snapshot(second) == taken
        names = [p["name"] for p in ApiClient(second).walk("/v1/products", "products")]
        assert "Travels well" in names
    app.close()
    if target != "memory":  # and it is in the store itself: a new process reads it back
        again = create_app(settings_for(target, tmp_path)) if target == "sqlite" else None
        if again is not None:
            with InProcessClient(again, base_url="http://testserver") as third:
                assert snapshot(third) == taken
            again.close()
