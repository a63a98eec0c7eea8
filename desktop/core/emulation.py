"""Emulated ("untooled") tool calling: tools described in the prompt, calls parsed from text.

`EmulatedTools` wraps any provider and has the same interface, so the loop never knows
which track it is on. It renders the tools into the system prompt, rewrites earlier calls
and results as plain messages (the backend is asked without native tools), streams prose
as it arrives while holding back anything that may be a call, and parses the answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, Iterable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Any

from desktop.core.messages import Message, Part, TextPart, ToolCall
from desktop.core.providers.base import (
    BrokenCall,
    CallGate,
    Capabilities,
    Provider,
    ProviderEvent,
    Reply,
    RequestOptions,
    TextChunk,
    ThinkingChunk,
    TokenOdds,
    checked_call,
    split_calls,
)
from desktop.core.thinking import ThinkSplitter, strip_thinking
from desktop.core.tools.toolbox import Tool

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

_CALL_START = re.compile(r'\{\s*"(?:name|function)"\s*:\s*"([^"\\]*)')
_FENCE_PAIR = re.compile(r"```[A-Za-z0-9_-]*\s*```")


# --- the prompt ------------------------------------------------------------------------


def example_value(schema: Any) -> Any:
    """A plausible value for a schema, for a made-up example call."""
    if not isinstance(schema, dict):
        return "..."
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "integer":
        return 1
    if kind == "number":
        return 1.5
    if kind == "boolean":
        return True
    if kind == "array":
        return [example_value(schema.get("items", {}))]
    if kind == "object":
        props = schema.get("properties", {})
        return {k: example_value(v) for k, v in props.items() if k in schema.get("required", [])}
    return "..."


# Schema keywords that only bound a value: validation enforces them and names them when a
# call breaks one, so the prompt can leave them out (create_chart: 40% fewer tokens).
_BOUNDS_ONLY = frozenset(
    {"minItems", "maxItems", "minLength", "maxLength", "additionalProperties", "$schema",
     "uniqueItems", "minProperties", "maxProperties"}
)  # fmt: skip


def prompt_schema(schema: Any) -> Any:
    """The schema as the prompt shows it: what a value is, without its bounds."""
    if isinstance(schema, list):
        return [prompt_schema(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    shown = {k: prompt_schema(v) for k, v in schema.items() if k not in _BOUNDS_ONLY}
    if isinstance(schema.get("properties"), dict):  # parameter names, whatever they are
        shown["properties"] = properties_for_prompt(schema["properties"])
    return shown


def properties_for_prompt(properties: dict[str, Any]) -> dict[str, Any]:
    return {name: prompt_schema(value) for name, value in properties.items()}


def render_tool(tool: Tool) -> str:
    props = json.dumps(
        properties_for_prompt(tool.properties), ensure_ascii=False, separators=(", ", ": ")
    )
    lines = [
        f"- {tool.name}: {tool.description}",
        f"  parameters: {props}",
        f"  required: {', '.join(tool.required) or 'none'}",
    ]
    examples = tool.examples[:1]  # one shows the shape; more cost tokens on every step
    for example in examples:
        call = json.dumps({"name": tool.name, "arguments": example.arguments}, ensure_ascii=False)
        lines.append(f'  example: "{example.prompt}" -> {call}')
    if not examples:
        arguments = {k: example_value(v) for k, v in tool.properties.items() if k in tool.required}
        call = json.dumps({"name": tool.name, "arguments": arguments}, ensure_ascii=False)
        lines.append(f"  call shape: {call}")
    return "\n".join(lines)


def render_tool_prompt(tools: Iterable[Tool]) -> str:
    return "\n".join([TOOL_PROMPT_HEAD, *(render_tool(t) for t in tools)])


# --- the parser -------------------------------------------------------------------------


@dataclass
class ParsedAnswer:
    text: str
    calls: list[tuple[str, Any]] = field(default_factory=list)
    broken: list[BrokenCall] = field(default_factory=list)


def match_json_end(text: str, start: int) -> int | None:
    """Index just past the object or array opening at `start`, or None if it never closes.

    String-aware: brackets inside JSON strings (and escaped quotes) do not count.
    """
    found = JsonSpans(text).span(start)
    return found[0] if found else None


# Deeper JSON is no call: it is text, and never reaches json.loads (which recurses).
MAX_JSON_DEPTH = 64


class JsonSpans:
    """Where the brackets of a text close, each found at most once: a scan from one
    bracket records every bracket it passes, so a text of 20,000 unclosed `[` costs one
    pass, not 20,000. A budget of characters scanned keeps any text linear."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.budget = 8 * len(text) + 4096
        self._spans: dict[int, tuple[int, int] | None] = {}

    @property
    def exhausted(self) -> bool:
        return self.budget <= 0

    def span(self, start: int) -> tuple[int, int] | None:
        """(end, depth) of the object or array opening at `start`, or None if it never
        closes (or the budget ran out)."""
        if start not in self._spans:
            self._scan(start)
        return self._spans.get(start)

    def _scan(self, start: int) -> None:
        text = self.text
        stack: list[int] = []  # open brackets' positions
        peaks: list[int] = []  # deepest level reached inside each of them
        in_string = escaped = False
        i = start
        for i in range(start, len(text)):
            ch = text[i]
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch in "{[":
                stack.append(i)
                peaks.append(len(stack))
            elif ch in "}]":
                if not stack:
                    break
                opened, peak = stack.pop(), peaks.pop()
                self._spans.setdefault(opened, (i + 1, peak - len(stack)))
                if peaks:
                    peaks[-1] = max(peaks[-1], peak)
                if not stack:
                    break
        self.budget -= i - start + 1
        for opened in stack:
            self._spans.setdefault(opened, None)
        self._spans.setdefault(start, None)


