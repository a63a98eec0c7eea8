"""Rejects repeated tool calls: exact repeats within a turn, and calls during a cooldown.

A call is known by its fingerprint (`messages.call_fingerprint`): `{a:1,b:2}` and
`{b:2,a:1}` are the same call. Fingerprints reset with each turn; cooldowns are
time-based and outlive the turn that started them.

The user's cooldown switch (global, and per tool) governs both: switched off, a tool's
exact repeats run too ("create 3 tickets" with the same arguments), bounded by the turn's
tool-call limit. This is the one place that decides; the tracks and the loop ask it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from desktop.core.messages import ToolCall, call_fingerprint
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
        return self.refuses_repeats(tool.name)

    def refuses_repeats(self, tool: str) -> bool:
        """Whether an exact repeat of a call to `tool` is refused (the switch is on for it)."""
        return self.cooldown_overrides.get(tool, self.cooldown_enabled)

    def repeats_allowed(self, tools: Iterable[str]) -> tuple[str, ...]:
        """Those of `tools` whose exact repeats run (the switch is off for them)."""
        return tuple(name for name in tools if not self.refuses_repeats(name))

    def merged(self, calls: Sequence[ToolCall]) -> list[ToolCall]:
        """One step's calls with the same call written twice in its list kept once, where
        repeats are refused: a small model made to write a list sometimes writes one call
        twice in it ("the circle's dimensions" twice); that is one call, not a repeat."""
        seen: set[str] = set()
        kept = []
        for call in calls:
            key = call_fingerprint(call.name, call.arguments)
            if key in seen and self.refuses_repeats(call.name):
                continue
            seen.add(key)
            kept.append(call)
        return kept

    def check(self, tool: Tool, arguments: Any) -> Refusal | None:
        """None if the call may run, else why not (the model and the user both see it)."""
        repeat = call_fingerprint(tool.name, arguments) in self._seen
        if repeat and self.refuses_repeats(tool.name):
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
