"""A client that goes away before its request's body has arrived (a load generator stopping
mid-request): nothing can be answered, nothing is logged as an error, and the journal says
the client left (499)."""

from __future__ import annotations

import logging
import socket
import time
from urllib.parse import urlsplit

import pytest


def test_a_client_gone_before_its_body_is_not_an_error(live, live_server, caplog):
    _, control = live
    address = urlsplit(live_server.base_url)
    head = (
        "POST /v1/products HTTP/1.1\r\nHost: mock\r\nAuthorization: Bearer sk_test_acme_owner\r\n"
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name": '
    )
    with caplog.at_level(logging.WARNING, logger="mockserver"):
        with socket.create_connection((address.hostname, address.port), timeout=5) as sock:
            sock.sendall(head.encode())
            time.sleep(0.2)  # the request is being read when the client leaves
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            journal = control.call("GET", "/requests?limit=100")["requests"]
            entries = [e for e in journal if e.get("path") == "/v1/products"]
            if entries:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the request of the client that left was not journalled")
    assert entries[-1]["status"] == 499
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
