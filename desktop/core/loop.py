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
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Any, assert_never

from desktop.core.documents.attribution import app_citation
from desktop.core.events import (
    Event,
    Notice,
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
)
from desktop.core.judge import Judge
from desktop.core.limits import DEFAULT_MAX_TOOL_CALLS
from desktop.core.messages import Image, Message, MessageMeta, ToolCall, without_surrogates
from desktop.core.offer import ToolOffer
from desktop.core.providers.base import Provider, ProviderError, RequestOptions
from desktop.core.tools.dedupe import Deduplicator
from desktop.core.tools.toolbox import (
    Approver,
    Outcome,
    Tool,
    Toolbox,
    limit_content,
    size_problem,
)
from desktop.core.tracks.prompt import current_turn_start

# Ends a tool result with images, for a model that cannot see them: it should not say it
# cannot see, nor echo the note as its answer, as small models did with a plainer one
# (docs/experiments/answers-after-a-tool.md).
NOT_SEEN = "It is on the user's screen now; describe the data, not the picture."
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

    number: int
    calls: list[ToolCall] = field(default_factory=list)
    results: dict[str, Message] = field(default_factory=dict)
    notes: list[str] = field(
        default_factory=list
    )  # why calls that could not be parsed were not run
    images: list[tuple[str, Image]] = field(default_factory=list)
    runnable: list[ToolCall] = field(default_factory=list)
    direct_answer: str | None = None
    repeated: bool = False
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
    settings = settings or LoopSettings()
    dedupe = dedupe or Deduplicator()
    dedupe.new_turn()
    judge = Judge(toolbox, settings.max_tool_calls, dedupe, approver)
    offer = ToolOffer(toolbox, settings.invalid_call_retries)
    step = 0
    try:
        allowed = dedupe.repeats_allowed(toolbox.names)
        options = replace(settings.options, repeats_allowed=allowed)
        turn = _turn(provider, conversation, options, judge, offer)
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
    conversation: list[Message],
    options: RequestOptions,
    judge: Judge,
    offer: ToolOffer,
) -> AsyncGenerator[Event, None]:
    """Ask; finish on text; refuse every call once tools are withdrawn; judge the calls,
    run those that may run, commit the step; finish on a direct answer, or ask again."""
    number = 0
    while True:
        reply: Reply | None = None
        tools = offer.tools
        async for event in _ask(provider, conversation, tools, offer.options(options), number):
            if isinstance(event, Reply):
                reply = event
            else:
                yield event
                if isinstance(event, TurnFailed):
                    return
        if reply is None:
            yield TurnFailed(number, f"{provider.label} ended its answer without finishing it.")
            return
        if not reply.tool_calls and not reply.broken_calls:
            for event in _finished(reply.text, conversation, number):
                yield event
            return
        if not tools:
            async for event in _refuse_all(reply, offer.withdrawn, conversation, number):
                yield event
            return
        step = _Step(number)
        async for event in _judge_calls(reply, judge, offer.toolbox, step):
            yield event
        async for event in _run_calls(offer.toolbox, provider.capabilities.vision, step):
            yield event
        conversation.extend(_committed(reply.text, step, provider.capabilities.vision))
        if step.direct_answer is not None:
            conversation.append(Message.assistant(step.direct_answer))
            yield TurnFinished(number, step.direct_answer)
            return
        limit = judge.max_calls if judge.spent_all else None
        offer.after_step(limit=limit, repeated=step.repeated, invalid=step.invalid)
        number += 1


def _without_images(conversation: list[Message]) -> list[Message]:
    """For a model that cannot see: the person's pictures stay in the chat (they were told
    before sending), only their words go; an image would make such a server refuse."""
    return [
        replace(m, parts=[p for p in m.parts if not isinstance(p, Image)]) if m.images else m
        for m in conversation
    ]


async def _ask(
    provider: Provider,
    conversation: list[Message],
    tools: list[Tool],
    options: RequestOptions,
    step: int,
) -> AsyncGenerator[Event | Reply, None]:
    """The model's answer as turn events, then its `Reply`; or `TurnFailed`."""
    sent = conversation if provider.capabilities.vision else _without_images(conversation)
    try:
        async with aclosing(provider.stream(sent, tools, options)) as stream:
            async for chunk in stream:
                match chunk:
                    case TextChunk():
                        yield TextDelta(step, chunk.text)
                    case ThinkingChunk():
                        yield ThinkingDelta(step, chunk.text)
                    case UsageReport():
                        yield Usage(step, chunk.prompt_tokens, chunk.completion_tokens)
                    case Notice():
                        yield TurnWarning(step, chunk.message)
                    case TokenOdds():
                        pass  # read by the tracks' call gate, not shown
                    case Reply():
                        yield chunk
                    case _:
                        assert_never(chunk)
    except ProviderError as exc:
        yield TurnFailed(step, str(exc))
    except Exception as exc:  # a bug must still end the turn with a message, not hang the UI
        yield TurnFailed(step, f"Unexpected error from {provider.label}: {exc!r}")


