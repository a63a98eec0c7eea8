"""One user turn: ask the model, run the tools it calls, feed the results back, repeat.

The loop is streaming-first: `run_turn` yields events as they happen, and the
non-streaming form (`complete_turn`) is the same loop with its events collected.

Each step's messages (the assistant's calls, the tool results, tool images) join the
conversation only once the step is complete, so a turn stopped mid-step leaves the
conversation as it was before that step: no half-received call, no call without a result.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Any

from desktop.core.events import (
    Event,
    RejectionStage,
    TextDelta,
    ThinkingDelta,
    ToolCallParsed,
    ToolRejected,
    ToolResult,
    ToolStarted,
    TurnFailed,
    TurnFinished,
    TurnWarning,
    Usage,
)
from desktop.core.limits import DEFAULT_MAX_TOOL_CALLS
from desktop.core.messages import Image, Message, ToolCall, without_surrogates
from desktop.core.providers.base import (
    Notice,
    Provider,
    ProviderError,
    Reply,
    RequestOptions,
    TextChunk,
    ThinkingChunk,
    UsageReport,
)
from desktop.core.tools.dedupe import Deduplicator
from desktop.core.tools.toolbox import Approver, Outcome, Toolbox, limit_content, size_problem

# Ends a tool result with images, for a model that cannot see them.
NOT_SEEN = "The user sees the image in the chat."
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoopSettings:
    """How a turn runs.

    `max_tool_calls`: calls a turn may spend, run or rejected; after the last one the model
    is asked once more without tools. `invalid_call_retries`: how many times per turn an
    invalid call's reason is shown to the model with the tools still offered; after that,
    an invalid call makes the next request tool-free.
    """

    max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS
    invalid_call_retries: int = 1
    options: RequestOptions = field(default_factory=RequestOptions)

    def __post_init__(self) -> None:
        if self.max_tool_calls < 1:
            raise ValueError("max_tool_calls must be at least 1")


@dataclass
class _Step:
    """What one step adds to the conversation, and what it decides about the next."""

    messages: list[Message] = field(default_factory=list)
    results: dict[str, Message] = field(default_factory=dict)
    images: list[tuple[str, Image]] = field(default_factory=list)
    duplicate: bool = False
    invalid: bool = False


async def run_turn(
    provider: Provider,
    toolbox: Toolbox,
    conversation: list[Message],
    *,
    settings: LoopSettings | None = None,
    dedupe: Deduplicator | None = None,
    approver: Approver | None = None,
) -> AsyncGenerator[Event, None]:
    """Run one turn over `conversation` (which ends with the user's message) and extend it.

    Tools that change things (`needs_approval`) run only if `approver` says yes; without
    an approver they are declined. Whatever goes wrong, the turn ends with `TurnFinished`
    or `TurnFailed`: nothing a model, a tool or a backend sends escapes as an exception.
    """
    step = 0
    try:
        turn = _turn(provider, toolbox, conversation, settings, dedupe, approver)
        async with aclosing(turn) as events:
            async for event in events:
                step = event.step
                yield event
    except Exception as exc:  # a bug: the turn ends with a message, the app goes on
        log.exception("turn failed unexpectedly")
        detail = limit_content(f"{type(exc).__name__}: {exc}", 500)
        yield TurnFailed(step, f"Something went wrong in this turn ({detail}). Try again.")


async def _turn(
    provider: Provider,
    toolbox: Toolbox,
    conversation: list[Message],
    settings: LoopSettings | None,
    dedupe: Deduplicator | None,
    approver: Approver | None,
) -> AsyncGenerator[Event, None]:
    settings = settings or LoopSettings()
    dedupe = dedupe or Deduplicator()
    dedupe.new_turn()
    spent = 0
    invalid_retries = settings.invalid_call_retries
    offer_tools = len(toolbox) > 0
    withdrawn = ""  # why tools were withdrawn, for the hard stop's message
    step = 0
    while True:
        tools = list(toolbox) if offer_tools else []
        options = settings.options
        if not offer_tools and len(toolbox):  # a track may keep them in the prompt
            options = replace(options, withdrawn_tools=tuple(toolbox))
        reply: Reply | None = None
        try:
            async with aclosing(provider.stream(conversation, tools, options)) as stream:
                async for chunk in stream:
                    if isinstance(chunk, TextChunk):
                        yield TextDelta(step, chunk.text)
                    elif isinstance(chunk, ThinkingChunk):
                        yield ThinkingDelta(step, chunk.text)
                    elif isinstance(chunk, UsageReport):
                        yield Usage(step, chunk.prompt_tokens, chunk.completion_tokens)
                    elif isinstance(chunk, Notice):
                        yield TurnWarning(step, chunk.message)
                    elif isinstance(chunk, Reply):
                        reply = chunk
        except ProviderError as exc:
            yield TurnFailed(step, str(exc))
            return
        except Exception as exc:  # a bug must still end the turn with a message, not hang the UI
            yield TurnFailed(step, f"Unexpected error from {provider.label}: {exc!r}")
            return
        if reply is None:
            yield TurnFailed(step, f"{provider.label} ended its answer without finishing it.")
            return

        if not reply.tool_calls and not reply.broken_calls:
            conversation.append(Message.assistant(reply.text))
            yield TurnFinished(step, reply.text)
            return

        if not tools:
            # Tools were withdrawn and the model still calls one: a hard stop, never a loop.
            stop = f"{withdrawn}, and the model kept calling tools."
            for call in reply.tool_calls:
                yield ToolRejected(
                    step, call.name, _keepable(call.arguments), f"Not run: {stop}", "withdrawn",
                    call.id,
                )  # fmt: skip
            for broken in reply.broken_calls:
                yield ToolRejected(
                    step, broken.name, _keepable(broken.arguments), f"Not run: {stop}", "withdrawn"
                )
            if reply.text.strip():
                conversation.append(Message.assistant(reply.text))
                yield TurnFinished(step, reply.text)
            else:
                yield TurnFailed(step, f"Stopped: {stop}")
            return

        outcome = _Step()
        kept = [_kept(call, toolbox) for call in reply.tool_calls]
        too_large = {call.id: reason for call, reason in kept if reason is not None}
        calls = [call for call, _ in kept]
        outcome.messages.append(Message.assistant(reply.text, calls))
        runnable: list[ToolCall] = []
        for call in calls:
            yield ToolCallParsed(step, call.id, call.name, call.arguments)
            reason: str | None = None
            stage: RejectionStage = "validation"
            if spent >= settings.max_tool_calls:
                reason = f"Not run: the limit of {settings.max_tool_calls} tool calls was reached."
                stage = "limit"
            else:
                spent += 1
                reason = too_large.get(call.id) or toolbox.validate(call.name, call.arguments)
                tool = toolbox.get(call.name)
                if reason is not None and tool is not None:
                    outcome.invalid = True
                if reason is None and tool is not None:
                    refusal = dedupe.check(tool, call.arguments)
                    if refusal is None:
                        dedupe.record(tool, call.arguments)
                    else:
                        reason, stage = refusal.reason, refusal.kind
                        outcome.duplicate = outcome.duplicate or refusal.kind == "repeat"
                if reason is None and tool is not None and tool.needs_approval:
                    approved = approver is not None and await approver(call, tool)
                    if not approved:
                        reason, stage = f"The user declined this call to {tool.name}.", "denied"
            if reason is not None:
                yield ToolRejected(step, call.name, call.arguments, reason, stage, call.id)
                outcome.results[call.id] = Message.tool(
                    call.id, call.name, reason, rejected=True, meta={"stage": stage}
                )
            else:
                runnable.append(call)
        broken_notes = []
        for broken in reply.broken_calls:
            spent += 1
            shown = _keepable(broken.arguments)
            yield ToolRejected(step, broken.name, shown, broken.reason, "parse")
            broken_notes.append(f"Your call to {broken.name} was not run: {broken.reason}")
            outcome.invalid = True

        direct_answer: str | None = None
        async with aclosing(_run_all(toolbox, runnable, step)) as stream:
            async for result in stream:
                yield result
                if isinstance(result, ToolStarted):
                    continue
                meta = {
                    "duration_ms": result.duration_ms,
                    "error": result.error,
                    "images": [image.to_dict() for image in result.images],
                }
                content = result.content
                if result.images and not provider.capabilities.vision:
                    # Said where it reads naturally: a separate note about what the model
                    # cannot see was copied into answers word for word.
                    content += f"\n{NOT_SEEN}"
                    meta["sent_to_model"] = False
                outcome.results[result.id] = Message.tool(
                    result.id, result.name, content, meta=meta
                )
                outcome.images.extend((result.name, image) for image in result.images)
                tool = toolbox.get(result.name)
                if tool is not None and tool.direct_output and result.error is None:
                    direct_answer = direct_answer if direct_answer is not None else result.content

        outcome.messages.extend(outcome.results[c.id] for c in calls)
        if broken_notes:
            outcome.messages.append(Message.user("\n".join(broken_notes)))
        if outcome.images and provider.capabilities.vision:
            outcome.messages.append(_images_message(outcome.images))
        conversation.extend(outcome.messages)

        if direct_answer is not None:
            conversation.append(Message.assistant(direct_answer))
            yield TurnFinished(step, direct_answer)
            return

        if spent >= settings.max_tool_calls:
            offer_tools = False
            withdrawn = f"tools were withdrawn after {settings.max_tool_calls} tool calls"
        elif outcome.duplicate:
            offer_tools = False
            withdrawn = "tools were withdrawn after a repeated call"
        elif outcome.invalid:
            offer_tools = invalid_retries > 0
            invalid_retries -= 1
            withdrawn = "tools were withdrawn after invalid calls"
        step += 1


def _kept(call: ToolCall, toolbox: Toolbox) -> tuple[ToolCall, str | None]:
    """The call as the turn keeps it (in events, history, the store), and why it may not
    run if its arguments are too large or deep to keep: then they are replaced by a note,
    since they could be neither stored nor sent back to the model."""
    if size_problem(call.arguments) is None:
        # A model's JSON may hold "\\ud83d" (half an emoji): replaced, it can be stored.
        return toolbox.repaired(replace(call, arguments=without_surrogates(call.arguments))), None
    reason = toolbox.validate(call.name, call.arguments)
    return replace(call, arguments=_keepable(call.arguments)), reason


def _keepable(arguments: Any) -> Any:
    """`arguments`, or a note in their place where they are too large or deep to keep."""
    problem = size_problem(arguments)
    return arguments if problem is None else {"(arguments not kept)": problem}


async def _run_all(
    toolbox: Toolbox, calls: Sequence[ToolCall], step: int
) -> AsyncGenerator[ToolStarted | ToolResult, None]:
    """Run calls concurrently; yield each result as it finishes. Cancelling stops them all."""
    if not calls:
        return
    for call in calls:
        yield ToolStarted(step, call.id, call.name)

    async def run(call: ToolCall) -> tuple[ToolCall, Outcome]:
        return call, await toolbox.run(call)

    tasks = [asyncio.ensure_future(run(call)) for call in calls]
    try:
        for next_done in asyncio.as_completed(tasks):
            call, done = await next_done
            yield ToolResult(
                step, call.id, call.name, done.content, done.images, done.duration_ms, done.error
            )
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _images_message(images: list[tuple[str, Image]]) -> Message:
    """Tool images go back to a model that sees as one user message (every backend sends
    user images)."""
    names = ", ".join(dict.fromkeys(name for name, _ in images))
    message = Message.user(f"[Images from the tool results: {names}]", [i for _, i in images])
    message.meta = {"tool_images": len(images), "sent_to_model": True}
    return message


async def complete_turn(
    provider: Provider,
    toolbox: Toolbox,
    conversation: list[Message],
    *,
    settings: LoopSettings | None = None,
    dedupe: Deduplicator | None = None,
    approver: Approver | None = None,
) -> list[Event]:
    """The non-streaming form: the same loop, its events collected."""
    return [
        event
        async for event in run_turn(
            provider, toolbox, conversation, settings=settings, dedupe=dedupe, approver=approver
        )
    ]
