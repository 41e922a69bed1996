"""The model's rules: each a name, the sentence of the interface document it enforces, and why it
may have nothing to judge in a run.

The quotes are copied from the interface document (``interface-spec.md``); a failure names its
rule and shows the quote.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelRule:
    name: str
    quote: str
    unjudged: str  # the skip reason when the rule judged nothing in a run


RULES: dict[str, ModelRule] = {
    rule.name: rule
    for rule in (
        ModelRule(
            "ledger",
            "Prices are read from the table the charge uses, so quote and charge agree.",
            "no paid call was followed by a balance read",
        ),
        ModelRule(
            "replay",
            "Idempotency: an `Idempotency-Key` header is sent on every call that spends credits "
            "or creates something; it identifies the logical operation and is reused on retry.",
            "no call with an Idempotency-Key was replayed",
        ),
        ModelRule(
            "key-freed",
            "A failed call does not hold its key.",
            "no refused call was followed by a valid one with the same key",
        ),
        ModelRule(
            "partial-update",
            "`PATCH /v1/campaigns/{campaignId}` changes only the fields sent.",
            "no partial update was read back",
        ),
        ModelRule(
            "products-none",
            "The two differ in meaning and the engine reads the difference.",
            'no channel was given products ["none"] or [] and read back',
        ),
        ModelRule(
            "job-status",
            "`status` (closed set; terminal values `done`, `cancelled`, `failed`, `qa_failed`)",
            "no job was read",
        ),
        ModelRule(
            "terminal-final",
            "Job status | `done`, `cancelled`, `failed`, `qa_failed` (terminal)",
            "no job was read again after it reached a terminal status",
        ),
        ModelRule(
            "event-sequence",
            "`GET /v1/jobs/{jobId}/events`: ordered stream; query `after` (last event "
            "`sequence` applied), `limit`; response `nextAfter`, `hasMore`.",
            "no job event stream was read",
        ),
        ModelRule(
            "walk-once",
            "Cursors are opaque, bound to the query that produced them (keep other filters "
            "unchanged), and short-lived.",
            "no cursor-paged list was walked while records were created",
        ),
        ModelRule(
            "subscription-coverage",
            "Created with `POST /v1/webhook-subscriptions`; cover footage edits, media analysis "
            "and publishing for the whole workspace (not renders from `POST /v1/video/render` "
            "nor 3D jobs, which use callbacks or polling).",
            "no subscription delivery could be judged",
        ),
    )
}

# Quotes of the partial-update rule for the operations whose own sentence states it.
PARTIAL_UPDATE_QUOTES = {
    "updateCampaign": "`PATCH /v1/campaigns/{campaignId}` changes only the fields sent.",
    "updateCommunityCampaign": "`PATCH /v1/community-campaigns/{campaignId}` changes only the "
    "fields sent.",
}
PARTIAL_UPDATE_DEFAULT = "only sent fields change"

# The subscription events a job's terminal status emits (the interface document's Events table
# and its "job reaches terminal state" move).
TERMINAL_EVENTS = {
    "done": "job.completed",
    "failed": "job.failed",
    "qa_failed": "job.failed",
    "cancelled": "job.cancelled",
}
