from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from desktop.core.tools.builtin.clock import CURRENT_TIME


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
