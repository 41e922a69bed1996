"""A reset gives back the world a new mock starts with, however often and after whatever was
written: the same snapshot, and the same ids for the same creates (the runtime keeps the
fixtures' world untouched and copies it at each reset)."""

from __future__ import annotations

import json

from mockserver.app import create_app
from mockserver.settings import Settings
from tests.support.client import ApiClient, ControlClient
from tests.support.inproc import InProcessClient

SETTINGS = Settings(clock="manual", seed=5, rate_limit=10**6)


def _writes(api: ApiClient, control: ControlClient, round_: int) -> list[str]:
    """Changes all over the world; the ids the creates were given."""
    made = [
        api.post("/v1/products", json={"name": f"P{round_}", "description": "d"}).json()
        for _ in range(2)
    ]
    project = api.post(
        "/v1/projects",
        json={"title": f"T{round_}", "mediaType": "video"},
        headers={"Idempotency-Key": f"reset-{round_}"},
    ).json()
    api.patch("/v1/campaigns/cmp_acme_002", json={"status": "paused"})
    control.credits(balance=round_)
    control.governance(killSwitch=True)
    control.advance(7200)
    return [m["product"]["id"] for m in made] + [project["project"]["id"]]


def _state(control: ControlClient) -> str:
    return json.dumps(control.call("GET", "/snapshot")["snapshot"], sort_keys=True)


def test_every_reset_gives_the_world_a_new_mock_starts_with():
    with InProcessClient(create_app(SETTINGS)) as fresh:
        started = _state(ControlClient(fresh))
        first_ids = _writes(ApiClient(fresh), ControlClient(fresh), 1)
    with InProcessClient(create_app(SETTINGS)) as http:
        api, control = ApiClient(http), ControlClient(http)
        assert _state(control) == started
        for round_ in (1, 2, 3):
            ids = _writes(api, control, round_)
            assert _state(control) != started
            if round_ == 1:
                assert ids == first_ids
            control.reset()
            assert _state(control) == started, f"after reset {round_}"
        assert _writes(api, control, 1) == first_ids  # the same ids again, as in a new mock
