"""Channels: list and update (or archive)."""

from __future__ import annotations

from typing import Any

from mockserver.areas.channels import state
from mockserver.call import Call
from mockserver.platform.envelope import public
from mockserver.registry import handler


@handler("listChannels")
def list_channels(call: Call) -> dict[str, Any]:
    return call.page("channels", call.records("channels"))


@handler("updateChannel")
def update_channel(call: Call) -> dict[str, Any]:
    channel = state.get_channel(call, call.path["channelId"])
    return {"channel": public(state.update(call, channel, call.body))}
