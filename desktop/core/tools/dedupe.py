"""Rejects repeated tool calls: exact repeats within a turn, and calls during a cooldown.

A call is known by its fingerprint (`messages.call_fingerprint`): `{a:1,b:2}` and
`{b:2,a:1}` are the same call. Fingerprints reset
with each turn; cooldowns are time-based and outlive the turn that started them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from desktop.core.messages import call_fingerprint
from desktop.core.tools.toolbox import DEFAULT_COOLDOWN_S, Tool


@dataclass(frozen=True)
class Refusal:
    kind: Literal["repeat", "cooldown"]
    reason: str


class Deduplicator:
    """Per-session call memory.

    `cooldown_enabled` is the global switch; `cooldown_overrides` turns the cooldown on or
    off for one tool by name, and wins over the switch (the GUI's per-tool toggle).
    """

    def __init__(
        self,
        *,
        cooldown_enabled: bool = True,
        cooldown_overrides: dict[str, bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cooldown_enabled = cooldown_enabled
        self.cooldown_overrides: dict[str, bool] = dict(cooldown_overrides or {})
        self._clock = clock
        self._seen: set[str] = set()
        self._cooldown_until: dict[str, float] = {}

    def new_turn(self) -> None:
        self._seen.clear()

    def cooldown_applies(self, tool: Tool) -> bool:
        if tool.cooldown_s is None:
            return False
        return self.cooldown_overrides.get(tool.name, self.cooldown_enabled)

    def check(self, tool: Tool, arguments: Any) -> Refusal | None:
        """None if the call may run, else why not (the model and the user both see it)."""
        if call_fingerprint(tool.name, arguments) in self._seen:
            return Refusal(
                "repeat",
                f"Rejected: this exact call to {tool.name} was already made in this turn; "
                "its result is above. Use it, or answer the user.",
            )
        if self.cooldown_applies(tool):
            remaining = self._cooldown_until.get(tool.name, 0.0) - self._clock()
            if remaining > 0:
                return Refusal(
                    "cooldown",
                    f"Rejected: {tool.name} is on cooldown for {remaining:.0f} more s "
                    "(it was called moments ago).",
                )
        return None

    def record(self, tool: Tool, arguments: Any) -> None:
        self._seen.add(call_fingerprint(tool.name, arguments))
        if self.cooldown_applies(tool):
            length = tool.cooldown_s or DEFAULT_COOLDOWN_S
            self._cooldown_until[tool.name] = self._clock() + length