_IDENTIFIER = re.compile(r"[A-Za-z0-9_.-]{1,128}")  # what a Tool name may be


def _as_call(value: Any, known: frozenset[str]) -> tuple[str, Any] | None:
    """(name, arguments) if `value` is shaped like a call. A `name` that is no identifier
    ("The Godfather") is a small model answering in the call's shape: text, not a call."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    if value["name"] not in known and not _IDENTIFIER.fullmatch(value["name"]):
        return None
    for key in ("arguments", "parameters"):
        if key in value:
            return value["name"], value[key]
    if value["name"] in known:
        return value["name"], {}
    return None


def parse_answer(text: str, known_names: Iterable[str] = ()) -> ParsedAnswer:
    """Find tool calls in a model's answer. Never raises, and takes time linear in the
    length of the answer, however it is nested or broken.

    A call is a JSON object with a string `name` and `arguments` (alone, fenced, or after
    prose), or a JSON array of such objects. Anything else, `[1]`, `42`, `null`, `true` and
    JSON that is not call-shaped included, stays text. A call that starts but never closes
    (the output limit cut it) is reported as broken, never run.
    """
    visible, _ = strip_thinking(text)
    try:
        return _parse_visible(visible, frozenset(known_names))
    except (RecursionError, MemoryError, ValueError):  # a promise: whatever it is, text
        return ParsedAnswer(visible)


_OPENING = re.compile(r"[{\[]")


def _parse_visible(visible: str, known: frozenset[str]) -> ParsedAnswer:
    calls: list[tuple[str, Any]] = []
    broken: list[BrokenCall] = []
    spans: list[tuple[int, int]] = []
    brackets = JsonSpans(visible)
    i = 0
    while (opening := _OPENING.search(visible, i)) and not brackets.exhausted:
        i = opening.start()
        found = brackets.span(i)
        if found is None:
            started = _CALL_START.match(visible, i)
            if visible[i] == "{" and started:
                reason = "The tool call was cut off before it ended (output limit reached?)."
                broken.append(BrokenCall(started.group(1), visible[i:], reason))
                spans.append((i, len(visible)))
                break
            i += 1
            continue
        end, depth = found
        if depth > MAX_JSON_DEPTH:
            i = end  # nested too deeply to be a call
            continue
        try:
            value = json.loads(visible[i:end])
        except (ValueError, RecursionError):
            i += 1
            continue
        shaped = [_as_call(v, known) for v in (value if isinstance(value, list) else [value])]
        if shaped and all(shaped):
            calls.extend(c for c in shaped if c)
            spans.append((i, end))
            i = end
        else:
            i = end if isinstance(value, dict) else i + 1
    if not spans:
        return ParsedAnswer(visible)
    prose = []
    cursor = 0
    for start, end in spans:
        prose.append(visible[cursor:start])
        cursor = end
    prose.append(visible[cursor:])
    remaining = _FENCE_PAIR.sub("", "".join(prose)).rstrip()
    return ParsedAnswer(remaining, calls, broken)


def call_json(calls: Sequence[ToolCall]) -> str:
    """How earlier calls appear while tools are offered: as the model was asked to write them."""
    shaped = [{"name": c.name, "arguments": c.arguments} for c in calls]
    return json.dumps(shaped[0] if len(shaped) == 1 else shaped, ensure_ascii=False)


def call_prose(calls: Sequence[ToolCall]) -> str:
    """How earlier calls appear once tools are withdrawn: JSON there would prime a small
    model to write yet another call instead of the answer."""
    said = [f"{c.name} with {json.dumps(c.arguments, ensure_ascii=False)}" for c in calls]
    return f"(I called {' and '.join(said)}.)"


# --- streaming hold-back ----------------------------------------------------------------


_NEXT_VISIBLE = re.compile(r"\s*(\S)")


class ProseGate:
    """Lets prose through as it streams, and holds back from where a call may begin.

    A call may begin at `{`, at a code fence, or at `[` followed by `{`; from that point
    the text is held until the answer is complete and parsed.
    """

    def __init__(self) -> None:
        self.buffer = ""
        self.released = 0
        self.holding = False

    def feed(self, text: str) -> str:
        self.buffer += text
        if self.holding:
            return ""
        safe = self._safe_end()
        out = self.buffer[self.released : safe]
        self.released = safe
        return out

    def _safe_end(self) -> int:
        buf = self.buffer
        for i in range(self.released, len(buf)):
            ch = buf[i]
            if ch == "{" or buf.startswith("```", i):
                self.holding = True
                return i
            if ch == "[":
                after = _NEXT_VISIBLE.match(buf, i + 1)
                if after is None:
                    return i  # undecided until the next chunk
                if after.group(1) == "{":
                    self.holding = True
                    return i
            if ch == "`" and len(buf) - i < 3 and "```".startswith(buf[i:]):
                return i  # maybe the start of a fence: wait for the next chunk
        return len(buf)

    def rest(self, final_text: str) -> str:
        """What is left to show once the answer is parsed into `final_text`."""
        if final_text.startswith(self.buffer[: self.released]):
            return final_text[self.released :]
        return ""


# --- the adapter ------------------------------------------------------------------------


def emulated_history(
    messages: Sequence[Message], tools: Sequence[Tool], *, calls_allowed: bool = True
) -> list[Message]:
    """The conversation as a backend without tools sees it: tools in the system prompt,
    calls as the JSON the model wrote, results as user messages, same roles merged.

    `calls_allowed=False`: the tools stay in the prompt (its prefix is the one the server
    has cached) but the step's hint asks for the answer in text, as when they are gone."""
    addendum = render_tool_prompt(tools) if tools else ""
    out: list[Message] = []
    # Refused calls go once tools are gone (the prompt stays the same up to the first).
    rest = list(messages) if tools and calls_allowed else _without_rejected_calls(messages)
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
            refusals = [m.text for m in messages if m.role == "tool" and m.rejected]
            hint = "\n".join([*(f"({reason})" for reason in refusals), NO_TOOLS_HINT])
        last = out[-1]
        out[-1] = Message(last.role, _joined(last.parts, [TextPart(hint)]))
    return out


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


