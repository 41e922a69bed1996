"""Defects of webhooks: the subscription shown (``show_subscription``), each delivery's body and
signature (``delivery_message``), its retries (``retry_status``), which jobs' events reach
subscriptions (``for_subscriptions``) and what a terminal job carries (``carries_artifacts``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from mockserver.platform.delivery import signing
from mockserver.runtime import Runtime
from mockserver.seams import Headers, Seams
from tests.defects.defect import Apply, Defect

Record = dict[str, Any]
#: rewrites one attempt's (body, headers) in place of the product's; gets the record, the opened
#: secret, when it is sent and the attempt's number
MessageRewrite = Callable[[Record, str, datetime, int, bytes, Headers], tuple[bytes, Headers]]


def _secret_echoed(seams: Seams) -> Seams:
    previous = seams.show_subscription

    def show(rt: Runtime, subscription: Record) -> Record:
        shown = previous(rt, subscription)
        shown["secret"] = rt.secrets.open(subscription["_secret"])
        return shown

    return replace(seams, show_subscription=show)


def rewriting_deliveries(rewrite: MessageRewrite) -> Apply:
    """A defect that rewrites every delivery attempt's body and headers."""

    def apply(seams: Seams) -> Seams:
        previous = seams.delivery_message

        def message(
            record: Record, secret: str, sent_at: datetime, number: int
        ) -> tuple[bytes, Headers]:
            body, headers = previous(record, secret, sent_at, number)
            return rewrite(record, secret, sent_at, number, body, dict(headers))

        return replace(seams, delivery_message=message)

    return apply


def _new_event_id_on_retry(
    record: Record, secret: str, sent_at: datetime, number: int, body: bytes, headers: Headers
) -> tuple[bytes, Headers]:
    if number > 1:
        new_id = f"{record['eventId']}_{number}"
        body = body.replace(record["eventId"].encode(), new_id.encode())
        headers["X-Service-Event-Id"] = new_id
        headers["X-Service-Signature"] = signing.sign(secret, headers["X-Service-Timestamp"], body)
    return body, headers


def _delivery_timestamp_without_z(
    record: Record, secret: str, sent_at: datetime, number: int, body: bytes, headers: Headers
) -> tuple[bytes, Headers]:
    timestamp = sent_at.isoformat()
    headers["X-Service-Timestamp"] = timestamp
    headers["X-Service-Signature"] = signing.sign(secret, timestamp, body)
    return body, headers


def _signature_over_reserialised_body(
    record: Record, secret: str, sent_at: datetime, number: int, body: bytes, headers: Headers
) -> tuple[bytes, Headers]:
    reserialised = json.dumps(json.loads(body), sort_keys=True).encode()
    headers["X-Service-Signature"] = signing.sign(
        secret, headers["X-Service-Timestamp"], reserialised
    )
    return body, headers


def _uppercase_signature_hex(
    record: Record, secret: str, sent_at: datetime, number: int, body: bytes, headers: Headers
) -> tuple[bytes, Headers]:
    signature = headers["X-Service-Signature"].removeprefix(signing.SIGNATURE_PREFIX)
    headers["X-Service-Signature"] = signing.SIGNATURE_PREFIX + signature.upper()
    return body, headers


def _retry_after_400(seams: Seams) -> Seams:
    previous = seams.retry_status

    def retry_status(status: int) -> bool:
        return status == 400 or previous(status)

    return replace(seams, retry_status=retry_status)


def _render_delivered_to_subscriptions(seams: Seams) -> Seams:
    previous = seams.for_subscriptions

    def for_subscriptions(job: Record, event: str) -> bool:
        return job["kind"] in ("render", "3d-from-text", "3d-from-image") or previous(job, event)

    return replace(seams, for_subscriptions=for_subscriptions)


def _qa_failed_artifacts(seams: Seams) -> Seams:
    previous = seams.carries_artifacts

    def carries_artifacts(status: str) -> bool:
        return status == "qa_failed" or previous(status)

    return replace(seams, carries_artifacts=carries_artifacts)


DEFECTS: dict[str, Defect] = {
    "secret-echoed": Defect("the webhook secret is never returned", _secret_echoed),
    "signature-over-reserialised-body": Defect(
        "the signature is over the raw body bytes sent",
        rewriting_deliveries(_signature_over_reserialised_body),
    ),
    "uppercase-signature-hex": Defect(
        "the signature is lowercase hex", rewriting_deliveries(_uppercase_signature_hex)
    ),
    "delivery-timestamp-without-z": Defect(
        "X-Service-Timestamp is UTC ending in Z",
        rewriting_deliveries(_delivery_timestamp_without_z),
    ),
    "new-event-id-on-retry": Defect(
        "a retried delivery keeps its eventId", rewriting_deliveries(_new_event_id_on_retry)
    ),
    "retry-after-400": Defect("a delivery answered 400 is not retried", _retry_after_400),
    "render-delivered-to-subscriptions": Defect(
        "subscriptions cover neither renders from POST /v1/video/render nor 3D jobs",
        _render_delivered_to_subscriptions,
    ),
    "qa-failed-artifacts": Defect(
        "only done carries artifacts: no media from a qa_failed job", _qa_failed_artifacts
    ),
}
