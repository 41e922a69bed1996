"""State comes from fixtures; ids are opaque, prefixed, and reproducible with --seed."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from mockserver.app import create_app
from mockserver.fixtures import FixtureError
from mockserver.resources import default_fixtures_path
from tests.conftest import TEST_SETTINGS
from tests.support.client import ApiClient
from tests.support.inproc import InProcessClient


def new_ids(settings, count: int = 3) -> list[str]:
    with InProcessClient(create_app(settings), base_url="http://mock.test") as http:
        api = ApiClient(http)
        return [
            api.post("/v1/products", json={"name": f"p{i}"}).json()["product"]["id"]
            for i in range(count)
        ]


def test_ids_are_opaque_prefixed_and_reproducible_with_a_seed():
    a = new_ids(replace(TEST_SETTINGS, seed=42))
    b = new_ids(replace(TEST_SETTINGS, seed=42))
    c = new_ids(replace(TEST_SETTINGS, seed=43))
    assert a == b and a != c
    assert all(re.fullmatch(r"prd_[0-9a-f]{16}", i) for i in a)
    assert len(set(a)) == 3


def test_default_fixtures_hold_what_the_readme_promises(api):
    fixtures = yaml.safe_load(default_fixtures_path().read_text())
    acme, globex = fixtures["workspaces"]
    assert (acme["slug"], acme["credits"], globex["slug"], globex["credits"]) == (
        "acme",
        10000,
        "globex",
        1000,
    )
    keys = {k["key"]: k["member"] for k in acme["keys"]}
    assert keys == {
        "sk_test_acme_owner": "alice",
        "sk_test_acme_owner_2": "alice",
        "sk_test_acme_admin": "bob",
        "sk_test_acme_editor": "erin",
        "sk_test_acme_viewer": "victor",
    }
    roles = {name: m["role"] for name, m in acme["members"].items()}
    assert roles == {"alice": "owner", "bob": "admin", "erin": "editor", "victor": "viewer"}
    assert [k["key"] for k in globex["keys"]] == ["sk_test_globex_owner"]
    assert len(acme["campaigns"]) >= 120
    assert {c["status"] for c in acme["campaigns"]} == {
        "draft",
        "scheduled",
        "active",
        "paused",
        "completed",
    }
    assert (
        len(acme["channels"]) == 10 and len(acme["products"]) == 8 and len(acme["projects"]) == 30
    )
    assert api.get("/v1/capabilities").json()["balance"]["credits"] == 10000
    assert api.get("/v1/capabilities", key="globex").json()["balance"]["credits"] == 1000


def tiny_fixtures(tmp_path: Path, credits: int, clock: str | None = None, **workspace: Any) -> Path:
    """A fixtures file of one workspace, ``tiny`` (key ``sk_tiny``), offering only ``script``."""
    custom = {
        "capabilities": {"script": {"price": 5, "unit": "script"}},
        "workspaces": [
            {
                "slug": "tiny",
                "credits": credits,
                "members": {"zoe": {"role": "owner"}},
                "keys": [{"key": "sk_tiny", "member": "zoe"}],
                **workspace,
            }
        ],
    }
    if clock is not None:
        custom["clock"] = {"start": clock}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(custom))
    return path


def test_another_fixtures_file_can_be_loaded(tmp_path: Path):
    path = tiny_fixtures(
        tmp_path,
        3,
        clock="2030-01-01T00:00:00Z",
        products=[{"id": "prd_only", "name": "Only", "createdAt": "2030-01-01T00:00:00Z"}],
    )
    with InProcessClient(
        create_app(replace(TEST_SETTINGS, fixtures=path)), base_url="http://mock.test"
    ) as http:
        api = ApiClient(http)
        assert api.get("/v1/products", key="sk_tiny").json()["products"][0]["id"] == "prd_only"
        assert api.get("/v1/products", key="sk_test_acme_owner").status_code == 401
        assert http.get("/_mock/clock").json()["now"] == "2030-01-01T00:00:00Z"


def test_a_broken_fixtures_file_is_refused_with_a_clear_message(tmp_path: Path):
    path = tmp_path / "broken.yaml"
    path.write_text("just: text\n")
    with pytest.raises(FixtureError, match="workspaces"):
        create_app(replace(TEST_SETTINGS, fixtures=path))


def test_a_small_fixtures_file_gets_the_bundled_rules_and_offers_only_its_capabilities(
    tmp_path: Path,
):
    stamp = "2026-11-20T09:00:00Z"
    project = {"id": "prj_tiny", "title": "Tiny", "mediaType": "video"}
    project.update(createdAt=stamp, updatedAt=stamp)
    path = tiny_fixtures(tmp_path, 100, projects=[project])
    with InProcessClient(
        create_app(replace(TEST_SETTINGS, fixtures=path)), base_url="http://mock.test"
    ) as http:
        api = ApiClient(http)
        render = api.post(
            "/v1/video/render", key="sk_tiny", json={"projectId": "prj_tiny", "story": "x"}
        )
        assert render.status_code == 503 and render.json()["code"] == "capability_unavailable"
        remix = api.post(
            "/v1/video/remix",
            key="sk_tiny",
            json={"projectId": "prj_tiny", "sources": [{"transcript": "Hi."}]},
        )
        assert remix.status_code == 200, remix.text
        assert remix.json()["cost"]["credits"] == 5 and remix.json()["job"]["status"] == "queued"
