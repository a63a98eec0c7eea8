"""The answer in text, for a step the call gate says answers in words, or whose tools were
withdrawn: all of it is text, shown as it streams, even JSON, since no call can come of
it; an answer that is one of Loomchat's own formats is caught and asked again."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import replace

from desktop.core.events import GateRecord, Notice, ProviderEvent, Reply
from desktop.core.messages import Message
from desktop.core.providers.base import PlainAnswer, Provider, RequestOptions
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.holdback import VisibleText, relay
from desktop.core.tracks.prompt import emulated_history, split_turns
from desktop.core.tracks.tool_forms import ToolForm
from desktop.core.tracks.words_ahead import WordsAhead

# A plain answer that keeps the tool prompt (for the server's prompt cache) but cannot be a
# call: it may not open with `{`, `[` or a fence, nor hold `{` followed by a quote (a JSON
# object, the shape of every call) anywhere; braces in code and prose stay possible.
NO_CALL_GRAMMAR = r"""root ::= first rest
first ::= [^{\[` \t\n]
rest ::= ([^{] | "{" [ \t\n]* [^" \t\n])* ("{" [ \t\n]*)?
"""


async def text_answer(
    inner: Provider,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    options: RequestOptions,
    *,
    form: ToolForm,
    keep_tools: bool,
    reason: str | None = None,
    shown: str = "",
    record: GateRecord | None = None,
    again: bool = True,
    ahead: WordsAhead | None = None,
) -> AsyncGenerator[ProviderEvent, None]:
    """The answer in text, for a call the gate turned down or that named no offered
    tool, or a step whose tools were withdrawn. After withdrawn tools, where the backend
    can forbid a call, the prompt keeps the tools (`keep_tools`, listed as `form`: the
    prefix the server has cached). After an unsure call the tools are left out: kept and
    forbidden, the model echoed the request or explained how to call the tool instead of
    answering, and that prompt is short anyway.

    `reason` says why a later part of the step answers in text (for the trace); without
    one, the answer is a step of its own (the last, tool-free one). `shown` is prose of
    the step's free answer that was already shown: the answer's text goes on from it.

    An answer that is one of Loomchat's own formats (a call written out, a transcript
    line) ends where it begins; if nothing came before it, the request is asked again
    (`again`) alone, without tools or earlier turns, whose shapes the model copied.
    Without the tools, the answer asked `ahead` of the verdict is this one."""
    if tools and keep_tools:
        history = emulated_history(messages, tools, calls_allowed=False, form=form)
        part = PlainAnswer(reason) if reason else options.part
        plain_options = replace(options, part=part, withdrawn_tools=(), grammar=NO_CALL_GRAMMAR)
        source = inner.stream(history, [], plain_options)
    else:
        taken = ahead.take() if ahead is not None else None
        source = taken or inner.stream(*in_words(messages, options, reason))
    visible = VisibleText(hold_calls=False)
    replies: list[Reply] = []
    plain = relay(source, visible, replies)
    async with aclosing(plain) as answer:
        async for event in answer:
            yield event
    for piece in visible.flush():
        yield piece
    leak = visible.leak
    if leak is not None and not f"{shown}{visible.prose}".strip():
        if again:
            alone = split_turns(messages)[1]
            why = f"the answer was {leak.name}: asked again, the request alone"
            again_record = replace(record, reason=why) if record is not None else None
            retry = text_answer(inner, alone, [], options, form=form, keep_tools=False,
                                reason=why, record=again_record, again=False)  # fmt: skip
            async for event in retry:
                yield event
            return
        yield Notice(f"The model answered with {leak.name} instead of words.")
    judged = record.judged if record is not None else None
    raw = visible.guard.text
    finish: str | None = "stop"  # where a leak ended it, no reply came
    for reply in replies[-1:]:
        raw, finish = reply.raw or raw, reply.finish_reason
    yield Reply(f"{shown}{visible.prose}", [], [], raw, finish, judged, record=record)


def in_words(
    messages: Sequence[Message], options: RequestOptions, reason: str | None
) -> tuple[list[Message], list[ToolSpec], RequestOptions]:
    """The request of an answer without the tools, in the slot kept for it."""
    part = PlainAnswer(reason) if reason else options.part
    plain = replace(options, part=part, withdrawn_tools=(), aside="in words")
    return emulated_history(messages, []), [], plain
