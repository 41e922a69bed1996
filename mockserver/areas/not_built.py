"""Operations of the contract this mock does not emulate yet.

Each answers ``503 capability_unavailable`` with a message saying so, rather than canned data.
The list shrinks as areas are built; ``tests/mock/test_startup.py`` checks what is left.
"""

from __future__ import annotations

from mockserver.call import Call
from mockserver.platform.errors import ApiError
from mockserver.registry import handler

NOT_BUILT: tuple[str, ...] = ()


def _not_built(operation_id: str):
    def answer(call: Call) -> None:
        raise ApiError(
            "capability_unavailable",
            f"{operation_id} is in the contract but this mock does not emulate it yet",
            details={"reason": "not_built", "operationId": operation_id},
        )

    return answer


for _operation_id in NOT_BUILT:
    handler(_operation_id, writes=False)(_not_built(_operation_id))