def _finished(text: str, conversation: list[Message], step: int) -> Iterator[Event]:
    """The turn's answer, committed: with the app's citation of the passage it drew on
    where it cites none of the turn's passages itself (documents.attribution)."""
    cited = app_citation(text, conversation[current_turn_start(conversation) :])
    if cited:
        yield TextDelta(step, cited)
    conversation.append(Message.assistant(text + cited))
    yield TurnFinished(step, text + cited)


async def _refuse_all(
    reply: Reply, withdrawn: str, conversation: list[Message], step: int
) -> AsyncGenerator[Event, None]:
    """Tools were withdrawn and the model still calls one: a hard stop, never a loop."""
    stop = f"{withdrawn}, and the model kept calling tools."
    for call in reply.tool_calls:
        shown = _keepable(call.arguments)
        yield ToolRejected(step, call.name, shown, f"Not run: {stop}", "withdrawn", call.id)
    for broken in reply.broken_calls:
        shown = _keepable(broken.arguments)
        yield ToolRejected(step, broken.name, shown, f"Not run: {stop}", "withdrawn")
    if reply.text.strip():
        for event in _finished(reply.text, conversation, step):
            yield event
    else:
        yield TurnFailed(step, f"Stopped: {stop}")


async def _judge_calls(
    reply: Reply, judge: Judge, toolbox: Toolbox, step: _Step
) -> AsyncGenerator[Event, None]:
    """Each call parsed, then judged: the refused get their reason as their result."""
    kept = [_kept(call, toolbox) for call in judge.dedupe.merged(reply.tool_calls)]
    too_large = {call.id: reason for call, reason in kept if reason is not None}
    step.calls = [call for call, _ in kept]
    for call in step.calls:
        yield ToolCallParsed(step.number, call.id, call.name, call.arguments, gate=reply.gate)
        verdict = await judge.judge(call, too_large.get(call.id))
        if verdict is None:
            step.runnable.append(call)
            continue
        step.invalid = step.invalid or verdict.fixable
        step.repeated = step.repeated or verdict.stage == "repeat"
        yield ToolRejected(
            step.number, call.name, call.arguments, verdict.reason, verdict.stage, call.id
        )
        step.results[call.id] = Message.tool(
            call.id, call.name, verdict.reason, rejected=True, meta=MessageMeta(stage=verdict.stage)
        )
    for broken in reply.broken_calls:
        judge.spend_broken()
        shown = _keepable(broken.arguments)
        yield ToolRejected(step.number, broken.name, shown, broken.reason, "parse")
        step.notes.append(f"Your call to {broken.name} was not run: {broken.reason}")
        step.invalid = True


async def _run_calls(toolbox: Toolbox, vision: bool, step: _Step) -> AsyncGenerator[Event, None]:
    """Run the calls that may run, at once; each result joins the step as it comes."""
    async with aclosing(_run_all(toolbox, step.runnable, step.number)) as stream:
        async for result in stream:
            yield result
            if isinstance(result, ToolStarted):
                continue
            meta = MessageMeta(result.duration_ms, result.error, tuple(result.images))
            if result.retrieval is not None:  # kept for the answer's citations, not sent
                meta = replace(meta, sources=result.retrieval.sources())
            content = result.content
            if result.images and not vision:
                # Said where it reads naturally: a separate note about what the model
                # cannot see was copied into answers word for word.
                content += f"\n{NOT_SEEN}"
                meta = replace(meta, sent_to_model=False)
            step.results[result.id] = Message.tool(result.id, result.name, content, meta=meta)
            step.images.extend((result.name, image) for image in result.images)
            tool = toolbox.get(result.name)
            direct = tool is not None and tool.direct_output and result.error is None
            if direct and step.direct_answer is None:
                step.direct_answer = result.content


def _committed(text: str, step: _Step, vision: bool) -> list[Message]:
    """What the step adds to the conversation, all at once: the calls, their results in
    the calls' order, the notes on calls that could not be parsed, the images."""
    messages = [Message.assistant(text, step.calls)]
    messages.extend(step.results[c.id] for c in step.calls)
    if step.notes:
        notes = Message.user("\n".join(step.notes))
        notes.meta = MessageMeta(step_notes=len(step.notes))
        messages.append(notes)
    if step.images and vision:
        messages.append(_images_message(step.images))
    return messages


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
            yield ToolResult(step, call.id, call.name, done.content, done.images,
                             done.duration_ms, done.error, done.retrieval)  # fmt: skip
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _images_message(images: list[tuple[str, Image]]) -> Message:
    """Tool images go back to a model that sees as one user message (every backend sends
    user images)."""
    names = ", ".join(dict.fromkeys(name for name, _ in images))
    message = Message.user(f"[Images from the tool results: {names}]", [i for _, i in images])
    message.meta = MessageMeta(tool_images=len(images), sent_to_model=True)
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
