"""A record of each turn for the inspector: what went to the model, what came back, and
what the loop made of it (parsed calls, verdicts, results). Exportable as JSON.

`TracingProvider` wraps the backend's own provider, under any emulation, so the request
it records is the one on the wire: with the emulated tool prompt, as the model saw it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, assert_never

from desktop.core.events import (
    Event,
    GateRecord,
    Notice,
    ProviderEvent,
    Reply,
    TextChunk,
    TextDelta,
    ThinkingChunk,
    ThinkingDelta,
    TokenOdds,
    ToolCallParsed,
    ToolRejected,
    ToolResult,
    ToolStarted,
    TurnFailed,
    TurnFinished,
    TurnWarning,
    Usage,
    UsageReport,
    event_to_dict,
)
from desktop.core.messages import Image, Message
from desktop.core.providers.base import (
    Probe,
    Provider,
    ProviderError,
    ProviderWrapper,
    RequestOptions,
    RequestPart,
)
from desktop.core.tool_spec import ToolSpec


@dataclass
class StepTrace:
    step: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    options: dict[str, Any]
    started: float = field(default_factory=time.time)
    raw_output: str = ""
    thinking: str = ""
    finish_reason: str | None = None
    usage: dict[str, int] | None = None
    error: str | None = None
    duration_ms: float | None = None
    events: list[Event] = field(default_factory=list)  # serialised only on export
    phases: list[StepTrace] = field(default_factory=list)  # later requests of the step
    # The first token's likeliest alternatives, when asked for (the call gate's probe).
    token_odds: list[tuple[str, float]] = field(default_factory=list)
    # Each token generated with its probability, when asked for (a call's arguments weighed).
    chosen_tokens: list[tuple[str, float]] = field(default_factory=list)
    # Which part of its step this request is (None: the step's own), and, on the step's own
    # request, what the call gate saw and decided.
    part: RequestPart | None = None
    gate: GateRecord | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "request": {"messages": self.messages, "tools": self.tools, "options": self.options},
            "raw_output": self.raw_output,
            "thinking": self.thinking,
            "finish_reason": self.finish_reason,
            "usage": self.usage,
            "error": self.error,
            "duration_ms": self.duration_ms,
            "events": [event_to_dict(event) for event in self.events],
            "phases": [p.to_dict() for p in self.phases],
            "token_odds": [[token, round(p, 4)] for token, p in self.token_odds],
            "chosen_tokens": [[token, round(p, 4)] for token, p in self.chosen_tokens],
            "gate": self.gate.to_dict() if self.gate is not None else None,
        }


@dataclass
class TurnTrace:
    track: str
    provider: str
    steps: list[StepTrace] = field(default_factory=list)
    outcome: TurnFinished | TurnFailed | None = None
    # Which tools the turn offered and why, when it offered a selection of them.
    offer: dict[str, Any] | None = None
    # What happened before the first request: the documents searched first.
    before: list[Event] = field(default_factory=list)

    @property
    def gate(self) -> dict[str, Any] | None:
        """The call gate's bars for this turn and where they came from ({"bar", "source"},
        and "alone_bar", "alone_source", "arguments_bar" where they applied), as its first
        weighed step saw them; None where the gate did not run."""
        found = next((s.gate for s in self.steps if s.gate is not None), None)
        return found.bars() if found is not None else None

    def record(self, event: Event) -> None:
        """Attach a loop event to its step. Text deltas are left out (the raw output has
        them); thinking is collected here, where both tracks have split it out."""
        known = 0 <= event.step < len(self.steps)
        if not self.steps and not isinstance(event, TurnFinished | TurnFailed):
            self.before.append(event)
            return
        match event:
            case ThinkingDelta():
                if known:
                    self.steps[event.step].thinking += event.text
            case TextDelta():
                pass
            case TurnFinished() | TurnFailed():
                self.outcome = event
            case (
                ToolCallParsed() | ToolRejected() | ToolStarted() | ToolResult() | Usage()
                | TurnWarning()
            ):  # fmt: skip
                if known:
                    self.steps[event.step].events.append(event)
            case _:
                assert_never(event)

    def to_dict(self) -> dict[str, Any]:
        return {
            "track": self.track,
            "provider": self.provider,
            "steps": [s.to_dict() for s in self.steps],
            "outcome": event_to_dict(self.outcome) if self.outcome else None,
            "offer": self.offer,
            "gate": self.gate,
            "before": [event_to_dict(event) for event in self.before],
        }


def _options_for_trace(options: RequestOptions) -> dict[str, Any]:
    shown = {k: v for k, v in vars(options).items() if v is not None and v != () and k != "part"}
    if options.withdrawn_tools:  # kept in the prompt, named here
        shown["withdrawn_tools"] = [t.name for t in options.withdrawn_tools]
    if options.phase is not None:  # the part of the step, by the export's names
        shown["phase"] = options.phase
    if options.reason is not None:
        shown["reason"] = options.reason
    return shown


def _message_for_trace(message: Message) -> dict[str, Any]:
    raw = message.to_dict()
    raw.pop("meta", None)
    raw["parts"] = [
        {"kind": "image", "mime": part.mime, "bytes": len(part.data)}  # the size, not the data
        if isinstance(part, Image)
        else part.to_dict()
        for part in message.parts
    ]
    return raw


class TracingProvider(ProviderWrapper):
    """Passes everything through, and records each request and its raw answer."""

    def __init__(self, inner: Provider) -> None:
        super().__init__(inner)
        self.trace = TurnTrace(track="", provider=inner.label)
        self._opening: StepTrace | None = None

    def start_turn(self, track: str) -> TurnTrace:
        self.trace = TurnTrace(track=track, provider=self.inner.label)
        self._opening = None
        return self.trace

    def observe(self, track: Provider) -> Provider:
        """`track` (over this tracer), what its call gate decided kept on each step."""
        return _Decisions(track, self)

    async def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
    ) -> AsyncGenerator[ProviderEvent, None]:
        if options.warm_up:  # not a step of the turn: nothing to show in it
            async with aclosing(self.inner.stream(messages, tools, options)) as stream:
                async for event in stream:
                    yield event
            return
        step = StepTrace(
            step=len(self.trace.steps),
            messages=[_message_for_trace(m) for m in messages],
            tools=[t.wire_definition() for t in tools],
            options=_options_for_trace(options),
            part=options.part,
        )
        if isinstance(options.part, Probe) and options.part.opening:
            self._opening = step  # a part of the step whose first request comes next
        elif options.part is not None and self.trace.steps:
            # A later part of the step before (see ConstrainedTools): a sub-request.
            parent = self.trace.steps[-1]
            step.step = parent.step
            parent.phases.append(step)
        else:
            if self._opening is not None:
                self._opening.step = step.step
                step.phases.append(self._opening)
                self._opening = None
            self.trace.steps.append(step)
        began = time.perf_counter()
        seen: list[str] = []  # the text so far, for a generation stopped before its end
        try:
            async with aclosing(self.inner.stream(messages, tools, options)) as stream:
                async for event in stream:
                    _note(step, event, seen)
                    yield event
        except ProviderError as exc:
            step.error = str(exc)
            raise
        finally:
            if not step.raw_output and seen:
                step.raw_output = "".join(seen) + "  [generation stopped here]"
            step.duration_ms = round((time.perf_counter() - began) * 1000, 1)


class _Decisions(ProviderWrapper):
    """A track, its replies' call-gate records kept on the trace's step."""

    def __init__(self, inner: Provider, tracer: TracingProvider) -> None:
        super().__init__(inner)
        self.tracer = tracer

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: RequestOptions
    ) -> AsyncGenerator[ProviderEvent, None]:
        async with aclosing(self.inner.stream(messages, tools, options)) as stream:
            async for event in stream:
                steps = self.tracer.trace.steps
                if isinstance(event, Reply) and event.record is not None and steps:
                    steps[-1].gate = event.record
                yield event


def _note(step: StepTrace, event: ProviderEvent, seen: list[str]) -> None:
    """What the step's trace keeps of one event of its answer."""
    match event:
        case TextChunk():
            seen.append(event.text)
        case TokenOdds():
            if not step.token_odds:
                step.token_odds = list(event.alternatives)
            if event.chosen is not None:
                step.chosen_tokens.append(event.chosen)
        case UsageReport():
            step.usage = {
                "prompt_tokens": event.prompt_tokens,
                "completion_tokens": event.completion_tokens,
            }
            if event.cached_tokens is not None:
                step.usage["cached_tokens"] = event.cached_tokens
        case Reply():
            step.raw_output = event.raw or event.text
            step.finish_reason = event.finish_reason
        case ThinkingChunk() | Notice():
            pass  # thinking is recorded from the turn's events; a notice is one of them
        case _:
            assert_never(event)
