"""Projects behave as the interface document says."""

from __future__ import annotations


def idem(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


def test_create_project_stores_kind_as_media_type_and_returns_both(api):
    created = api.post(
        "/v1/projects", json={"title": "Old client", "kind": "audio"}, headers=idem("p1")
    )
    assert created.status_code == 200
    project = created.json()["project"]
    assert project["mediaType"] == "audio" and project["kind"] == "audio"
    listed = api.walk("/v1/projects", "projects")
    assert [p for p in listed if p["id"] == project["id"]] == [project]


def test_create_project_with_media_type(api):
    project = api.post(
        "/v1/projects", json={"title": "New", "mediaType": "3d"}, headers=idem("p2")
    ).json()["project"]
    assert (project["mediaType"], project["kind"]) == ("3d", "3d")


def test_media_type_and_kind_that_disagree_are_refused(api):
    response = api.post(
        "/v1/projects",
        json={"title": "x", "mediaType": "video", "kind": "audio"},
        headers=idem("p3"),
    )
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_request"


def test_create_project_requires_an_idempotency_key(api):
    before = len(api.walk("/v1/projects", "projects"))
    response = api.post("/v1/projects", json={"title": "x"})
    assert response.status_code == 400
    error = response.json()
    assert error["code"] == "invalid_request"
    assert {"location": "header", "path": "/Idempotency-Key"}.items() <= error["details"]["errors"][
        0
    ].items()
    assert len(api.walk("/v1/projects", "projects")) == before