def _mid_turn(messages: Sequence[Message]) -> bool:
    """Whether the model is about to read tool results (perhaps followed by their images)."""
    tail = [m.role for m in messages[-2:]]
    return tail[-1:] == ["tool"] or tail == ["tool", "user"]


def _joined(first: list[Part], second: list[Part]) -> list[Part]:
    if first and second and isinstance(first[-1], TextPart) and isinstance(second[0], TextPart):
        return [*first[:-1], TextPart(f"{first[-1].text}\n\n{second[0].text}"), *second[1:]]
    return [*first, *second]


class VisibleText:
    """Streamed text split into thinking (shown as such) and prose let through the gate.
    With `hold_calls=False` all prose is shown as it comes (an answer that cannot call)."""

    def __init__(self, *, hold_calls: bool = True) -> None:
        self.splitter = ThinkSplitter()
        self.gate = ProseGate()
        self.hold_calls = hold_calls

    def feed(self, text: str) -> list[ProviderEvent]:
        return self._shown(self.splitter.feed(text))

    def flush(self) -> list[ProviderEvent]:
        return self._shown(self.splitter.flush())

    def _shown(self, pieces: list[tuple[bool, str]]) -> list[ProviderEvent]:
        out: list[ProviderEvent] = []
        for thinking, text in pieces:
            if thinking:
                out.append(ThinkingChunk(text))
            elif not self.hold_calls:
                out.append(TextChunk(text))
            elif released := self.gate.feed(text):
                out.append(TextChunk(released))
        return out


