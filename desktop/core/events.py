"""The events a turn emits: one vocabulary for the GUI, the CLI, tests and traces.

Every event has a `kind` and the `step` it belongs to (the 0-based index of the model
request within the turn). `to_dict` gives the JSON form the CLI prints with
`--events jsonl`; images appear there as their type and size, not their bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

from desktop.core.messages import Image


@dataclass(frozen=True)
class TextDelta:
    step: int
    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True)
class ThinkingDelta:
    step: int
    text: str
    kind: Literal["thinking_delta"] = "thinking_delta"


@dataclass(frozen=True)
class ToolCallParsed:
    """The model asked for a tool; validation and dedupe come next."""

    step: int
    id: str
    name: str
    arguments: Any
    kind: Literal["tool_call"] = "tool_call"


RejectionStage = Literal[
    "parse", "validation", "repeat", "cooldown", "limit", "withdrawn", "denied"
]


@dataclass(frozen=True)
class ToolRejected:
    """A call that was not run, and why; the reason is also what the model is told.

    `stage` says which check refused it: the call could not be parsed, its name or
    arguments are invalid, it repeats an earlier call, its tool is on cooldown, the turn's
    limit was spent, or tools had been withdrawn and the model called anyway.
    """

    step: int
    name: str
    arguments: Any
    reason: str
    stage: RejectionStage = "validation"
    id: str | None = None
    kind: Literal["tool_rejected"] = "tool_rejected"


@dataclass(frozen=True)
class ToolStarted:
    step: int
    id: str
    name: str
    kind: Literal["tool_started"] = "tool_started"


@dataclass(frozen=True)
class ToolResult:
    step: int
    id: str
    name: str
    content: str
    images: list[Image] = field(default_factory=list)
    duration_ms: float = 0.0
    error: str | None = None
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True)
class Usage:
    step: int
    prompt_tokens: int
    completion_tokens: int
    kind: Literal["usage"] = "usage"


@dataclass(frozen=True)
class TurnWarning:
    """A warning that does not end the turn, e.g. the prompt nearly fills the context."""

    step: int
    message: str
    kind: Literal["warning"] = "warning"


@dataclass(frozen=True)
class TurnFinished:
    step: int
    text: str
    kind: Literal["turn_finished"] = "turn_finished"


@dataclass(frozen=True)
class TurnFailed:
    step: int
    message: str
    kind: Literal["turn_failed"] = "turn_failed"


Event = (
    TextDelta
    | ThinkingDelta
    | ToolCallParsed
    | ToolRejected
    | ToolStarted
    | ToolResult
    | Usage
    | TurnWarning
    | TurnFinished
    | TurnFailed
)

EVENT_KINDS: tuple[str, ...] = (
    "text_delta",
    "thinking_delta",
    "tool_call",
    "tool_rejected",
    "tool_started",
    "tool_result",
    "usage",
    "warning",
    "turn_finished",
    "turn_failed",
)


def event_to_dict(event: Event) -> dict[str, Any]:
    """JSON-ready form: `kind` first, then the fields in declaration order."""
    out: dict[str, Any] = {"kind": event.kind}
    for f in fields(event):
        if f.name == "kind":
            continue
        value = getattr(event, f.name)
        if f.name == "images":
            value = [image.summary() for image in value]
        out[f.name] = value
    return out
