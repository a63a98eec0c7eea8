"""The requests the call gate asks for (see `gate`), made against the backend: a one-token
probe, the calls under the grammar, and the free answer's opening read without showing it
(what calibration reads). The chat's track streams the free answer itself."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Any

from referencing.exceptions import Unresolvable

from desktop.core.events import ProviderEvent, Reply, TextChunk, ThinkingChunk, TokenOdds
from desktop.core.messages import Message, ToolCall
from desktop.core.providers.base import (
    Aside,
    Constrained,
    Probe,
    Provider,
    RequestOptions,
    checked_call,
    split_calls,
)
from desktop.core.schemas import validator
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.gate import ConstrainedCalls, Free, Odds, Opened
from desktop.core.tracks.holdback import ProseGate, VisibleText
from desktop.core.tracks.licence import Licence, Refusal
from desktop.core.tracks.odds import arguments_odds, call_odds
from desktop.core.tracks.parse import match_json_end, parse_answer
from desktop.core.tracks.step_calls import call_schema

# Tokens the constrained phase may use whatever the request's limit: a call cut short
# cannot run, so a tight limit meant for prose must not cut a call.
CALL_TOKEN_BUDGET = 1024
_FIRST_NAME = re.compile(r'"name"\s*:\s*"([^"\\]*)"')
_LEADING_NAME = re.compile(r'\{\s*"name"\s*:\s*"([^"\\]*)"')
# How far past the start of a call the free answer is read for the first call's name (and
# how much prose calibration reads before it takes the answer for prose).
NAME_LOOKAHEAD = 300
# How far past its start a call is read whole from the free answer (`Free.read_whole`); a
# longer one is written under the grammar instead, as any other.
WHOLE_CALL_LOOKAHEAD = 2000
# A call whose last this-many characters it has written twice before goes round in circles
# (a model repeating a few made-up arguments): it would only ever reach the lookahead.
REPEATED_STRETCH = 48
# How long a call under the grammar must be before a repeated stretch stops it: a shorter
# one may mean it (a list of zeros in code, "1 + 1 + ..."); a circle runs to the budget.
CIRCLING_LENGTH = 1000
CIRCLING = "The call went round in circles, the same arguments over and over, and was stopped."


@dataclass
class ListItems:
    """The items of a JSON list as it streams, each given once it is complete: the calls
    written so far, judged before the rest are written. The text is the grammar's, so it is
    well formed; only strings and nesting need tracking."""

    text: str = ""
    _depth: int = 0
    _quoted: bool = False
    _escaped: bool = False
    _start: int | None = None

    def opening(self, limit: int) -> str:
        """The first `limit` characters of the item being written (empty between items):
        read on every token, so never the whole of a long one."""
        return "" if self._start is None else self.text[self._start : self._start + limit]

    def circling(self, prompt: str) -> bool:
        """Whether the item being written, past `CIRCLING_LENGTH`, goes round in circles
        (`repeats_itself`) with a stretch the `prompt` does not hold (a copy of a list the
        person gave is no circle): under the grammar, greedy, it would only ever reach the
        token budget."""
        if self._start is None or len(self.text) - self._start < CIRCLING_LENGTH:
            return False
        item = self.text[self._start :]
        return repeats_itself(item) and item[-REPEATED_STRETCH:] not in prompt

    def feed(self, chunk: str) -> list[str]:
        done: list[str] = []
        at = len(self.text)
        self.text += chunk
        for i, char in enumerate(chunk, start=at):
            if self._quoted:
                if self._escaped:
                    self._escaped = False
                elif char == "\\":
                    self._escaped = True
                elif char == '"':
                    self._quoted = False
            elif char == '"':
                self._quoted = True
            elif char in "{[":
                self._depth += 1
                if self._depth == 2:
                    self._start = i
            elif char in "}]":
                if self._depth == 2 and self._start is not None:
                    done.append(self.text[self._start : i + 1])
                    self._start = None
                self._depth -= 1
        return done


def _judged(items: list[str], judge: Licence, accepted: list[str], refused: list[Refusal]) -> bool:
    """Each complete call goes to `accepted` until one is refused (to `refused`); whether
    one was. A call made before in the turn is passed over: the list may go on to a new
    one (the result it had read asked for it)."""
    for item in items:
        refusal = _refused(item, judge)
        if refusal is None:
            accepted.append(item)
            continue
        refused.append(refusal)
        if refusal.reason.kind != "made_before":
            return True
    return False


def _refused_by_name(opening: str, judge: Licence) -> Refusal | None:
    """The call being written, refused once it has named a tool the licence refuses by
    name alone (the grammar writes the name first)."""
    named = _LEADING_NAME.match(opening)
    why = judge.by_name.get(named.group(1)) if named else None
    return Refusal(why) if why else None


def _refused(item: str, judge: Licence) -> Refusal | None:
    """Why a complete call is not the person's (None: it is, or it is no call at all)."""
    try:
        call = json.loads(item)
    except (ValueError, RecursionError):  # nested past the parser's depth: validation's
        return None
    if not isinstance(call, dict) or not isinstance(call.get("arguments"), dict):
        return None
    written = ToolCall("", str(call.get("name")), call["arguments"])
    why = judge.refusal(written)
    return None if why is None else Refusal(why, written)


