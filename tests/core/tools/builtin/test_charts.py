import struct
from typing import Any

import pytest

from desktop.core.tools.builtin.charts import CREATE_CHART
from desktop.core.tools.toolbox import Toolbox, ToolOutput

BASE = {"title": "Sales", "labels": ["Jan", "Feb", "Mar"], "values": [10, 14, 9]}


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.parametrize("kind", ["bar", "line", "pie", "scatter"])
async def test_each_kind_draws_a_png(kind: str) -> None:
    output = await CREATE_CHART.handler({"type": kind, **BASE})
    assert isinstance(output, ToolOutput)
    (image,) = output.images
    assert image.mime == "image/png" and png_size(image.data) == (700, 420)
    assert f"Created a {kind} chart titled 'Sales' with 3 data points" in output.content


async def test_more_series_and_axis_titles() -> None:
    arguments = {"type": "bar", **BASE, "series_name": "2025", "x_title": "Month", "y_title": "k€",
                 "more_series": [{"name": "2026", "values": [12, 15, 11]}]}  # fmt: skip
    output = await CREATE_CHART.handler(arguments)
    assert "6 data points" in output.content and len(output.images[0].data) > 5000


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"values": [1, 2]}, "has 2 values for 3 labels"),
        ({"type": "pie", "values": [1, -2, 3]}, "cannot show negative values"),
    ],
)
async def test_refusals(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        await CREATE_CHART.handler({"type": "bar", **BASE, **change})


def test_schema_refuses_bad_calls() -> None:
    box = Toolbox([CREATE_CHART])
    assert box.validate("create_chart", {"type": "bar", **BASE}) is None
    assert "is not one of" in (box.validate("create_chart", {"type": "donut", **BASE}) or "")
    assert "missing required argument 'labels'" in (
        box.validate("create_chart", {"type": "bar", "title": "t", "values": [1]}) or ""
    )
    assert "unknown argument 'color'" in (
        box.validate("create_chart", {"type": "bar", **BASE, "color": "red"}) or ""
    )
