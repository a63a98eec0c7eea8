"""What a turn offers the model at its next step, and why tools were withdrawn."""

from __future__ import annotations

from dataclasses import replace

from desktop.core.providers.base import RequestOptions
from desktop.core.tools.toolbox import Tool, Toolbox


class ToolOffer:
    """Tools stay offered until the limit is spent, a call repeats, or invalid calls
    outlast their retries; then the model is asked for a plain answer (a track may keep
    the withdrawn tools in its prompt, for the server's cache, with calls forbidden)."""

    def __init__(self, toolbox: Toolbox, invalid_retries: int) -> None:
        self.toolbox = toolbox
        self.offered = len(toolbox) > 0
        self.invalid_retries = invalid_retries
        self.withdrawn = ""  # why tools were withdrawn, for the hard stop's message

    @property
    def tools(self) -> list[Tool]:
        return list(self.toolbox) if self.offered else []

    def options(self, base: RequestOptions) -> RequestOptions:
        if not self.offered and len(self.toolbox):
            return replace(base, withdrawn_tools=tuple(self.toolbox))
        return base

    def after_step(self, *, limit: int | None, repeated: bool, invalid: bool) -> None:
        """`limit`: the tool-call limit, if this step spent the last of it."""
        if limit is not None:
            self.offered = False
            self.withdrawn = f"tools were withdrawn after {limit} tool calls"
        elif repeated:
            self.offered = False
            self.withdrawn = "tools were withdrawn after a repeated call"
        elif invalid:
            self.offered = self.invalid_retries > 0
            self.invalid_retries -= 1
            self.withdrawn = "tools were withdrawn after invalid calls"