def first_name(gate: ProseGate) -> tuple[bool, str | None]:
    """Whether the free answer, held from where a call begins, has read far enough: the
    call named its tool (which it returns as written) or went on past the lookahead."""
    named = _FIRST_NAME.search(gate.buffer, gate.released)
    if named:
        return True, named.group(1)
    return len(gate.buffer) - gate.released > NAME_LOOKAHEAD, None


def whole_call(gate: ProseGate, tool: ToolSpec) -> tuple[bool, ToolCall | None]:
    """Whether the free answer's first call (to the offered `tool`) has been read to its
    end, past the lookahead or round in circles, and the call as written, where it closed
    whole and is one the grammar could write (`grammar_writes`)."""
    start = gate.buffer.find("{", gate.released)
    end = match_json_end(gate.buffer, start) if start >= 0 else None
    if end is None:
        circling = start >= 0 and repeats_itself(gate.buffer[start:])
        return circling or len(gate.buffer) - gate.released > WHOLE_CALL_LOOKAHEAD, None
    for _, arguments in parse_answer(gate.buffer[start:end]).calls[:1]:
        if grammar_writes(tool, arguments):
            return True, ToolCall("", tool.name, arguments)
    return True, None


def repeats_itself(text: str) -> bool:
    """Whether the text's last `REPEATED_STRETCH` characters were written twice before
    it: text going round in circles, not a call copying its request."""
    if len(text) < REPEATED_STRETCH:
        return False
    tail = text[-REPEATED_STRETCH:]
    before = len(text) - REPEATED_STRETCH
    first = text.find(tail)
    return first < before and 0 <= text.find(tail, first + 1) < before


def grammar_writes(tool: ToolSpec, arguments: Any) -> bool:
    """Whether the schema's grammar could write these arguments: the call written freely
    is then the one it would write at temperature 0. One with an argument outside the
    schema ("result": 12 beside the expression) or of another shape would be written
    otherwise, and judged as written it would not be the call made."""
    if not isinstance(arguments, dict) or tool.outside(arguments):
        return False
    try:
        return bool(validator(tool.parameters).is_valid(arguments))
    except (Unresolvable, RecursionError):
        return False


async def probe(
    inner: Provider, history: list[Message], options: RequestOptions, part: Probe
) -> Odds:
    """The odds that the answer opens a call, and whether its likeliest first token does
    (what the free answer, at temperature 0, would open with)."""
    aside: Aside | None = "turn alone" if part.alone else None
    asked = replace(options, max_tokens=1, top_logprobs=10, part=part, aside=aside)
    alternatives: tuple[tuple[str, float], ...] | None = None
    token = ""
    async with aclosing(inner.stream(history, [], asked)) as answer:
        async for event in answer:  # read to the end: one token, then its usage
            if isinstance(event, TokenOdds) and alternatives is None:
                alternatives = event.alternatives
            elif isinstance(event, Reply):
                token = event.text
    if not alternatives:
        return Odds(1.0, True)  # no odds after all: trust the call
    likeliest = max(alternatives, key=lambda pair: pair[1])
    return Odds(call_odds(alternatives), call_odds([likeliest]) > 0, token)


