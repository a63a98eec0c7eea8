"""The tools that come with Loomchat; each module holds one tool or one family."""

from __future__ import annotations

import os
from pathlib import Path

from desktop.core.tools.builtin.calculator import CALCULATOR
from desktop.core.tools.builtin.charts import chart_tool
from desktop.core.tools.builtin.clock import CURRENT_TIME
from desktop.core.tools.builtin.python_runner import run_python_tool
from desktop.core.tools.builtin.web_page import fetch_url_tool
from desktop.core.tools.builtin.workspace import Workspace, workspace_tools
from desktop.core.tools.toolbox import Tool


def builtin_tools(workspace: Path | None = None, dark: bool = False) -> list[Tool]:
    """All built-in tools; the file tools only with a workspace folder to confine them to;
    charts drawn for a `dark` window or a light one."""
    tools = [CALCULATOR, CURRENT_TIME, chart_tool(dark)]
    if workspace is not None:
        tools += workspace_tools(Workspace(workspace))
    # The code runner's fences are POSIX's (process groups, rlimits, namespaces); on Windows
    # they would be a Job Object, not built yet: there it is not offered at all.
    runner = [run_python_tool(workspace)] if os.name == "posix" else []
    return [*tools, *runner, fetch_url_tool()]