async def calls_from_text(
    source: AsyncGenerator[ProviderEvent, None], known: Sequence[str]
) -> AsyncGenerator[ProviderEvent, None]:
    """Stream prose through, hold back what may be a call, and parse the answer for calls.

    `<think>` blocks become thinking. Calls the backend returned structured (native) are
    kept as they are; otherwise the text is parsed, so a call written as JSON in the text
    is found either way.
    """
    visible = VisibleText()
    gate = visible.gate
    reply: Reply | None = None
    async with aclosing(source) as stream:
        async for event in stream:
            if isinstance(event, TextChunk):
                for piece in visible.feed(event.text):
                    yield piece
            elif isinstance(event, Reply):
                reply = event
            else:
                yield event
    for piece in visible.flush():
        yield piece
    if reply is None:
        return
    raw = reply.raw or reply.text
    if reply.tool_calls or reply.broken_calls:
        if rest := gate.rest(gate.buffer):
            yield TextChunk(rest)
        yield Reply(gate.buffer, reply.tool_calls, reply.broken_calls, raw, reply.finish_reason)
        return
    parsed = parse_answer(gate.buffer, known)
    text = parsed.text if (parsed.calls or parsed.broken) else gate.buffer
    if rest := gate.rest(text):
        yield TextChunk(rest)
    calls, broken = split_calls(checked_call(name, args) for name, args in parsed.calls)
    yield Reply(text, calls, [*broken, *parsed.broken], raw, reply.finish_reason)


def _known_names(messages: Sequence[Message], tools: Sequence[Tool]) -> list[str]:
    return [t.name for t in tools] + [c.name for m in messages for c in m.tool_calls]


