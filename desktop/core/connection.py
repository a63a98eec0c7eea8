"""Whom the session talks to: what the status bar and the first-run panel show."""

from __future__ import annotations

from dataclasses import dataclass, field

from desktop.core.providers.base import Capabilities


@dataclass(frozen=True)
class Connection:
    """What the status bar shows: who answers, with which model, on which track."""

    ok: bool
    message: str
    backend: str = ""
    url: str = ""
    model: str = ""
    track: str = ""
    capabilities: Capabilities = field(default_factory=Capabilities)
    models: tuple[str, ...] = ()
    # What the user should know about the tools (an MCP server that failed, a tool left
    # out and why): said once in the window, printed by the CLI.
    problems: tuple[str, ...] = ()
    server: str = ""  # the saved server's name, where the settings are on one


NOT_CONNECTED = Connection(False, "Not connected yet.")
