"""`current_time`: the date and time now, in the local zone or a named IANA zone."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from desktop.core.tool_spec import Example
from desktop.core.tools.toolbox import Tool


async def current_time(arguments: dict[str, Any]) -> dict[str, Any]:
    zone_name = arguments.get("timezone")
    if zone_name:
        try:
            now = datetime.now(ZoneInfo(str(zone_name)))
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {zone_name!r}; use an IANA name such as Europe/Paris"
            ) from None
    else:
        now = datetime.now().astimezone()
    return {
        "iso": now.isoformat(timespec="seconds"),
        "date": now.strftime("%Y-%m-%d"),
        "time": now.strftime("%H:%M:%S"),
        "weekday": now.strftime("%A"),
        "timezone": zone_name or now.tzname() or "local",
        "utc_offset": now.strftime("%z"),
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
