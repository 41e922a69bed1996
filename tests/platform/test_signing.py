"""Webhook signing: the signer, the independent conformance verifier and the openssl vectors."""

from __future__ import annotations

import base64
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance import signatures
from mockserver.platform.delivery import signing
from mockserver.resources import fixtures_dir

SIGNATURE_SHAPE = re.compile(r"sha256=[0-9a-f]{64}")
TIMESTAMP_SHAPE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
SECRET = "s" * 32


@cache
def load_vectors() -> tuple[dict[str, Any], ...]:
    path = fixtures_dir() / "webhooks" / "vectors.json"
    return tuple(json.loads(path.read_text(encoding="utf-8"))["vectors"])


def vectors(*, valid: bool) -> list[Any]:
    return [pytest.param(v, id=v["name"]) for v in load_vectors() if v["valid"] is valid]


def body_of(vector: dict[str, Any]) -> bytes:
    return base64.b64decode(vector["body_base64"], validate=True)


secrets = st.text(min_size=32, max_size=512)
bodies = st.binary(max_size=2048)
moments = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)
).map(lambda moment: moment.replace(microsecond=0))
timestamps = moments.map(signing.format_timestamp)


# --------------------------------------------------------------------------------------------
# The vectors file
# --------------------------------------------------------------------------------------------


def test_vectors_file_is_complete() -> None:
    all_vectors = load_vectors()
    names = [v["name"] for v in all_vectors]
    assert len(all_vectors) >= 12
    assert len(set(names)) == len(names)
    assert any(not v["valid"] for v in all_vectors)
    required = {"name", "secret", "timestamp", "body_base64", "signature", "valid", "note"}
    for vector in all_vectors:
        assert set(vector) == required, vector["name"]
        assert 32 <= len(vector["secret"]) <= 512, vector["name"]
        assert signatures.check_timestamp_format(vector["timestamp"]), vector["name"]


def test_vectors_cover_the_tricky_bodies() -> None:
    valid = {v["name"]: body_of(v) for v in load_vectors() if v["valid"]}
    raw, escaped = valid["utf8_raw_non_ascii"], valid["utf8_escaped_non_ascii"]
    assert raw != escaped and json.loads(raw) == json.loads(escaped)
    assert "東京".encode() in raw and b"\\u6771\\u4eac" in escaped
    assert valid["whitespace_and_trailing_newline"].endswith(b"\n")
    assert valid["empty_object"] == b"{}"
    lengths = {len(v["secret"]) for v in load_vectors()}
    assert {32, 512} <= lengths


# --------------------------------------------------------------------------------------------
# Signer and verifier against the vectors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("vector", vectors(valid=True))
def test_signer_reproduces_valid_vector(vector: dict[str, Any]) -> None:
    signature = signing.sign(vector["secret"], vector["timestamp"], body_of(vector))
    assert signature == vector["signature"]


@pytest.mark.parametrize("vector", vectors(valid=True))
def test_verifier_accepts_valid_vector(vector: dict[str, Any]) -> None:
    args = (vector["secret"], vector["timestamp"], body_of(vector))
    assert signatures.verify(*args, vector["signature"])
    assert signatures.expected_signature(*args) == vector["signature"]


@pytest.mark.parametrize("vector", vectors(valid=False))
def test_verifier_rejects_invalid_vector(vector: dict[str, Any]) -> None:
    args = (vector["secret"], vector["timestamp"], body_of(vector))
    assert not signatures.verify(*args, vector["signature"])
    assert signing.sign(*args) != vector["signature"]


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------


@given(secret=secrets, moment=moments, body=bodies)
def test_verify_accepts_what_sign_produces(secret: str, moment: datetime, body: bytes) -> None:
    timestamp = signing.format_timestamp(moment)
    signature = signing.sign(secret, timestamp, body)
    assert SIGNATURE_SHAPE.fullmatch(signature)
    assert signatures.verify(secret, timestamp, body, signature)


@given(secret=secrets, timestamp=timestamps, body=bodies.filter(bool), data=st.data())
def test_flipping_any_body_byte_breaks_the_signature(
    secret: str, timestamp: str, body: bytes, data: st.DataObject
) -> None:
    index = data.draw(st.integers(0, len(body) - 1), label="index")
    flip = data.draw(st.integers(1, 255), label="xor")
    tampered = bytearray(body)
    tampered[index] ^= flip
    signature = signing.sign(secret, timestamp, body)
    assert not signatures.verify(secret, timestamp, bytes(tampered), signature)


@given(secret=secrets, first=timestamps, second=timestamps, body=bodies)
def test_changing_the_timestamp_breaks_the_signature(
    secret: str, first: str, second: str, body: bytes
) -> None:
    signature = signing.sign(secret, first, body)
    assert signatures.verify(secret, second, body, signature) is (first == second)


