"""The defects the suite must catch, each breaking one rule of the contract.

Each is a test-only defect of the bundled mock, built by the overlay of tests/defects/ (which
replaces named seams of the mock: ``live_mock(defects=[NAME])``, ``python -m tests.defects
--defect NAME``), and names the check that must catch it; tests/conformance/test_defects.py
proves each caught.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Defect:
    name: str
    rule: str  # the rule of the contract it breaks
    only: tuple[str, ...]  # what a run selects to catch it quickly
    check: str  # the check that must fail


DEFECTS = [
    Defect("no-request-id-on-errors", "every response carries x-request-id",
           ("envelope",), "envelope-request-id"),
    Defect("forbidden-instead-of-unauthorized", "a missing or invalid key answers 401 "
           "unauthorized", ("auth-missing-key",), "auth-missing-key"),
    Defect("empty-next-cursor", "nextCursor is null on the last page",
           ("pagination-walk",), "pagination-walk"),
    Defect("repeat-item-across-pages", "a walk sees each item once",
           ("pagination-walk",), "pagination-walk"),
    Defect("has-more-disagrees", "hasMore is true exactly when nextCursor is not null",
           ("pagination-walk",), "pagination-walk"),
    Defect("unbound-cursors", "cursors are bound to the query that produced them",
           ("pagination-cursors",), "pagination-cursors"),
    Defect("tampered-cursor-accepted", "an unusable cursor answers 400 invalid_request",
           ("pagination-cursors",), "pagination-cursors"),
    Defect("limit-not-enforced", "limit outside 1 to 100 answers 400 invalid_request",
           ("pagination-limit-bounds",), "pagination-limit-bounds"),
    Defect("deprecated-after-refused", "deprecated `after` on assets is still accepted",
           ("pagination-deprecated-params",), "pagination-deprecated-params"),
    Defect("stream-goes-backwards", "an ordered stream's nextAfter never goes backwards",
           ("pagination-ordered-streams",), "pagination-ordered-streams"),
    Defect("timestamp-without-z", "timestamps are UTC and end in Z",
           ("envelope",), "envelope-timestamps"),
    Defect("code-under-wrong-status", "a code is never moved to another status (404 answers "
           "invalid_request)", ("envelope",), "envelope-error-code"),
    Defect("not-found-as-empty-200", "an unknown path answers 404 not_found with a JSON "
           "error body", ("envelope",), "envelope-json"),
    Defect("no-rate-limit-headers", "authenticated responses carry x-ratelimit-*",
           ("envelope",), "envelope-rate-limit-headers"),
    Defect("error-body-without-code", "every error body has a code",
           ("envelope",), "envelope-error-body"),
    Defect("success-flag-missing", "every success body has success: true",
           ("envelope",), "envelope-success-flag"),
    Defect("openapi-needs-key", "GET /v1/openapi.json answers without a key",
           ("auth-public-contract",), "auth-public-contract"),
    Defect("workspace-slug-ignored", "a disagreeing X-Workspace-Slug is refused",
           ("auth-workspace-slug",), "auth-workspace-slug"),
    Defect("cross-workspace-readable", "ids of other workspaces answer 404 not_found",
           ("auth-cross-workspace",), "auth-cross-workspace"),
    Defect("rate-limited-without-retry-after", "429 rate_limited carries Retry-After",
           (), "rate-limit"),
    Defect("idempotency-key-optional", "a missing required Idempotency-Key answers 400",
           ("idempotency-key-required",), "idempotency-key-required"),
    Defect("replay-creates-again", "a retry with the same key answers the same resource",
           ("idempotency-replay",), "idempotency-replay"),
    Defect("replay-charges-twice", "an idempotent replay is charged once",
           ("idempotency-single-charge",), "idempotency-single-charge"),
    Defect("secret-echoed", "the webhook secret is never returned",
           ("webhooks-subscription-deliveries",), "webhooks-subscription-deliveries"),
    Defect("signature-over-reserialised-body", "the signature is over the raw body bytes",
           ("webhooks-subscription-deliveries",), "webhooks-subscription-deliveries"),
    Defect("uppercase-signature-hex", "the signature is lowercase hex",
           ("webhooks-callback-deliveries",), "webhooks-callback-deliveries"),
    Defect("delivery-timestamp-without-z", "X-Service-Timestamp is UTC ending in Z",
           ("webhooks-callback-deliveries",), "webhooks-callback-deliveries"),
    Defect("new-event-id-on-retry", "a retried delivery keeps its eventId",
           ("webhooks-callback-deliveries",), "webhooks-callback-deliveries"),
    Defect("retry-after-400", "a delivery answered 400 is not retried",
           ("webhooks-subscription-deliveries",), "webhooks-subscription-deliveries"),
    Defect("short-callback-secret-accepted", "a callbackSecret under 32 characters is "
           "refused with 400", ("webhooks-url-policy",), "webhooks-url-policy"),
    Defect("insufficient-credits-without-shortfall", "402 insufficient_credits gives the "
           "shortfall in details", ("limits-payment-required",), "limits-payment-required"),
    Defect("budget-cap-lifted-by-top-up", "budget_capped does not clear with a top-up",
           ("limits-payment-required",), "limits-payment-required"),
    Defect("unavailable-capability-served", "a capability reported unavailable answers 503 "
           "capability_unavailable", ("limits-capability-unavailable",),
           "limits-capability-unavailable"),
    Defect("no-payload-limit", "a body over the size limit answers 413 payload_too_large",
           ("limits-payload-too-large",), "limits-payload-too-large"),
    Defect("validation-answers-422", "schema failures answer 400 invalid_request",
           ("schema-negative", "schema-responses"), "schema-negative"),
    Defect("server-error-on-max-limit", "no 5xx for valid input (limit = 100 on a list)",
           ("pagination-walk", "schema-server-errors"), "schema-server-errors"),
    Defect("default-not-applied", "an omitted field takes its stated default",
           ("records-defaults",), "records-defaults"),
    Defect("unconnected-account-accepted", "a community campaign needs a connected account",
           ("records-community-account",), "records-community-account"),
    Defect("classification-drifts", "classification is deterministic",
           ("workflows-classify-deterministic",), "workflows-classify-deterministic"),
    Defect("deprecations-unmarked", "deprecations are marked deprecated: true in the document",
           ("schema-published-document",), "schema-published-document"),
    Defect("capabilities-billed", "GET /v1/capabilities is free; never billed",
           ("limits-capabilities-free",), "limits-capabilities-free"),
    Defect("openapi-rate-limited", "GET /v1/openapi.json is not rate limited (none counted)",
           ("auth-openapi-not-rate-limited",), "auth-openapi-not-rate-limited"),
    Defect("unowned-project-filed", "a project the workspace does not own answers not_found; "
           "the work is never filed elsewhere", ("auth-unowned-project",),
           "auth-unowned-project"),
    Defect("usage-needs-spend", "reading usage never needs a key that can spend",
           ("auth-usage-without-spend",), "auth-usage-without-spend"),
    Defect("revocation-ignored", "revoking a key takes effect within 30 seconds",
           ("auth-key-revocation",), "auth-key-revocation"),
    Defect("render-delivered-to-subscriptions", "subscriptions cover neither renders from "
           "POST /v1/video/render nor 3D jobs", ("webhooks-subscription-coverage",),
           "webhooks-subscription-coverage"),
    Defect("qa-failed-artifacts", "media is never published from a qa_failed job (artifacts "
           "null)", ("webhooks-qa-failed-not-published",), "webhooks-qa-failed-not-published"),
    Defect("overlapping-retries-execute", "an Idempotency-Key identifies the logical operation: "
           "overlapping retries execute once", ("idempotency-overlapping-retries",),
           "idempotency-overlapping-retries"),
    Defect("overlapping-charges-lost", "the workspace is billed every call: paid calls at once "
           "are all charged", ("limits-concurrent-billing",), "limits-concurrent-billing"),
    Defect("bucket-per-key", "all keys of one person share the rate-limit bucket",
           (), "rate-limit-shared-bucket"),
    Defect("other-key-not-paused", "a 429 earned with one key of a person pauses their other "
           "keys during Retry-After", (), "rate-limit-shared-bucket"),
    Defect("paused-autopilot-runs", "a paused autopilot refuses manual runs, approvals and "
           "retries with 409 conflict", ("workflows-autopilot-paused",),
           "workflows-autopilot-paused"),
    Defect("stale-generation-accepted", "a stale expectedGeneration answers 409 conflict with "
           "details.currentGeneration", ("workflows-approve-generation",),
           "workflows-approve-generation"),
    Defect("remix-priced-flat", "a remix costs one video analysis per url source",
           ("workflows-remix-pricing",), "workflows-remix-pricing"),
    Defect("max-credits-ignored", "a live price above maxCredits answers 409 conflict, nothing "
           "charged", ("workflows-max-credits",), "workflows-max-credits"),
    Defect("stale-word-cursor-served", "a wordCursor of a changed composition answers 409 "
           "stale_cursor", ("workflows-stale-word-cursor",), "workflows-stale-word-cursor"),
    Defect("legacy-cursor-accepted", "GET /v1/projects refuses cursors issued before the "
           "2026-10-10 store switch", ("pagination-legacy-projects-cursor",),
           "pagination-legacy-projects-cursor"),
    Defect("partial-update-clears-unsent", "a PATCH changes only the fields sent",
           ("records-partial-update",), "records-partial-update"),
    Defect("products-none-as-empty", 'products ["none"] differs from [] and is kept as sent',
           ("records-products-none",), "records-products-none"),
    Defect("charge-differs-from-quote", "quote and charge agree",
           ("limits-quote-equals-charge",), "limits-quote-equals-charge"),
    Defect("job-leaves-terminal", "a terminal job status never changes",
           ("jobs-status-closed-set",), "jobs-status-closed-set"),
    Defect("deprecated-field-dropped", "a deprecated field stays returned (artifacts.video)",
           ("schema-deprecated-fields",), "schema-deprecated-fields"),
    Defect("offset-wins-over-cursor", "when cursor and offset are both sent, cursor wins",
           ("pagination-catalog-precedence",), "pagination-catalog-precedence"),
    Defect("forbidden-as-not-found", "a governance refusal answers 403 forbidden, never 404",
           ("auth-forbidden-role",), "auth-forbidden-role"),
    Defect("outage-answers-401", "a credential-store outage answers 503 upstream_unavailable "
           "with Retry-After, never 401", ("auth-credential-store-outage",),
           "auth-credential-store-outage"),
    Defect("retry-after-not-integer", "Retry-After on a 429 is seconds to wait (an integer)",
           ("rate-limit",), "rate-limit-retry-after"),
    Defect("upstream-retry-after-not-integer", "Retry-After on a 503 upstream_unavailable, "
           "when sent, is seconds to wait", ("auth-credential-store-outage",
           "envelope-retry-after-503"), "envelope-retry-after-503"),
    Defect("failed-call-holds-key", "a failed call does not hold its key",
           ("idempotency-failed-call-frees-key",), "idempotency-failed-call-frees-key"),
    Defect("refused-call-charged", "nothing is charged for a paid call that was refused",
           ("model-workspace",), "model-workspace"),
    Defect("channel-patch-resets-unsent", "a PATCH changes only the fields sent (a channel's)",
           ("model-workspace",), "model-workspace"),
    Defect("job-status-outside-set", "a job's status is one of the contract's closed set",
           ("model-workspace",), "model-workspace"),
    Defect("job-events-out-of-order", "a job's event stream is in sequence order",
           ("model-workspace",), "model-workspace"),
    Defect("malformed-key-answers-400", "a malformed Authorization header answers 401",
           ("auth-malformed-key",), "auth-malformed-key"),
    Defect("unknown-key-answers-404", "an unknown key answers 401 unauthorized",
           ("auth-unknown-key",), "auth-unknown-key"),
    Defect("campaign-without-updated-at", "a campaign carries its required updatedAt",
           ("pagination-walk", "schema-responses"), "schema-responses"),
    Defect("server-error-on-film-format", "valid input never answers 5xx",
           ("schema-positive",), "schema-positive"),
    Defect("created-record-unreadable", "a link's target exists",
           ("schema-stateful",), "schema-stateful"),
]  # fmt: skip
