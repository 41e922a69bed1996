"""Control operations of the community area: a person reviews an agent's pending drafts."""

from __future__ import annotations

from typing import Any

from mockserver.areas.community import activity
from mockserver.control.plane import control
from mockserver.platform.errors import not_found
from mockserver.platform.validation import Validated
from mockserver.runtime import Runtime


@control("reviewCommunityDrafts")
def review_drafts(rt: Runtime, call: Validated) -> dict[str, Any]:
    campaign_id = call.path["campaignId"]
    body = call.body if isinstance(call.body, dict) else {}
    found = rt.world.find(activity.COLLECTION, campaign_id)
    if found is None:
        raise not_found(f"community campaign {campaign_id!r}")
    _, campaign = found
    activity.review(campaign, rt.clock.now().timestamp(), body.get("posts"), body.get("replies"))
    return {"campaignId": campaign_id, "activity": campaign["activity"]}
