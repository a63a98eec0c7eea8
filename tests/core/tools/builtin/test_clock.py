from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from desktop.core.tools.builtin.clock import CURRENT_TIME, stopped_clock


async def test_named_zone() -> None:
    result = await CURRENT_TIME.handler({"timezone": "Asia/Tokyo"})
    assert result["timezone"] == "Asia/Tokyo" and result["utc_offset"] == "+0900"
    shown = datetime.fromisoformat(result["iso"])
    assert abs((shown - datetime.now(ZoneInfo("Asia/Tokyo"))).total_seconds()) < 5


async def test_local_zone_by_default() -> None:
    result = await CURRENT_TIME.handler({})
    assert datetime.fromisoformat(result["iso"]).tzinfo is not None
    assert result["weekday"] == datetime.now().strftime("%A")


async def test_unknown_zone() -> None:
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        await CURRENT_TIME.handler({"timezone": "Mars/Olympus"})


async def test_a_stopped_clock_tells_its_instant_in_any_zone() -> None:
    instant = datetime(2026, 12, 6, 20, 0, tzinfo=ZoneInfo("UTC"))
    clock = stopped_clock(instant)
    assert clock.name == CURRENT_TIME.name and clock.parameters == CURRENT_TIME.parameters
    tokyo = await clock.handler({"timezone": "Asia/Tokyo"})
    assert tokyo["iso"] == "2026-12-07T05:00:00+09:00" and tokyo["weekday"] == "Monday"
    here = await clock.handler({})
    assert datetime.fromisoformat(here["iso"]) == instant
    assert await CURRENT_TIME.handler({}) != here  # the app's own clock still runs
