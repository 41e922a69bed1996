"""The delivery loop stops when told to, even woken in the same moment (ending a sandbox just
after its clock moved). On Python 3.11 ``asyncio.wait_for`` swallows a cancellation that
arrives as the awaited event is set: the loop went on, and the request ending the sandbox
waited for it forever (a 30 s ReadTimeout in tests/store/test_workers.py under load)."""

from __future__ import annotations

import asyncio

from mockserver.app import create_app


def test_a_delivery_loop_woken_and_stopped_at_once_stops():
    async def scenario() -> bool:
        runtime = create_app().runtime
        runtime.delivery.start()
        await asyncio.sleep(0.05)  # the loop now waits to be woken
        for _ in range(20):
            runtime.delivery.wake()  # as a clock moved: the wake-up is set...
            await asyncio.wait_for(runtime.delivery.stop(), 5)  # ...as the stop cancels
            runtime.delivery.start()
            await asyncio.sleep(0.01)
        await asyncio.wait_for(runtime.delivery.stop(), 5)
        return True

    assert asyncio.run(scenario())
