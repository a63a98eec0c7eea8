"""Per-tool permissions: Allow (runs without asking), Ask (the person approves each call),
Never (not offered at all). Set per tool by name, or for many by a pattern: `server:*` for
every tool of an MCP server (its tools are named `server__tool`), `*` for all. A tool's own
name wins over a pattern; among patterns, the longest. Where nothing is set: a tool that
changes nothing (the built-in readers, an MCP tool marked read-only) is allowed, any other
asked about; one trusted in an older settings file (`trusted_tools`) is allowed."""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Literal, get_args

from desktop.core.tool_spec import ToolSpec

Permission = Literal["allow", "ask", "never"]
PERMISSIONS: tuple[Permission, ...] = get_args(Permission)


def as_name_pattern(rule: str) -> str:
    """A rule as the tools' names spell it: `server:tool` is the tool `server__tool`."""
    server, colon, tool = rule.partition(":")
    return f"{server}__{tool}" if colon else rule


def default_permission(needs_approval: bool) -> Permission:
    return "ask" if needs_approval else "allow"


def permission_of(
    tool: ToolSpec,
    needs_approval: bool,
    rules: Mapping[str, str],
    trusted: Mapping[str, bool] | None = None,
) -> Permission:
    """The permission `rules` (name or pattern -> permission) give `tool`."""
    chosen = rules.get(tool.name)
    if chosen is None:
        matching = [r for r in rules if fnmatchcase(tool.name, as_name_pattern(r))]
        chosen = rules[max(matching, key=len)] if matching else None
    if chosen in PERMISSIONS:
        return chosen
    if trusted and trusted.get(tool.name):
        return "allow"
    return default_permission(needs_approval)
