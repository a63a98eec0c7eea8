"""`create_chart`: a bar, line, pie or scatter chart as a PNG, drawn by matplotlib.

The image goes to the user in the chat and back to the model (if it can see) on its next
step. Drawing runs in a worker process (matplotlib is synchronous and takes a moment),
which the tool's timeout or a stop kills: a thread would go on drawing.
"""

from __future__ import annotations

import io
from dataclasses import replace
from functools import partial
from typing import Any

from desktop.core.messages import Image
from desktop.core.tool_spec import Example
from desktop.core.tools.isolation import run_isolated
from desktop.core.tools.toolbox import Tool, ToolOutput

MAX_POINTS = 500


# The chart's colours on a dark window (the app's dark theme's surface and text); the
# light one is matplotlib's own.
DARK_STYLE = {
    "figure.facecolor": "#1e2026", "axes.facecolor": "#1e2026", "savefig.facecolor": "#1e2026",
    "text.color": "#e6e8ec", "axes.labelcolor": "#e6e8ec", "axes.edgecolor": "#a0a7b3",
    "xtick.color": "#a0a7b3", "ytick.color": "#a0a7b3", "grid.color": "#a0a7b3",
    "legend.facecolor": "#2a2e37", "legend.edgecolor": "#363b46",
}  # fmt: skip
DARK_SERIES = ["#7aa2f7", "#ffa94d", "#69db7c", "#ff8787", "#c3a6ff", "#66d9e8", "#ffd43b"]


def render_chart(arguments: dict[str, Any], dark: bool = False) -> bytes:
    import matplotlib

    matplotlib.use("Agg")  # no display needed, and never a GUI backend inside the app
    from matplotlib import rc_context
    from matplotlib.rcsetup import cycler

    style: dict[str, Any] = (
        {**DARK_STYLE, "axes.prop_cycle": cycler(color=DARK_SERIES)} if dark else {}
    )
    with rc_context(style):  # type: ignore[arg-type]  # its keys are a Literal of all rc names
        return _draw(arguments)


def _draw(arguments: dict[str, Any]) -> bytes:
    from matplotlib.figure import Figure

    kind = arguments["type"]
    labels = [str(label) for label in arguments["labels"]]
    series = [{"name": arguments.get("series_name", ""), "values": arguments["values"]}]
    series += list(arguments.get("more_series", []))
    for item in series:
        if len(item["values"]) != len(labels):
            raise ValueError(
                f"series {item.get('name') or 'values'!r} has {len(item['values'])} values "
                f"for {len(labels)} labels"
            )
    figure = Figure(figsize=(7, 4.2), dpi=100, layout="constrained")
    axes = figure.add_subplot()
    if kind == "pie":
        if len(series) > 1:
            raise ValueError("a pie chart shows one series")
        if any(v < 0 for v in series[0]["values"]):
            raise ValueError("a pie chart cannot show negative values")
        axes.pie(series[0]["values"], labels=labels, autopct="%1.0f%%", startangle=90)
        axes.axis("equal")
    else:
        positions = list(range(len(labels)))
        width = 0.8 / len(series)
        for index, item in enumerate(series):
            name = item.get("name") or None
            if kind == "bar":
                offsets = [p - 0.4 + width * (index + 0.5) for p in positions]
                axes.bar(offsets, item["values"], width=width, label=name)
            elif kind == "line":
                axes.plot(positions, item["values"], marker="o", label=name)
            else:
                axes.scatter(positions, item["values"], label=name)
        axes.set_xticks(positions, labels, rotation=30 if len(labels) > 6 else 0)
        axes.set_xlabel(arguments.get("x_title", ""))
        axes.set_ylabel(arguments.get("y_title", ""))
        axes.grid(axis="y", alpha=0.3)
        if len(series) > 1:
            axes.legend()
    axes.set_title(arguments.get("title", ""))
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


async def create_chart(arguments: dict[str, Any], dark: bool = False) -> ToolOutput:
    png = await run_isolated(render_chart, arguments, dark)
    points = len(arguments["labels"]) * (1 + len(arguments.get("more_series", [])))
    return ToolOutput(
        f"Created a {arguments['type']} chart titled {arguments.get('title', '')!r} "
        f"with {points} data points.",
        [Image(png, "image/png")],
    )


_NUMBERS = {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": MAX_POINTS}

CREATE_CHART = Tool(
    name="create_chart",
    description="Draw a chart from data and show it to the user as an image.",
    parameters={
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": ["bar", "line", "pie", "scatter"]},
            "title": {"type": "string"},
            "labels": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": MAX_POINTS,
                "description": "one label per value, e.g. months",
            },
            "values": {**_NUMBERS, "description": "the numbers to plot, one per label"},
            "series_name": {"type": "string", "description": "legend name of `values`"},
            "more_series": {
                "type": "array",
                "description": "further series over the same labels",
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "values": _NUMBERS},
                    "required": ["name", "values"],
                    "additionalProperties": False,
                },
            },
            "x_title": {"type": "string"},
            "y_title": {"type": "string"},
        },
        "required": ["type", "title", "labels", "values"],
        "additionalProperties": False,
    },
    handler=create_chart,  # light; `chart_tool(dark=True)` for a dark window
    timeout_s=30,
    examples=(
        Example(
            "Chart sales: Jan 10, Feb 14, Mar 9",
            {
                "type": "bar",
                "title": "Sales",
                "labels": ["Jan", "Feb", "Mar"],
                "values": [10, 14, 9],
            },
        ),
    ),
)


def chart_tool(dark: bool) -> Tool:
    """`create_chart`, its charts drawn for a dark window or a light one."""
    if not dark:
        return CREATE_CHART
    return replace(CREATE_CHART, handler=partial(create_chart, dark=True))
