"""Every operation of the contract answers a valid request with a 2xx that the contract allows.

One walk through the whole API, in an order that creates what later calls need. Each response
is checked against the contract by the kit's checker and by openapi-core (tests.support).
"""

from __future__ import annotations

from typing import Any

from mockserver.contract import default_contract

SECRET = "walk-secret-" + "w" * 30
RECEIVER = "https://93.184.216.34/hooks"


def test_every_operation_answers_a_valid_request(api, control):
    seen: dict[str, int] = {}

    def call(operation_id: str, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = api.request(method, path, **kwargs)
        assert 200 <= response.status_code < 300, (
            operation_id,
            response.status_code,
            response.text,
        )
        op = default_contract().operations[operation_id]
        assert op.method == method
        seen[operation_id] = response.status_code
        return response.json() if response.content else {}

    def idem(key: str) -> dict[str, str]:
        return {"Idempotency-Key": key}

    call("getOpenApi", "GET", "/v1/openapi.json", key=None)
    call("getCapabilities", "GET", "/v1/capabilities")
    call("listCampaigns", "GET", "/v1/campaigns", params={"status": "active", "limit": 5})
    call("updateCampaign", "PATCH", "/v1/campaigns/cmp_acme_002", json={"status": "paused"})
    call("listChannels", "GET", "/v1/channels")
    product = call("createProduct", "POST", "/v1/products", json={"name": "Walk"})["product"]
    call("listProducts", "GET", "/v1/products")
    call(
        "updateChannel",
        "PATCH",
        "/v1/channels/chn_money_minute",
        json={"products": [product["id"]]},
    )
    project = call(
        "createProject", "POST", "/v1/projects", json={"title": "Walk"}, headers=idem("p")
    )["project"]
    call("listProjects", "GET", "/v1/projects")

    # Generation and jobs.
    call(
        "createFilmOutline",
        "POST",
        "/v1/text/film",
        json={"title": "Walk", "logline": "A walk.", "genre": "drama", "projectId": project["id"]},
    )
    render = call(
        "renderVideo",
        "POST",
        "/v1/video/render",
        json={
            "projectId": project["id"],
            "story": "A walk in the park.",
            "callbackUrl": RECEIVER,
            "callbackSecret": SECRET,
        },
    )["job"]
    edit = call(
        "editVideo",
        "POST",
        "/v1/video/edit",
        json={
            "projectId": project["id"],
            "footageUrls": ["https://videos.example.com/cooking/perfect-rice"],
        },
    )["job"]
    call(
        "createFootage",
        "POST",
        "/v1/video/footage",
        json={
            "projectId": project["id"],
            "prompt": "Rain on a window",
            "durationSeconds": 5,
            "maxCredits": 1000,
        },
    )
    call(
        "remixVideo",
        "POST",
        "/v1/video/remix",
        json={
            "projectId": project["id"],
            "sources": [{"transcript": "Hello there."}],
            "outputFormat": "scenes",
        },
    )
    call(
        "createModelFromText",
        "POST",
        "/v1/3d/from-text",
        json={"projectId": project["id"], "prompt": "A teapot"},
    )
    call(
        "createModelFromImage",
        "POST",
        "/v1/3d/from-image",
        json={"projectId": project["id"], "imageUrl": "https://images.example.com/teapot.png"},
    )
    call(
        "createAgentRun",
        "POST",
        "/v1/agent/runs",
        json={
            "projectId": project["id"],
            "goal": "A short",
            "maxCredits": 500,
            "steps": [
                {
                    "operation": "createFilmOutline",
                    "arguments": {"title": "T", "logline": "L", "genre": "comedy"},
                }
            ],
        },
    )
    control.advance(600)
    call("getJobProposal", "GET", f"/v1/jobs/{edit['id']}/proposal", params={"limit": 5})
    call("approveVideoEdit", "POST", "/v1/video/edit/approve", json={"jobId": edit["id"]})
    control.advance(3600)
    call("getJob", "GET", f"/v1/jobs/{render['id']}")
    call("listJobs", "GET", "/v1/jobs", params={"status": "done", "limit": 3})
    call("listJobEvents", "GET", f"/v1/jobs/{render['id']}/events", params={"after": 1, "limit": 2})

    # Webhook subscriptions.
    subscription = call(
        "createWebhookSubscription",
        "POST",
        "/v1/webhook-subscriptions",
        json={"url": RECEIVER, "events": ["job.completed"], "secret": SECRET},
        headers=idem("s"),
    )["subscription"]
    call("listWebhookSubscriptions", "GET", "/v1/webhook-subscriptions")
    call("getWebhookSubscription", "GET", f"/v1/webhook-subscriptions/{subscription['id']}")
    call(
        "updateWebhookSubscription",
        "PATCH",
        f"/v1/webhook-subscriptions/{subscription['id']}",
        json={"enabled": False},
    )
    call("deleteWebhookSubscription", "DELETE", f"/v1/webhook-subscriptions/{subscription['id']}")

    # Review.
    transcript = call(
        "getProjectTranscript",
        "GET",
        "/v1/projects/prj_acme_01/transcript",
        params={"wordLimit": 5},
    )["transcript"]
    source = transcript["sources"][0]
    call(
        "editProjectTranscript",
        "POST",
        "/v1/projects/prj_acme_01/transcript",
        json={"action": "cut", "sourceId": source["id"], "wordIds": [source["words"][0]["id"]]},
    )
    call(
        "addProjectComment",
        "POST",
        f"/v1/projects/{project['id']}/comments",
        json={"text": "Nice cut."},
    )
    call("listProjectComments", "GET", f"/v1/projects/{project['id']}/comments")
    call("shareProject", "POST", f"/v1/projects/{project['id']}/share")
    call(
        "getVariationBatch",
        "GET",
        "/v1/projects/prj_acme_01/variations/vb_acme_01",
        params={"limit": 5},
    )

    # Assets, hooks, catalog, workflow.
    imported = call(
        "importAsset",
        "POST",
        "/v1/assets/import",
        json={"url": "https://cdn.acme.example/raw/walk.mp4"},
        headers=idem("a"),
    )["asset"]
    call("listAssets", "GET", "/v1/assets", params={"after": 1})
    control.advance(600)
    call(
        "getAssetTranscript", "GET", f"/v1/assets/{imported['id']}/transcript", params={"limit": 3}
    )
    call("searchHooks", "GET", "/v1/hooks", params={"limit": 5})
    call("getHookStats", "GET", "/v1/hooks/stats")
    call("listCatalogVideos", "GET", "/v1/video/catalog/cooking", params={"limit": 5})
    call("createContextSnapshot", "POST", "/v1/workflow/context-snapshots", json={})

    # Themes, discovery and viral content.
    call(
        "classifyThemes",
        "POST",
        "/v1/themes/classify",
        json={"title": "Index funds for beginners", "niche": "personal finance"},
    )
    call("listThemes", "GET", "/v1/themes", params={"limit": 10})
    call("getTheme", "GET", "/v1/themes/personal-finance")
    call(
        "buildNicheProfile",
        "POST",
        "/v1/themes/niche-profile",
        json={
            "businessName": "Acme Budgets",
            "description": "Budgeting spreadsheets for young families.",
        },
    )
    call("getDiscoveryHealth", "GET", "/v1/discovery/configs/chn_money_minute/health")
    call(
        "compileDiscoveryPlan",
        "POST",
        "/v1/discovery/configs/chn_code_daily/plan",
        json={"niche": "python"},
    )
    call("listDiscoveryConfigs", "GET", "/v1/discovery/configs")
    call("listDiscoveryRuns", "GET", "/v1/discovery/runs", params={"channelId": "chn_money_minute"})
    call("listViralContent", "GET", "/v1/viral-content", params={"minScore": 50})
    call("getViralContent", "GET", "/v1/viral-content/vc_acme_001")

    # Campaign automation.
    created = call(
        "createCommunityCampaign",
        "POST",
        "/v1/community-campaigns",
        json={
            "name": "Walk",
            "connectedAccountId": "acc_acme_forum_main",
            "objective": "Be useful.",
            "keywords": ["budgeting"],
        },
        headers=idem("c"),
    )
    campaign_id = created["campaign"]["id"]
    call("listCommunityCampaigns", "GET", "/v1/community-campaigns")
    call("getCommunityCampaign", "GET", f"/v1/community-campaigns/{campaign_id}")
    call(
        "updateCommunityCampaign",
        "PATCH",
        f"/v1/community-campaigns/{campaign_id}",
        json={"name": "Walk 2"},
    )
    call("getAutopilot", "GET", "/v1/autopilots/chn_carry_on")
    call("saveAutopilot", "PUT", "/v1/autopilots/chn_carry_on", json={"enabled": True})
    run = call(
        "createAutopilotRun",
        "POST",
        "/v1/autopilot-runs",
        json={"channelId": "chn_carry_on"},
        headers=idem("r"),
    )["run"]
    control.advance(1200)
    call("approveAutopilotRun", "POST", f"/v1/autopilot-runs/{run['id']}/approve")
    call("saveAutopilot", "PUT", "/v1/autopilots/chn_home_strength", json={"enabled": True})
    call("retryAutopilotRun", "POST", "/v1/autopilot-runs/run_acme_home_strength_0001/retry")
    call("listAutopilotRuns", "GET", "/v1/autopilot-runs", params={"channelId": "chn_carry_on"})
    call("getUsage", "GET", "/v1/usage", key="viewer")

    assert set(seen) == set(default_contract().operations), set(
        default_contract().operations
    ) - set(seen)
