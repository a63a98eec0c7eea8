"""`current_time`: the date and time now, in the local zone or a named IANA zone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from desktop.core.tool_spec import Example
from desktop.core.tools.toolbox import Tool


def _utc_now() -> datetime:
    return datetime.now(UTC)


async def current_time(
    arguments: dict[str, Any], now: Callable[[], datetime] = _utc_now
) -> dict[str, Any]:
    """`now`: the instant to tell (aware), the real one unless a clock is stopped."""
    zone_name = arguments.get("timezone")
    instant = now()
    if zone_name:
        try:
            there = instant.astimezone(ZoneInfo(str(zone_name)))
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {zone_name!r}; use an IANA name such as Europe/Paris"
            ) from None
    else:
        there = instant.astimezone()
    return {
        "iso": there.isoformat(timespec="seconds"),
        "date": there.strftime("%Y-%m-%d"),
        "time": there.strftime("%H:%M:%S"),
        "weekday": there.strftime("%A"),
        "timezone": zone_name or there.tzname() or "local",
        "utc_offset": there.strftime("%z"),
    }


CURRENT_TIME = Tool(
    name="current_time",
    description=(
        "Today's date, the day of the week and the time now, in the user's time zone or a "
        "given one."
    ),
    parameters={
        "type": "object",
        "properties": {
            "timezone": {
                "type": "string",
                "description": "IANA time zone such as Asia/Tokyo; omit for the user's own",
            }
        },
        "additionalProperties": False,
    },
    handler=current_time,
    timeout_s=5,
    examples=(
        Example("What time is it in Tokyo?", {"timezone": "Asia/Tokyo"}),
        Example("What's the date today?", {}),
    ),
)


def stopped_clock(instant: datetime) -> Tool:
    """`current_time` always telling `instant` (aware): for a benchmark whose
    conversations must read the same clock whatever day they run on, since a model's
    later answers follow the date and time its history holds."""
    return replace(CURRENT_TIME, handler=partial(current_time, now=lambda: instant))
