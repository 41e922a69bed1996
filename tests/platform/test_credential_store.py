"""The credential store made unreachable through the control plane (PUT /_mock/credential-store).

The interface document: "When the credential store cannot be reached, the answer is 503
`upstream_unavailable` with `Retry-After`, never 401."
"""

from __future__ import annotations


def test_an_unreachable_store_answers_503_with_retry_after_to_every_well_formed_key(api, control):
    state = control.call("PUT", "/credential-store", {"reachable": False, "retryAfter": 7})
    assert state["credentialStore"] == {"reachable": False, "retryAfter": 7, "fired": 0}
    for key in ("owner", "viewer", "sk_test_nobody"):
        response = api.get("/v1/campaigns", key=key)
        assert response.status_code == 503, response.text
        assert response.json()["code"] == "upstream_unavailable"
        assert response.json()["details"]["reason"] == "credential_store_unreachable"
        assert response.headers["Retry-After"] == "7"
    listed = control.call("GET", "/faults")["credentialStore"]
    assert listed == {"reachable": False, "retryAfter": 7, "fired": 3}


def test_without_a_key_the_store_is_not_asked_and_the_answer_stays_401(api, control):
    control.call("PUT", "/credential-store", {"reachable": False})
    for headers in ({}, {"Authorization": "Bearer"}):
        response = api.get("/v1/campaigns", key=None, headers=headers)
        assert response.status_code == 401 and response.json()["code"] == "unauthorized"


def test_the_store_is_reachable_again_when_told_on_clear_faults_and_on_reset(api, control):
    for restore in (
        lambda: control.call("PUT", "/credential-store", {"reachable": True}),
        lambda: control.call("DELETE", "/faults"),
        control.reset,
    ):
        control.call("PUT", "/credential-store", {"reachable": False})
        assert api.get("/v1/campaigns").status_code == 503
        restore()
        assert api.get("/v1/campaigns").status_code == 200
        assert control.call("GET", "/faults")["credentialStore"] == {"reachable": True}


def test_the_default_retry_after_is_five_seconds(api, control):
    control.call("PUT", "/credential-store", {"reachable": False})
    assert api.get("/v1/campaigns").headers["Retry-After"] == "5"