@given(secret=secrets, timestamp=timestamps, body=bodies)
def test_uppercase_or_unprefixed_signatures_are_rejected(
    secret: str, timestamp: str, body: bytes
) -> None:
    signature = signing.sign(secret, timestamp, body)
    hex_digest = signature.removeprefix("sha256=")
    for wrong in (hex_digest, "sha256=" + hex_digest.upper(), " " + signature, signature + "\n"):
        if wrong != signature:
            assert not signatures.verify(secret, timestamp, body, wrong)


@given(moment=st.datetimes(timezones=st.just(UTC)) | st.datetimes())
def test_format_timestamp_is_whole_seconds_utc(moment: datetime) -> None:
    text = signing.format_timestamp(moment)
    assert TIMESTAMP_SHAPE.fullmatch(text)
    assert signatures.check_timestamp_format(text)
    parsed = datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    assert timedelta(0) <= aware - parsed < timedelta(seconds=1)


def test_format_timestamp_converts_offsets_and_truncates() -> None:
    moment = datetime(2026, 11, 22, 12, 30, 5, 999_999, tzinfo=timezone(timedelta(hours=2)))
    assert signing.format_timestamp(moment) == "2026-11-22T10:30:05Z"
    assert signing.format_timestamp(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05Z"


@pytest.mark.parametrize(
    "value",
    ["2026-11-22T10:00:00.5Z", "2026-11-22T10:00:00+00:00", "2026-11-22 10:00:00Z",
     "2026-13-01T00:00:00Z", "2026-11-22T10:00:00z", "2026-11-22T10:00:00Z\n", ""],
)  # fmt: skip
def test_check_timestamp_format_refuses(value: str) -> None:
    assert not signatures.check_timestamp_format(value)


# --------------------------------------------------------------------------------------------
# Body and headers
# --------------------------------------------------------------------------------------------


def test_encode_body_is_compact_utf8_in_key_order() -> None:
    body = signing.encode_body({"z": 1, "a": "café 東京 🎬", "n": None})
    assert body == '{"z":1,"a":"café 東京 🎬","n":null}'.encode()


def test_encode_body_refuses_nan() -> None:
    with pytest.raises(ValueError):
        signing.encode_body({"x": float("nan")})


def test_delivery_headers_for_a_job_callback() -> None:
    body = signing.encode_body({"schemaVersion": "job-event.v1", "eventId": "evt_1"})
    timestamp = "2026-11-22T10:00:00Z"
    headers = signing.delivery_headers(
        secret=SECRET, timestamp=timestamp, body=body, event="render.completed",
        event_id="evt_1", job_id="job_1",
    )  # fmt: skip
    assert headers == {
        "Content-Type": "application/json",
        "X-Service-Signature": signatures.expected_signature(SECRET, timestamp, body),
        "X-Service-Timestamp": timestamp,
        "X-Service-Event": "render.completed",
        "X-Service-Event-Id": "evt_1",
        "X-Service-Job-Id": "job_1",
    }


def test_delivery_headers_for_a_subscription() -> None:
    headers = signing.delivery_headers(
        secret=SECRET, timestamp="2026-11-22T10:00:00Z", body=b"{}", event="job.completed",
        event_id="evt_2", subscription_id="sub_1",
    )  # fmt: skip
    assert headers["X-Service-Subscription-Id"] == "sub_1"
    assert "X-Service-Job-Id" not in headers


@pytest.mark.parametrize(
    "ids", [{}, {"job_id": "job_1", "subscription_id": "sub_1"}], ids=["neither", "both"]
)
def test_delivery_headers_need_exactly_one_id(ids: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        signing.delivery_headers(
            secret=SECRET, timestamp="2026-11-22T10:00:00Z", body=b"{}", event="job.completed",
            event_id="evt_3", **ids,
        )  # fmt: skip


@given(job=st.booleans(), subscription=st.booleans())
def test_delivery_headers_refuse_neither_or_both(job: bool, subscription: bool) -> None:
    ids = {"job_id": "job_1" if job else None, "subscription_id": "sub_1" if subscription else None}
    call = {
        "secret": SECRET, "timestamp": "2026-11-22T10:00:00Z", "body": b"{}",
        "event": "job.completed", "event_id": "evt_4",
    }  # fmt: skip
    if job == subscription:
        with pytest.raises(ValueError):
            signing.delivery_headers(**call, **ids)
    else:
        assert len(signing.delivery_headers(**call, **ids)) == 6


def test_delivery_headers_refuse_fractional_timestamp() -> None:
    with pytest.raises(ValueError):
        signing.delivery_headers(
            secret=SECRET, timestamp="2026-11-22T10:00:00.123Z", body=b"{}",
            event="job.completed", event_id="evt_5", job_id="job_1",
        )  # fmt: skip