class EmulatedTools:
    """A provider that offers tools through the prompt of another provider."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    @property
    def label(self) -> str:
        return self.inner.label

    def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool],
        options: RequestOptions,
    ) -> AsyncGenerator[ProviderEvent, None]:
        source = self.inner.stream(emulated_history(messages, tools), [], options)
        return calls_from_text(source, _known_names(messages, tools))


class NativeTools(EmulatedTools):
    """Native tool calling, plus calls the model wrote as JSON text instead of in its
    template's call syntax (which the server then does not recognise): they are found in
    the text as on the emulated track.

    Once tools are withdrawn, the history goes as plain messages, as on the emulated track:
    a model shown its own calls in its template's syntax tends to write one more.
    """

    def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool],
        options: RequestOptions,
    ) -> AsyncGenerator[ProviderEvent, None]:
        withdrawn = not tools and any(m.role == "tool" for m in messages)
        history = emulated_history(messages, []) if withdrawn else messages
        source = self.inner.stream(history, tools, options)
        return calls_from_text(source, _known_names(messages, tools))


# At most this many calls in one step: bounds what the grammar lets a looping model write.
MAX_CALLS_PER_STEP = 10
# Tokens the constrained phase may use whatever the request's limit: a call cut short
# cannot run, so a tight limit meant for prose must not cut a call.
CALL_TOKEN_BUDGET = 1024
# The least probability the model must give to opening a call, where the backend reports
# token odds, for the call to be made; below it the model answers in plain text. Small
# models reach for a tool on nearly any request but hesitate on those no tool fits; how
# much they hesitate differs from model to model (and between quantisations of one), so
# each model's bar is measured by its calibration (calibration.py). Until then the model's
# own first choice stands: no bar.
UNCALIBRATED_BAR = 0.0
_CALL_OPENERS = ("{", "[", "`")
_FIRST_NAME = re.compile(r'"name"\s*:\s*"([^"\\]*)"')
# A plain answer that keeps the tool prompt (for the server's prompt cache) but cannot be a
# call: it may not open with `{`, `[` or a fence, nor hold `{` followed by a quote (a JSON
# object, the shape of every call) anywhere; braces in code and prose stay possible.
NO_CALL_GRAMMAR = r"""root ::= first rest
first ::= [^{\[` \t\n]
rest ::= ([^{] | "{" [ \t\n]* [^" \t\n])* ("{" [ \t\n]*)?
"""
# How far past the start of a call the free answer is read for the first call's name.
_NAME_LOOKAHEAD = 300


def call_schema(tools: Sequence[Tool], first: str | None = None) -> dict[str, Any]:
    """The JSON Schema of the calls of one step, always a list: under it, a backend's
    grammar cannot produce an unknown name, a missing argument or broken JSON.

    A list, not one call, because a small model given the choice writes one call even when
    asked about three cities; made to write a list, it lists them (parallel cases on the
    dev set: 13% -> 47-53%, single calls unchanged).

    `first` pins the list's first call to the tool the model's free answer opened with:
    unpinned, a model whose free answer was one fitting call could start its list by
    copying an example call to another tool. Each call's schema is written once, in
    `$defs`, and referenced (llama.cpp turns a $ref into one grammar rule)."""
    names = [t.name for t in tools]
    defs: dict[str, Any] = {
        f"call{i}": {
            "type": "object",
            "properties": {"name": {"const": t.name}, "arguments": t.parameters},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for i, t in enumerate(tools)
    }
    defs["call"] = {"anyOf": [{"$ref": f"#/$defs/call{i}"} for i in range(len(tools))]}
    any_call = {"$ref": "#/$defs/call"}
    if first not in names:
        return {"$defs": defs, "type": "array", "items": any_call, "minItems": 1,
                "maxItems": MAX_CALLS_PER_STEP}  # fmt: skip
    pinned = {"$ref": f"#/$defs/call{names.index(first)}"}
    # One exact length per alternative: llama.cpp reads `prefixItems` as a whole tuple.
    lists = [
        {"type": "array", "prefixItems": [pinned, *[any_call] * more],
         "minItems": more + 1, "maxItems": more + 1}
        for more in range(MAX_CALLS_PER_STEP)
    ]  # fmt: skip
    return {"$defs": defs, "anyOf": lists}


@dataclass(frozen=True)
class Opening:
    """How an answer opens: with a call or not, the tool named first, the odds of a call
    (None where they were not weighed: prose came first, or the backend gives none)."""

    call: bool
    tool: str | None
    odds: float | None


def call_odds(alternatives: Iterable[tuple[str, float]]) -> float:
    """The probability that a token opens a call (`{`, `[` or a code fence)."""
    return sum(p for token, p in alternatives if token.lstrip().startswith(_CALL_OPENERS))


class ConstrainedTools(EmulatedTools):
    """The emulated track in two phases. The model answers freely, and its prose streams;
    the moment its answer starts a call, that generation is dropped and the calls are asked
    for again under the backend's constrained decoding, built from the tool schemas.
    Plain answers are never constrained. A backend without constrained decoding gets the
    tolerant parser of the plain emulated track.

    Where the backend reports token odds, a call that opens the answer is made only if the
    model was sure of it (`min_call_odds`, the model's calibrated bar): a one-token probe
    of the same prompt, which the server's cache makes nearly free, tells how sure.
    Otherwise it answers in plain text. The reply says how the gate judged (`Reply.gate`).
    """

    def __init__(
        self,
        inner: Provider,
        *,
        min_call_odds: float = UNCALIBRATED_BAR,
        bar_source: str = "uncalibrated",
        keep_prefix: bool = True,
    ) -> None:
        super().__init__(inner)
        self.min_call_odds = min_call_odds
        self.bar_source = bar_source
        self.keep_prefix = keep_prefix  # False only to measure what keeping it saves

    async def _odds_of_a_call(self, history: list[Message], options: RequestOptions) -> float:
        probe = replace(options, max_tokens=1, top_logprobs=10, phase="call-odds")
        odds: float | None = None
        async with aclosing(self.inner.stream(history, [], probe)) as answer:
            async for event in answer:  # read to the end: one token, then its usage
                if isinstance(event, TokenOdds) and odds is None:
                    odds = call_odds(event.alternatives)
        return 1.0 if odds is None else odds  # no odds after all: trust the call

    async def opening(
        self, messages: Sequence[Message], tools: Sequence[Tool], options: RequestOptions
    ) -> Opening:
        """How this step would open, read cheaply (for calibration): whether the answer
        opens a call, the tool it names first, and how sure the model was (1.0 where the
        backend reports no odds, or where prose comes first). Nothing past that is
        generated."""
        history = emulated_history(messages, tools)
        visible = VisibleText()
        gate = visible.gate
        named: re.Match[str] | None = None
        async with aclosing(self.inner.stream(history, [], options)) as free:
            async for event in free:
                if isinstance(event, TextChunk):
                    visible.feed(event.text)
                    if gate.holding:
                        named = _FIRST_NAME.search(gate.buffer, gate.released)
                        if named or len(gate.buffer) - gate.released > _NAME_LOOKAHEAD:
                            break  # a call opens and names its tool
                    elif len(gate.buffer.strip()) > _NAME_LOOKAHEAD:
                        break  # plenty of prose with no call
        if not gate.holding:
            return Opening(False, None, None)
        tool = named.group(1) if named else None
        sure = not gate.buffer[: gate.released].strip() and getattr(
            self.inner, "reports_token_odds", False
        )
        return Opening(True, tool, await self._odds_of_a_call(history, options) if sure else None)

    async def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool],
        options: RequestOptions,
    ) -> AsyncGenerator[ProviderEvent, None]:
        if not tools and options.withdrawn_tools and self.keeps_prefix:
            # The turn's last step: its tools stay in the prompt, calls are forbidden.
            withdrawn = options.withdrawn_tools
            answer = self._plain_answer(messages, withdrawn, options, "", None)
            async for event in answer:
                yield event
            return
        known = _known_names(messages, tools)
        history = emulated_history(messages, tools)
        if not tools or not getattr(self.inner, "constrains_json", False):
            async with aclosing(
                calls_from_text(self.inner.stream(history, [], options), known)
            ) as plain:
                async for event in plain:
                    yield event
            return
        visible = VisibleText()
        gate = visible.gate
        reply: Reply | None = None
        named: re.Match[str] | None = None  # the first call's tool, once the call names it
        async with aclosing(self.inner.stream(history, [], options)) as free:
            async for event in free:
                if isinstance(event, TextChunk):
                    for piece in visible.feed(event.text):
                        yield piece
                    if gate.holding:
                        named = _FIRST_NAME.search(gate.buffer, gate.released)
                        if named or len(gate.buffer) - gate.released > _NAME_LOOKAHEAD:
                            break  # a call begins and names its tool: stop (closing the stream)
                elif isinstance(event, Reply):
                    reply = event
                elif not isinstance(event, TokenOdds):
                    yield event
        if not gate.holding:
            for piece in visible.flush():
                yield piece
            if reply is not None:  # no call started: a plain answer, all of it shown already
                yield Reply(gate.buffer, [], [], reply.raw or reply.text, reply.finish_reason)
            return
        prose = gate.buffer[: gate.released]
        raw = gate.buffer
        judged: CallGate | None = None
        # Only a call that opens the answer is weighed: prose before it shows intent.
        if not prose.strip() and getattr(self.inner, "reports_token_odds", False):
            odds = await self._odds_of_a_call(history, options)
            judged = CallGate(odds, self.min_call_odds, self.bar_source)
            raw += f"\n[odds of a call: {odds:.2f}]"
            if not judged.passed:
                answer = self._plain_answer(messages, tools, options, raw, judged)
                async for event in answer:
                    yield event
                return
        budget = max(options.max_tokens or 0, CALL_TOKEN_BUDGET)
        schema = call_schema(tools, first=named.group(1) if named else None)
        constrained = replace(options, json_schema=schema, max_tokens=budget, phase="constrained")
        forced_text: list[str] = []
        async with aclosing(self.inner.stream(history, [], constrained)) as forced:
            async for event in forced:
                if isinstance(event, TextChunk):
                    forced_text.append(event.text)
                elif isinstance(event, Reply):
                    parsed_answer = parse_answer(event.text or "".join(forced_text), known)
                    found = split_calls(checked_call(n, a) for n, a in parsed_answer.calls)
                    yield Reply(
                        prose.rstrip(),
                        found[0],
                        [*found[1], *parsed_answer.broken],
                        raw=f"{raw}\n[constrained]\n{event.raw or event.text}",
                        finish_reason=event.finish_reason,
                        gate=judged,
                    )
                elif not isinstance(event, (ThinkingChunk, TokenOdds)):
                    yield event

    @property
    def keeps_prefix(self) -> bool:
        """Whether answers that may not call keep the tool prompt (the backend takes a
        grammar that forbids a call): the server reuses its cached prompt."""
        return self.keep_prefix and bool(getattr(self.inner, "takes_grammar", False))

    async def _plain_answer(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool],
        options: RequestOptions,
        raw: str,
        judged: CallGate | None,
    ) -> AsyncGenerator[ProviderEvent, None]:
        """The answer in text, for a call the model was unsure of or a step whose tools
        were withdrawn. All of it is text, shown as it streams, even JSON: no call can come
        of it. After withdrawn tools, where the backend can forbid a call, the prompt keeps
        the tools (the prefix the server has cached: 89% of it reused against 38%). After
        an unsure call the tools are left out: kept and forbidden, the model echoed the
        request or explained how to call the tool instead of answering (bench/
        prompt_economy.py), and that prompt is short (47 tokens) anyway."""
        # After an unsure call it is a later part of the step; after withdrawn tools, a step.
        phase = "plain" if judged is not None else options.phase
        plain_options = replace(options, phase=phase, withdrawn_tools=())
        if self.keeps_prefix and tools and judged is None:
            history = emulated_history(messages, tools, calls_allowed=False)
            plain_options = replace(plain_options, grammar=NO_CALL_GRAMMAR)
        else:
            history = emulated_history(messages, [])
        plain = self.inner.stream(history, [], plain_options)
        visible = VisibleText(hold_calls=False)
        async with aclosing(plain) as answer:
            async for event in answer:
                if isinstance(event, TextChunk):
                    for piece in visible.feed(event.text):
                        yield piece
                elif isinstance(event, Reply):
                    for piece in visible.flush():
                        yield piece
                    text, _ = strip_thinking(event.text)
                    raw_all = f"{raw}\n[plain]\n{event.raw}" if raw else event.raw
                    yield Reply(text, [], [], raw_all, event.finish_reason, judged)
                elif not isinstance(event, TokenOdds):
                    yield event
