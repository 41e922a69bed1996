"""Signed, retried webhook deliveries: per-job callbacks and workspace subscriptions.

Three modules, one concern each:

- ``records.py``: the delivery records (enqueue a job's callback or a subscription's event,
  replay one with the same ``eventId``, the control plane's views);
- ``signing.py``: the bytes a delivery carries, the headers that prove who sent them, and the
  check of an attempt's signature the inspector shows;
- ``worker.py``: the background task that claims each delivery when it falls due (one process
  of many on a shared store) and attempts it, with its retry schedule.

The names callers use are here, so a caller writes ``delivery.replay(...)``.
"""

from mockserver.platform.delivery import signing
from mockserver.platform.delivery.records import (
    SUBSCRIPTIONS,
    checked_view,
    deliveries,
    enqueue_callback,
    enqueue_subscriptions,
    for_subscriptions,
    replay,
    view,
)
from mockserver.platform.delivery.signing import signature_check, signed_delivery
from mockserver.platform.delivery.worker import (
    TICK,
    DeliveryWorker,
    check_listener_address,
    check_listener_url,
    retryable,
)

__all__ = [
    "SUBSCRIPTIONS",
    "TICK",
    "DeliveryWorker",
    "check_listener_address",
    "check_listener_url",
    "checked_view",
    "deliveries",
    "enqueue_callback",
    "enqueue_subscriptions",
    "for_subscriptions",
    "replay",
    "retryable",
    "signature_check",
    "signed_delivery",
    "signing",
    "view",
]
