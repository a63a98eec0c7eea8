"""The tools that come with Loomchat; each module holds one tool or one family."""

from __future__ import annotations

from pathlib import Path

from desktop.core.builtins.calculator import CALCULATOR
from desktop.core.builtins.charts import CREATE_CHART
from desktop.core.builtins.clock import CURRENT_TIME
from desktop.core.builtins.workspace import Workspace, workspace_tools
from desktop.core.tools import Tool


def builtin_tools(workspace: Path | None = None) -> list[Tool]:
    """All built-in tools; the file tools only with a workspace folder to confine them to."""
    tools = [CALCULATOR, CURRENT_TIME, CREATE_CHART]
    if workspace is not None:
        tools += workspace_tools(Workspace(workspace))
    return tools
