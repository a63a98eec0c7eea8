"""The emulated track's prompt: the tools described in the system prompt, and the
conversation rewritten for a backend asked without native tools (calls as the JSON the
model wrote, results as user messages)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from desktop.core.messages import Message, Part, TextPart, ToolCall
from desktop.core.providers.base import Aside
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.tool_forms import ToolForm, render_tools

TOOL_PROMPT_HEAD = """\
You can use tools. Use one only if it does exactly what the user asks for.
To call a tool, answer with only this JSON and nothing else:
{"name": "<tool name>", "arguments": {"<parameter>": <value>}}
To make several calls at once, answer with a JSON array of such objects.
Fill "arguments" with real values from the user's request, never with the schema. \
Give every required parameter, and no parameter that is not listed.
If no tool does what the user asks, or the results above already answer it, do not call \
a tool: answer in plain text.

Tools:"""

# Appended to the tool results the model reads last: small models follow the latest words.
NEXT_STEP_HINT = "If these results answer the request, answer the user now in plain text."
NO_TOOLS_HINT = "Now answer the user's request in plain text, using the results above."
# After a question, its hint asks it again, in the person's voice (the results reach the
# model as their message): read last, it is what gets answered. An instruction is not said
# again: the tool has carried it out, and said again it was carried out again (a call
# written out, in words).
QUESTION_HINT = "Using the results above, answer my question in plain text:"
# A question longer than this (a pasted text) is pointed at, not said again.
MAX_RESTATED_CHARS = 1000


def render_tool(tool: ToolSpec, form: ToolForm = "json") -> str:
    return render_tools([tool], form)


def render_tool_prompt(tools: Iterable[ToolSpec], form: ToolForm = "json") -> str:
    return "\n".join([TOOL_PROMPT_HEAD, render_tools(list(tools), form)])


def first_step_prompts(
    messages: Sequence[Message], tools: Sequence[ToolSpec], form: ToolForm, slots: int
) -> list[tuple[list[Message], Aside | None]]:
    """The prompts a turn's first step may read, for the server to read them ahead: the
    conversation's with the tools, and where the server keeps the answer in words in a
    slot of its own (`slots` > 1), that one too; and where the turn asked alone has one
    as well (`slots` > 2), its prompt up to the request (the system prompt and the tools,
    which the first second look in a session would otherwise read whole)."""
    prompts: list[tuple[list[Message], Aside | None]] = [
        (emulated_history(messages, tools, form=form), None)
    ]
    if slots > 1:
        prompts.append((emulated_history(messages, []), "in words"))
    if slots > 2:
        prompts.append((emulated_history(split_turns(messages)[1], tools, form=form), "turn alone"))
    return prompts


def call_json(calls: Sequence[ToolCall]) -> str:
    """How earlier calls appear while tools are offered: as the model was asked to write them."""
    shaped = [{"name": c.name, "arguments": c.arguments} for c in calls]
    return json.dumps(shaped[0] if len(shaped) == 1 else shaped, ensure_ascii=False)


def call_prose(calls: Sequence[ToolCall]) -> str:
    """How earlier calls appear once tools are withdrawn: JSON there would prime a small
    model to write yet another call instead of the answer."""
    said = [f"{c.name} with {json.dumps(c.arguments, ensure_ascii=False)}" for c in calls]
    return f"(I called {' and '.join(said)}.)"


def emulated_history(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    *,
    calls_allowed: bool = True,
    form: ToolForm = "json",
) -> list[Message]:
    """The conversation as a backend without tools sees it: tools in the system prompt,
    calls as the JSON the model wrote, results as user messages, same roles merged.

    `calls_allowed=False`: the tools stay in the prompt (its prefix is the one the server
    has cached) but the step's hint asks for the answer in text, as when they are gone.

    With no tools, earlier turns are their words alone (see `in_words`): a model shown its
    earlier calls and results as chat turns writes them back as its answer."""
    addendum = render_tool_prompt(tools, form) if tools else ""
    out: list[Message] = []
    # Refused calls go once tools are gone (the prompt stays the same up to the first).
    current = list(messages) if tools and calls_allowed else _without_rejected_calls(messages)
    if not tools:
        current = in_words(current)
    earlier, rest = split_turns(current) if addendum else ([], current)
    if earlier:
        addendum = f"{transcript(earlier)}\n\n{addendum}"
        rest = _with_earlier_images(earlier, rest)
    if rest and rest[0].role == "system":
        system = rest.pop(0).text
        out.append(Message.system(f"{system}\n\n{addendum}" if addendum else system))
    elif addendum:
        out.append(Message.system(addendum))
    for message in rest:
        if message.role == "assistant" and message.tool_calls:
            prose = message.text.strip()
            calls = call_json(message.tool_calls) if tools else call_prose(message.tool_calls)
            converted = Message.assistant(f"{prose}\n{calls}" if prose else calls)
        elif message.role == "tool":
            header = f"[Result of {message.name or 'the tool'}]\n"
            converted = Message("user", [TextPart(header + message.text)])
        else:
            converted = Message(message.role, list(message.parts))
        if out and out[-1].role == converted.role and converted.role != "system":
            out[-1] = Message(converted.role, _joined(out[-1].parts, converted.parts))
        else:
            out.append(converted)
    if _mid_turn(messages):
        hint = NEXT_STEP_HINT
        if not tools or not calls_allowed:
            refusals = [m.text for m in messages if _worth_telling(m)]
            hint = "\n".join([*(f"({reason})" for reason in refusals), _no_tools_hint(messages)])
        last = out[-1]
        out[-1] = Message(last.role, _joined(last.parts, [TextPart(hint)]))
    return out


EARLIER_HEAD = "Earlier in this conversation:"


def split_turns(messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
    """The earlier turns in their words (see `in_words`), and the system prompt with the
    current turn, whole.

    While tools are offered, the earlier turns go into the system prompt as a transcript,
    not as chat turns. A small model imitates its own earlier turns: shown their calls, it
    called an earlier turn's tool again; shown only their answers, it never called at all;
    shown a transcript, it answered as if the request were the first
    (docs/experiments/deep-conversation.md). The transcript comes before the tool prompt:
    a small model follows the words nearest the request, and with the tools there it
    opened due follow-up calls more surely (docs/experiments/transcript-before-the-tools.md).
    The server's cache keeps the transcript but reads the tool prompt again after each
    turn; the next prompt's read-ahead does that while the person reads."""
    worded = in_words(messages)
    start = current_turn_start(worded)
    earlier = [m for m in worded[:start] if m.role != "system"]
    current = [m for m in worded[:start] if m.role == "system"] + worded[start:]
    return earlier, current


