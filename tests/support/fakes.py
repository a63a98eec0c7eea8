"""The one scriptable fake provider for loop tests.

Each step of the script is what the model answers to one request: text chunks, native
tool calls, or a function of the request that returns those. Every request is recorded.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field

from desktop.core.events import (
    BrokenCall,
    ProviderEvent,
    Reply,
    TextChunk,
    ThinkingChunk,
    TokenOdds,
    UsageReport,
)
from desktop.core.messages import Message, ToolCall
from desktop.core.providers.base import Capabilities, Features, ProviderError, RequestOptions
from desktop.core.tool_spec import ToolSpec


@dataclass
class Step:
    chunks: Sequence[str] = ()
    tool_calls: Sequence[ToolCall] = ()
    broken_calls: Sequence[BrokenCall] = ()
    thinking: Sequence[str] = ()
    usage: tuple[int, int] | None = None
    error: str | None = None  # raise ProviderError after the chunks
    hang: bool = False  # after the chunks, wait until cancelled
    finish_reason: str = "stop"
    # The first token's alternatives, sent when the request asks for token odds.
    odds: Sequence[tuple[str, float]] = ()
    # Each token generated with its probability, sent likewise (one TokenOdds each).
    chosen: Sequence[tuple[str, float]] = ()


@dataclass
class Request:
    messages: list[Message]
    tools: list[str]
    options: RequestOptions


Script = Step | str | Callable[[Request], "Step | str"]


@dataclass
class ScriptedProvider:
    script: list[Script]
    capabilities: Capabilities = field(default_factory=Capabilities)
    label: str = "scripted model"
    requests: list[Request] = field(default_factory=list)
    cancelled: bool = False
    constrains_json: bool = False  # pretend the backend has constrained decoding
    closed_early: int = 0  # streams the consumer stopped reading before the end
    reports_token_odds: bool = False  # pretend the backend sends token odds
    takes_grammar: bool = False  # pretend the backend takes a GBNF grammar
    caches_prompt: bool = False  # pretend the backend keeps its prompts cached
    continues_answer: bool = False  # pretend the backend continues a last assistant message

    @property
    def features(self) -> Features:
        return Features(
            self.constrains_json, self.reports_token_odds, self.takes_grammar, self.caches_prompt,
            self.continues_answer,
        )  # fmt: skip

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: RequestOptions
    ) -> AsyncGenerator[ProviderEvent, None]:
        request = Request(copy.deepcopy(list(messages)), [t.name for t in tools], options)
        self.requests.append(request)
        if not self.script:
            raise AssertionError(f"the script has no step left for request {len(self.requests)}")
        entry = self.script.pop(0)
        if callable(entry):
            entry = entry(request)
        step = Step(chunks=[entry]) if isinstance(entry, str) else entry
        for thought in step.thinking:
            yield ThinkingChunk(thought)
        if options.top_logprobs and step.odds:
            yield TokenOdds(tuple(step.odds))
        if options.top_logprobs:
            for token in step.chosen:
                yield TokenOdds((), token)
        finished = False
        try:
            for chunk in step.chunks:
                await asyncio.sleep(0)
                yield TextChunk(chunk)
            finished = True
        finally:
            if not finished:
                self.closed_early += 1
        if step.hang:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        if step.error:
            raise ProviderError(step.error)
        if step.usage:
            yield UsageReport(*step.usage)
        text = "".join(step.chunks)
        yield Reply(
            text,
            list(step.tool_calls),
            list(step.broken_calls),
            raw=text,
            finish_reason=step.finish_reason,
        )
