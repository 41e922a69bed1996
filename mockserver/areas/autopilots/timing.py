"""Local days and times on the mock clock, in an IANA time zone (autopilots and community agents).

Daily caps count per local day of the configured time zone; scheduled work falls at a local time
of day. An unknown zone name answers ``400 invalid_request`` (``details.reason``
``unknown_timezone``) when it is saved, so stored names always resolve.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mockserver.platform.envelope import iso_z
from mockserver.platform.errors import invalid_request


def zone(name: str | None) -> tzinfo:
    """The zone of ``name`` (UTC when None); ``400 invalid_request`` when it does not exist."""
    if name is None or name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise invalid_request(
            f"unknown time zone {name!r}: use an IANA name such as Europe/Paris",
            reason="unknown_timezone",
            field="timezone",
        ) from None


def epoch(moment: datetime) -> float:
    return moment.timestamp()


def moment(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def iso(seconds: float) -> str:
    return iso_z(moment(seconds))


def parse(text: str) -> float:
    """An ISO 8601 timestamp (``...Z``) as epoch seconds."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def local_day(seconds: float, tz: tzinfo) -> str:
    """The local date (``YYYY-MM-DD``) a moment falls on."""
    return moment(seconds).astimezone(tz).date().isoformat()


@lru_cache(maxsize=65536)
def local_day_of(text: str, tz: tzinfo) -> str:
    """The local date an ISO 8601 timestamp falls on (asked of every video of a channel for
    each run a catch-up schedules: remembered, the same text in the same zone being the same
    day)."""
    return local_day(parse(text), tz)


def next_local_midnight(seconds: float, tz: tzinfo) -> float:
    local = moment(seconds).astimezone(tz)
    following = datetime.combine(local.date() + timedelta(days=1), time(0, 0), tzinfo=tz)
    return following.timestamp()


def next_local_time(after: float, at: time, tz: tzinfo) -> float:
    """The first moment strictly after ``after`` whose local time of day is ``at``."""
    local = moment(after).astimezone(tz)
    candidate = datetime.combine(local.date(), at, tzinfo=tz)
    while candidate.timestamp() <= after:
        candidate = datetime.combine(candidate.date() + timedelta(days=1), at, tzinfo=tz)
    return candidate.timestamp()


def week_start(seconds: float, tz: tzinfo) -> str:
    """The local Monday of the week a moment falls in (``YYYY-MM-DD``)."""
    day = moment(seconds).astimezone(tz).date()
    return (day - timedelta(days=day.weekday())).isoformat()


def weekday_sunday_zero(seconds: float, tz: tzinfo) -> int:
    """The local day of the week, 0 being Sunday (the contract's ``daysOfWeek`` convention)."""
    return (moment(seconds).astimezone(tz).weekday() + 1) % 7


def minutes_of_day(seconds: float, tz: tzinfo) -> int:
    local = moment(seconds).astimezone(tz)
    return local.hour * 60 + local.minute