def transcript(earlier: Sequence[Message]) -> str:
    lines: list[tuple[str, str]] = []
    for message in earlier:
        who = "User" if message.role == "user" else "You"
        attached = f" [{len(message.images)} image(s) attached]" if message.images else ""
        said = f"{message.text.strip()}{attached}"
        if lines and lines[-1][0] == who:  # one line per turn and side
            said = f"{lines.pop()[1]} {said}"
        lines.append((who, said))
    return "\n".join([EARLIER_HEAD, *(f"{who}: {said}" for who, said in lines)])


def _with_earlier_images(earlier: Sequence[Message], current: list[Message]) -> list[Message]:
    """Images the person attached earlier stay real images (a model that sees may be asked
    about them again): they go with the current request."""
    images = [image for message in earlier for image in message.images]
    at = next((i for i, m in enumerate(current) if m.role == "user"), None)
    if not images or at is None:
        return current
    request = current[at]
    note = TextPart(f"(The {len(images)} image(s) attached earlier in this conversation.)")
    return [*current[:at], Message("user", [note, *images, *request.parts]), *current[at + 1 :]]


def in_words(messages: Sequence[Message]) -> list[Message]:
    """The conversation with its earlier turns as their words: each request and its answer,
    without the calls and results between them (the answer says what the results were).
    A turn that ended with no words says in prose what it called. The current turn stays
    whole."""
    start = current_turn_start(messages)
    kept: list[Message] = []
    said = False  # whether the earlier turn being read has words from the model
    calls: list[ToolCall] = []
    for message in messages[:start]:
        if is_request(message):
            if calls and not said:
                kept.append(Message.assistant(call_prose(calls)))
            said, calls = False, []
            kept.append(message)
        elif message.role == "assistant":
            calls += message.tool_calls
            if message.text.strip():
                said = True
                kept.append(Message("assistant", list(message.parts)))
        elif message.role not in ("tool", "user"):  # results, notes and images go
            kept.append(message)
    if calls and not said:
        kept.append(Message.assistant(call_prose(calls)))
    return [*kept, *messages[start:]]


def current_turn_start(messages: Sequence[Message]) -> int:
    starts = [i for i, message in enumerate(messages) if is_request(message)]
    return starts[-1] if starts else 0


def is_request(message: Message) -> bool:
    """A person's message, which starts a turn (not a step's notes or tool images)."""
    return message.role == "user" and not message.from_the_loop


# Refusals that change nothing once tools are withdrawn: the model has the results it got.
# Their reasons were copied into answers ("this exact call ... was already made").
_MOOT_ONCE_WITHDRAWN = frozenset({"repeat", "cooldown", "limit"})


def _worth_telling(message: Message) -> bool:
    """Whether a refused call's reason goes into the last, tool-free step: what the person
    declined, or a call that could not be put right, the answer should account for."""
    return (
        message.role == "tool"
        and message.rejected
        and message.meta.stage not in _MOOT_ONCE_WITHDRAWN
    )


def _without_rejected_calls(messages: Sequence[Message]) -> list[Message]:
    """The history minus calls that were refused: once tools are withdrawn, a refused repeat
    only confuses a small model about what it already knows."""
    refused = {m.tool_call_id for m in messages if m.role == "tool" and m.rejected}
    kept: list[Message] = []
    for message in messages:
        if message.role == "tool" and message.rejected:
            continue
        if message.tool_calls and refused.intersection(c.id for c in message.tool_calls):
            calls = [c for c in message.tool_calls if c.id not in refused]
            if not calls and not message.text.strip():
                continue
            message = Message("assistant", list(message.parts), calls)
        kept.append(message)
    return kept


def _no_tools_hint(messages: Sequence[Message]) -> str:
    """The hint, with the person's question said again (where it is one, and short)."""
    start = current_turn_start(messages)
    request = messages[start].text.strip() if messages and is_request(messages[start]) else ""
    if request.endswith("?") and len(request) <= MAX_RESTATED_CHARS:
        return f"{QUESTION_HINT} {request}"
    return NO_TOOLS_HINT


def _mid_turn(messages: Sequence[Message]) -> bool:
    """Whether the model is about to read tool results (perhaps followed by their images)."""
    tail = [m.role for m in messages[-2:]]
    return tail[-1:] == ["tool"] or tail == ["tool", "user"]


def _joined(first: list[Part], second: list[Part]) -> list[Part]:
    if first and second and isinstance(first[-1], TextPart) and isinstance(second[0], TextPart):
        return [*first[:-1], TextPart(f"{first[-1].text}\n\n{second[0].text}"), *second[1:]]
    return [*first, *second]
