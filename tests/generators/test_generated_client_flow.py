"""The client openapi-python-client generates, driven against the in-process mock.

A whole integration as an integrator writes it with a generated client and
``mockserver.testing``: create a project with an Idempotency-Key, start a render with a
callback, move the clock, receive the signed callback, and walk campaigns by cursor.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib

from mockserver.testing import mock_server

from .test_openapi_python_client import PACKAGE, generated  # noqa: F401  (the module fixture)


def test_a_generated_client_runs_a_whole_flow(generated, receiver):  # noqa: F811
    _, package = generated
    api = importlib.import_module(f"{PACKAGE}.api")  # noqa: F841  (loads the subpackages)
    models = importlib.import_module(f"{PACKAGE}.models")
    create_project = importlib.import_module(f"{PACKAGE}.api.projects.create_project")
    render_video = importlib.import_module(f"{PACKAGE}.api.generation.render_video")
    get_job = importlib.import_module(f"{PACKAGE}.api.jobs.get_job")
    list_campaigns = importlib.import_module(f"{PACKAGE}.api.campaigns.list_campaigns")
    secret = "flow-secret-" + "f" * 30

    with mock_server(seed=3) as mock:
        client = package.AuthenticatedClient(base_url=mock.base_url, token=mock.key())

        first = create_project.sync(
            client=client, body=models.ProjectCreate(title="Flow"), idempotency_key="flow-1"
        )
        again = create_project.sync_detailed(
            client=client, body=models.ProjectCreate(title="Flow"), idempotency_key="flow-1"
        )
        project = first.project
        assert again.parsed.project.id == project.id
        assert again.headers["Idempotent-Replayed"] == "true"

        started = render_video.sync(
            client=client,
            body=models.RenderRequest(
                project_id=project.id,
                story="A walk in the park.",
                callback_url=receiver.url + "/flow",
                callback_secret=secret,
            ),
        )
        job_id = started.job.id
        assert started.cost.credits_ > 0  # the generator renames a field called credits

        mock.advance(7200)
        mock.flush_deliveries()
        [delivery] = receiver.deliveries
        message = delivery.headers["x-service-timestamp"].encode() + b"." + delivery.body
        signature = "sha256=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(signature, delivery.headers["x-service-signature"])
        assert delivery.headers["x-service-job-id"] == job_id
        assert get_job.sync(client=client, job_id=job_id).job.status == "done"

        seen: list[str] = []
        cursor = None
        while True:
            page = list_campaigns.sync(
                client=client, limit=25, **({"cursor": cursor} if cursor else {})
            )
            seen += [campaign.id for campaign in page.campaigns]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert len(seen) == len(set(seen)) == 112  # 124 campaigns, 12 hidden from API keys

        poor = mock.set_credits(0)
        refused = render_video.sync(
            client=client, body=models.RenderRequest(project_id=project.id, story="Again.")
        )
        assert poor == 0
        assert refused.code == "insufficient_credits" and refused.details.shortfall > 0
