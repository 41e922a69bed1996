"""Comparisons of the deployment's answers with the model: plain functions answering problems."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def shown(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- ledger ----------------------------------------------------------------------------------


def expected_charge(cost: Any, prices: dict[str, int]) -> tuple[int | None, list[str]]:
    """The charge a paid answer's ``cost`` lines come to at the catalogue's prices, and the
    lines whose unit price or amount disagrees with the catalogue. None: not itemised, or a
    capability the catalogue does not quote."""
    lines = cost.get("lines") if isinstance(cost, dict) else None
    if not isinstance(lines, list) or not lines:
        return None, []
    total, problems = 0, []
    for line in lines:
        if not isinstance(line, dict):
            return None, []
        name, quantity = line.get("capability"), line.get("quantity")
        if not isinstance(quantity, int) or name not in prices:
            return None, []
        price = prices[str(name)]
        total += price * quantity
        if line.get("unitPrice") != price:
            problems.append(
                f"{name}: the answer's unitPrice is {line.get('unitPrice')!r}, the catalogue "
                f"quoted {price}"
            )
        elif line.get("credits") != price * quantity:
            problems.append(
                f"{name}: {quantity} × {price} answered as {line.get('credits')!r} credits"
            )
    return total, problems


# -- records ---------------------------------------------------------------------------------


def sent_matches(sent: Any, read: Any) -> bool:
    """Whether a value sent reads back: objects member by member (a PATCH of an object may
    change only the members sent), everything else as sent."""
    if isinstance(sent, dict) and isinstance(read, dict):
        return all(k in read and sent_matches(v, read[k]) for k, v in sent.items())
    return bool(sent == read)


def update_problems(
    before: dict[str, Any],
    sent: dict[str, Any],
    after: dict[str, Any],
    writable: Iterable[str],
    write_only: Iterable[str] = (),
) -> list[str]:
    """What a read-back breaks of "only the fields sent change": a sent field that does not read
    back as sent, or a writable field not sent whose value moved. Fields the record does not
    show, and write-only fields, are not compared."""
    hidden = set(write_only)
    problems = []
    for name, value in sent.items():
        if name in hidden or name not in after:
            continue
        if not sent_matches(value, after[name]):
            problems.append(f"{name} was sent as {shown(value)} and reads {shown(after[name])}")
    for name in writable:
        if name in sent or name in hidden or name not in before or name not in after:
            continue
        if before[name] != after[name]:
            problems.append(
                f"{name} was not sent and moved from {shown(before[name])} to {shown(after[name])}"
            )
    return problems


# -- jobs ------------------------------------------------------------------------------------


def sequence_problems(after: int, sequences: list[Any]) -> list[str]:
    """An ordered stream's page read ``after`` a position: integers, each above the last."""
    problems, last = [], after
    for value in sequences:
        if not isinstance(value, int) or isinstance(value, bool):
            problems.append(f"sequence {value!r} is not an integer")
            continue
        if value <= last:
            problems.append(f"sequence {value} follows {last}")
        last = max(last, value)
    return problems


def seen_twice(seen: list[str], page: list[str]) -> list[str]:
    earlier = set(seen)
    repeated = [i for i in page if i in earlier]
    repeated += [i for n, i in enumerate(page) if i in page[:n]]
    return sorted(set(repeated))
