"""A mock served by a real ``mockserver`` process (for kills, restarts and many workers): the
conformance suite's own (conformance/mockprocess.py), given the store's options."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from conformance.mockprocess import MockProcess

SEED = 7


def mock_process(*options: str) -> MockProcess:
    """A started mock process with these options (manual clock, loopback callbacks allowed)."""
    return MockProcess(seed=SEED, options=options).start(timeout=60)


@contextmanager
def running(*options: str) -> Iterator[MockProcess]:
    mock = mock_process(*options)
    try:
        yield mock
    finally:
        mock.stop()
