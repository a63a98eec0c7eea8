"""The tools that come with Loomchat; each module holds one tool or one family."""

from __future__ import annotations

from desktop.core.builtins.calculator import CALCULATOR
from desktop.core.builtins.charts import CREATE_CHART
from desktop.core.builtins.clock import CURRENT_TIME
from desktop.core.tools import Tool


def builtin_tools() -> list[Tool]:
    return [CALCULATOR, CURRENT_TIME, CREATE_CHART]
