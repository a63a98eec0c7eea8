"""The tools a session has: the built-in ones (with the workspace's), its MCP servers',
and those an embedding app adds; which of them are enabled, trusted and offered."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from desktop.core.messages import Message
from desktop.core.storage.settings import Settings
from desktop.core.tools.builtin import builtin_tools
from desktop.core.tools.mcp import McpConfigError, McpServers, load_mcp_config
from desktop.core.tools.permissions import Permission, permission_of
from desktop.core.tools.selection import (
    Offer,
    ToolSelector,
    every_tool,
    needs_selection,
)
from desktop.core.tools.toolbox import Tool, Toolbox


class ToolCatalog:
    def __init__(self, fixed: Sequence[Tool] | None = None) -> None:
        """`fixed` replaces the built-in tools (and the workspace's), for tests."""
        self._fixed = list(fixed) if fixed is not None else None
        self.all: list[Tool] = []
        self.extra: list[Tool] = []  # tools an embedding app adds to the built-in ones
        self.mcp = McpServers([])
        self.mcp_config_started: str | None = None
        self.mcp_problems: list[str] = []
        self.name_problems: list[str] = []
        self.dark = False  # charts drawn for a dark window (the window says which)
        self._selector: ToolSelector | None = None  # the index over many tools, kept

    def collect(self, settings: Settings) -> None:
        if self._fixed is not None:
            self.all = list(self._fixed)
            return
        workspace = Path(settings.workspace).expanduser() if settings.workspace else None
        if workspace is not None and not workspace.is_dir():
            workspace = None
        self.all = []
        self.name_problems = []
        for tool in builtin_tools(workspace, self.dark) + self.mcp.tools + self.extra:
            if any(t.name == tool.name for t in self.all):  # the first of a name is kept
                self.name_problems.append(f"A second tool named {tool.name} was left out.")
            else:
                self.all.append(tool)

    @property
    def problems(self) -> list[str]:
        """What the user should know about the tools: servers that failed, tools left out."""
        return [*self.mcp_problems, *self.name_problems]

    async def start_mcp(self, settings: Settings) -> list[str]:
        """Run the MCP servers the settings' file lists; returns what went wrong, per server."""
        self.mcp_config_started = settings.mcp_config
        configs, unreadable = [], []
        if settings.mcp_config:
            try:
                configs = load_mcp_config(Path(settings.mcp_config))
            except McpConfigError as exc:
                unreadable = [str(exc)]
        # those running as configured go on; the others stop, and new ones start
        self.mcp_problems = unreadable + await self.mcp.update(configs)
        self.collect(settings)
        return self.mcp_problems

    def toolbox(self, settings: Settings) -> Toolbox:
        """The tools turned on, but for those the person never allows (not offered)."""
        on = [t for t in self.all if settings.tool_enabled(t.name, not t.off_by_default)]
        return Toolbox(t for t in on if permission(settings, t) != "never")

    def offer(
        self,
        settings: Settings,
        conversation: Sequence[Message],
        request: str,
        context_size: int | None,
    ) -> Offer:
        """The tools a turn offers: all while they fit, else those that fit `request`,
        the pinned ones, and those used earlier in the conversation."""
        tools = list(self.toolbox(settings))
        if settings.tool_selection == "off":
            return every_tool(tools, "all tools")
        if not needs_selection(tools, context_size):
            return every_tool(tools)
        if self._selector is None or self._selector.tools != tools:
            self._selector = ToolSelector(tools)  # kept: indexing is done once per tool set
        pinned = [name for name, on in settings.pinned_tools.items() if on]
        used = [c.name for m in conversation for c in m.tool_calls]
        return self._selector.select(request, pinned=pinned, used=used)


def permission(settings: Settings, tool: Tool) -> Permission:
    """Allow, ask or never, as the person set it for the tool (see tools/permissions.py)."""
    return permission_of(
        tool, tool.needs_approval, settings.tool_permissions, settings.trusted_tools
    )


def remembered(settings: Settings, tool: Tool, decision: str) -> Settings:
    """The settings with an approval's "always" (allow) or "never" kept for the tool."""
    allowed = decision == "always"
    trusted = {k: v for k, v in settings.trusted_tools.items() if k != tool.name}
    if allowed:
        trusted[tool.name] = True  # as older versions read it
    rules = {**settings.tool_permissions, tool.name: "allow" if allowed else "never"}
    return replace(settings, trusted_tools=trusted, tool_permissions=rules)


def trusted(settings: Settings, tool: Tool) -> bool:
    """Whether the tool runs without asking."""
    return permission(settings, tool) == "allow"