async def constrained_calls(
    inner: Provider,
    history: list[Message],
    tools: Sequence[ToolSpec],
    options: RequestOptions,
    part: Constrained,
    known: Sequence[str],
    judge: Licence | None = None,
) -> ConstrainedCalls:
    """The step's calls written under the backend's grammar (the first pinned to the tool
    the free answer named); weighed, the tokens' odds are asked for and the arguments'
    odds returned. A call's values are copied from the request, not composed: they are
    written greedily whatever the chat's temperature.

    A call that goes round in circles is stopped there, broken, as the token budget would
    have cut it (greedy, it never leaves the circle), without waiting for the budget.

    With a `judge`, the writing stops at the first call it refuses: the calls are the ones
    before it. A model that lists made-up calls lists several, each costing its tokens. A
    call refused by its tool's name alone stops the writing at the name; where it was the
    first, nothing was weighed (no arguments' odds)."""
    budget = max(options.max_tokens or 0, CALL_TOKEN_BUDGET)
    asked = replace(
        options, json_schema=call_schema(tools, first=part.first), max_tokens=budget,
        part=part, top_logprobs=1 if part.weigh else None, temperature=0.0,
        aside="turn alone" if part.alone else None,
    )  # fmt: skip
    text: list[str] = []
    chosen: list[tuple[str, float]] = []
    passed_on: list[ProviderEvent] = []
    reply: Reply | None = None
    items, accepted, refused = ListItems(), list[str](), list[Refusal]()
    unweighed = False  # the first call was refused at its name: no arguments were written
    circled = False
    prompt = "\n".join(m.text for m in history)
    async with aclosing(inner.stream(history, [], asked)) as forced:
        async for event in forced:
            if isinstance(event, TextChunk):
                text.append(event.text)
                done = items.feed(event.text)
                if judge is not None and _judged(done, judge, accepted, refused):
                    break
                if circled := items.circling(prompt):
                    break
                early = None
                if judge is not None and judge.by_name:
                    early = _refused_by_name(items.opening(NAME_LOOKAHEAD), judge)
                if early is not None:
                    refused.append(early)
                    unweighed = not accepted
                    break
            elif isinstance(event, TokenOdds):
                if event.chosen is not None:
                    chosen.append(event.chosen)
            elif isinstance(event, Reply):
                reply = event
            elif not isinstance(event, ThinkingChunk):
                passed_on.append(event)
    written = (reply.text if reply else "") or "".join(text)
    if refused:
        written = f"[{', '.join(accepted)}]"
    parsed = parse_answer(written, known)
    calls, broken = split_calls(checked_call(n, a) for n, a in parsed.calls)
    cut = [replace(b, reason=CIRCLING) if circled else b for b in parsed.broken]
    finish = "length" if circled else "stop" if refused else None
    return ConstrainedCalls(
        calls,
        [*broken, *cut],
        (reply.raw or reply.text) if reply else "".join(text),
        reply.finish_reason if reply else finish,
        arguments_odds(chosen) if part.weigh and not unweighed else None,
        passed_on,
        refused,
    )


async def read_opening(
    inner: Provider, history: list[Message], options: RequestOptions, ask: Free
) -> Opened:
    """How the free answer opens, read without showing it and no further than the gate
    needs: until a call names its tool, the first word of held prose, or plenty of prose
    (which is then the answer)."""
    visible = VisibleText()
    gate = visible.gate
    named: str | None = None
    thought = False
    asked = replace(options, temperature=0) if ask.greedy else options
    async with aclosing(inner.stream(history, [], asked)) as free:
        async for event in free:
            thought = thought or isinstance(event, ThinkingChunk)
            if not isinstance(event, TextChunk):
                continue
            for piece in visible.feed(event.text):
                thought = thought or isinstance(piece, ThinkingChunk)
            if gate.holding:
                done, named = first_name(gate)
                if done:
                    break
            else:
                held = ask.hold_prose and not thought and gate.buffer[: gate.released].strip()
                if held or len(gate.buffer.strip()) > NAME_LOOKAHEAD:
                    break
    if gate.holding:
        return Opened(True, named, gate.buffer[: gate.released], thought)
    return Opened(False, None, gate.buffer, thought)
