"""The emulated track in two phases: calls asked again under constrained decoding, and
the call gate that turns a call the model was unsure of into a plain answer."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Literal

from desktop.core.events import (
    BrokenCall,
    CallGate,
    ProviderEvent,
    Reply,
    TextChunk,
    ThinkingChunk,
    TokenOdds,
    UsageReport,
)
from desktop.core.messages import Message, ToolCall
from desktop.core.providers.base import (
    Provider,
    ProviderWrapper,
    RequestOptions,
    checked_call,
    split_calls,
)
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.emulated import calls_from_text, known_names
from desktop.core.tracks.holdback import VisibleText, relay, strip_thinking
from desktop.core.tracks.odds import arguments_odds, call_odds
from desktop.core.tracks.parse import parse_answer
from desktop.core.tracks.prompt import emulated_history, split_turns
from desktop.core.tracks.step_calls import call_schema, offered_tool

# Tokens the constrained phase may use whatever the request's limit: a call cut short
# cannot run, so a tight limit meant for prose must not cut a call.
CALL_TOKEN_BUDGET = 1024
# The least probability the model must give to opening a call, where the backend reports
# token odds, for the call to be made; below it the model answers in plain text. Small
# models reach for a tool on nearly any request but hesitate on those no tool fits; how
# much they hesitate differs from model to model (and between quantisations of one), so
# each model's bar is measured by its calibration (calibration/). Until then the model's
# own first choice stands: no bar.
UNCALIBRATED_BAR = 0.0
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


@dataclass(frozen=True)
class ConstrainedCalls:
    """The calls of a step, written under the grammar."""

    calls: list[ToolCall]
    broken: list[BrokenCall]
    raw: str
    finish_reason: str | None
    arguments: float | None  # their arguments' odds, where the tokens' odds were asked for
    passed_on: list[ProviderEvent]  # usage and notices, for the caller to pass on

    @property
    def tokens(self) -> int:
        """The tokens written, as the backend reported them."""
        return sum(e.completion_tokens for e in self.passed_on if isinstance(e, UsageReport))


@dataclass(frozen=True)
class Opening:
    """How an answer opens: with a call or not, the tool named first, the odds of a call
    (None where they were not weighed: prose came first, or the backend gives none)."""

    call: bool
    tool: str | None
    odds: float | None
    # After earlier turns: the odds for the current turn asked alone (see `second_look`).
    alone: float | None = None
    # Where odds were weighed: the calls written under the grammar, with their arguments'
    # odds (see `arguments_odds`).
    written: ConstrainedCalls | None = None
    # After earlier turns, where the turn asked alone opens a call: its calls so written.
    alone_written: ConstrainedCalls | None = None


@dataclass(frozen=True)
class SecondLook:
    """The gate on the current turn asked alone (see `ConstrainedTools.second_look`), and
    the calls the turn alone wrote under the grammar where its arguments were weighed."""

    gate: CallGate
    written: ConstrainedCalls | None = None

    @property
    def calls(self) -> ConstrainedCalls | None:
        """The calls to make: the turn alone's, where its arguments carried the gate."""
        return self.written if self.gate.arguments_sure else None


def _first_request_step(messages: Sequence[Message]) -> bool:
    """A first request (no earlier turns), nothing answered in it yet (no call, no result)."""
    earlier, current = split_turns(messages)
    return not earlier and not any(m.role in ("assistant", "tool") for m in current)


class ConstrainedTools(ProviderWrapper):
    """The emulated track in two phases. The model answers freely, and its prose streams;
    the moment its answer starts a call, that generation is dropped and the calls are asked
    for again under the backend's constrained decoding, built from the tool schemas.
    Plain answers are never constrained. A backend without constrained decoding gets the
    tolerant parser of the plain emulated track.

    Where the backend reports token odds, a call that opens the answer is made only if the
    model was sure of it (`min_call_odds`, the model's calibrated bar): a one-token probe
    of the same prompt, which the server's cache makes nearly free, tells how sure.
    Otherwise it answers in plain text. The reply says how the gate judged (`Reply.gate`).

    A request after earlier turns has a bar of its own (`later_call_odds`): there a model
    opens its calls less surely (the bundled model's best bar on the BFCL set was 0.90 for
    a first request and 0.54 after four earlier turns), so one bar fits one or the other.
    How much less surely depends on what the earlier turns were, which no calibration can
    foresee; so a call that fails the later bar gets a second look, the current turn asked
    alone and judged as a first request, by its bars (`second_look`), and so does an answer
    that opens in prose there (`looks_again_at_prose`).

    A first request's call still under its bar is written under the grammar all the same,
    with the odds of its tokens, where the model has a bar for its arguments
    (`min_arguments_odds`): a model sure of its arguments copied them from the request,
    which a model reaching for a tool that does not fit cannot do (see `arguments_odds`).
    Sure enough, the call is made.

    Whether a repeated call may run is the deduplicator's to say, in the loop.
    """

    def __init__(
        self,
        inner: Provider,
        *,
        min_call_odds: float = UNCALIBRATED_BAR,
        bar_source: str = "uncalibrated",
        keep_prefix: bool = True,
        greedy_calls: bool = True,
        greedy_opening: bool = True,
        later_call_odds: float | None = None,
        min_arguments_odds: float | None = None,
    ) -> None:
        super().__init__(inner)
        self.min_call_odds = min_call_odds
        self.later_call_odds = min_call_odds if later_call_odds is None else later_call_odds
        self.min_arguments_odds = min_arguments_odds
        self.bar_source = bar_source
        self.keep_prefix = keep_prefix  # False only to measure what keeping it saves
        self.greedy_calls = greedy_calls  # False only to measure what sampled calls cost
        self.greedy_opening = greedy_opening  # False only to measure what it changes

    def bar_for(self, messages: Sequence[Message]) -> tuple[float, str]:
        """The bar that judges this request's calls, and where it came from: the first
        request's, or the one after earlier turns."""
        if split_turns(messages)[0]:
            later = "" if self.bar_source == "uncalibrated" else ", after earlier turns"
            return self.later_call_odds, f"{self.bar_source}{later}"
        return self.min_call_odds, self.bar_source

    def second_look_bar(self, messages: Sequence[Message]) -> tuple[float, str] | None:
        """The bar a second look at this request's call is judged by, and its source:
        the first request's, for a request after earlier turns; None for a first one."""
        if not split_turns(messages)[0]:
            return None
        return self.min_call_odds, f"{self.bar_source}, the turn alone"

    def weighs_arguments(self, messages: Sequence[Message]) -> bool:
        """Whether a call under its bar is judged by its arguments: where the model has a
        bar for them, on the first step of a first request. A model copies values it has
        seen as surely as values from the request: asked "Did it work?" after a call, the
        bundled model wrote that call again with arguments' odds of 0.94-1.0, and right
        after a result it writes the call that produced it again. After earlier turns the
        second look judges, weighing the turn alone's arguments (no earlier turn there to
        copy from); after a result, the bar alone."""
        return self.min_arguments_odds is not None and _first_request_step(messages)

    def looks_again_at_prose(self, messages: Sequence[Message]) -> bool:
        """Whether an answer that opens in prose gets a second look: a turn's first step
        after earlier turns, with a calibrated bar and odds to weigh. Deep in a chat the
        bundled model answered in prose where a call was due (9 of 20 `multiple` cases
        after four turns, bench/accuracy.py --history 4), asked alone it called; so its
        prose is held until the turn asked alone is judged by the first request's bar."""
        return self.min_call_odds > 0 and self._may_look_again(messages)

    def _may_look_again(self, messages: Sequence[Message]) -> bool:
        """A turn's first step after earlier turns, on a backend that reports odds."""
        return (
            self.features.reports_token_odds
            and bool(messages)
            and messages[-1].role == "user"
            and self.second_look_bar(messages) is not None
        )

    async def second_look(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
        first: str | None = None,
        *,
        always_weigh: bool = False,
    ) -> SecondLook | None:
        """The gate on the current turn without the earlier ones (None for a first
        request): as sure as the request makes the model by itself, against the first
        request's bar. One more one-token probe, whose prompt is the tool prompt the server
        has cached plus the turn.

        The turn alone is a first request, and is judged as one: where it would open a
        call under the bar, its calls are written under the grammar (the first pinned to
        `first`, the tool the answer named) and their arguments weighed against the
        arguments' bar. Judged by odds alone, the calls their arguments carry on a first
        request were lost deep in a chat: the bundled model after four turns scored 12 of
        20 `multiple` cases that way, 15 so (all: 75 and 78 of 110; bench/accuracy.py
        --history 4). `always_weigh`: whatever the bar (calibration, which chooses the
        bars afterwards)."""
        bar = self.second_look_bar(messages)
        if bar is None:
            return None
        current = split_turns(messages)[1]
        alone = emulated_history(current, tools)
        odds, opens = await self._probe(alone, options)
        gate = CallGate(odds, *bar)
        weigh = always_weigh or (not gate.passed and self.min_arguments_odds is not None)
        # After a result in this turn the model writes the call that made it again, surely.
        if not (opens and weigh and _first_request_step(current)):
            return SecondLook(gate)
        known = known_names(current, tools)
        written = await self._constrained_calls(alone, tools, options, first, known, weigh=True)
        gate = replace(gate, arguments=written.arguments, arguments_bar=self.min_arguments_odds)
        return SecondLook(gate, written)

    async def _greedy_opening(
        self, history: list[Message], options: RequestOptions
    ) -> tuple[float, bool] | None:
        """Where the answer is sampled, whether it opens a call is decided as at temperature
        0: the odds of a call and whether the likeliest first token opens one (the free
        answer is then greedy up to the call's name; else it is sampled as asked, and a
        call it opens all the same is judged by these odds). None where nothing was asked.
        Sampled at the server's 0.8, the bundled model answered a chart request with "Mark
        the x and y axes." and no call (bench/sampled_calls.py). One token of the prompt
        the free answer then finds cached."""
        sampled = options.temperature is None or options.temperature > 0
        if not (self.greedy_opening and sampled and self.features.reports_token_odds):
            return None
        return await self._probe(history, options, phase="opening")

    async def _odds_of_a_call(self, history: list[Message], options: RequestOptions) -> float:
        return (await self._probe(history, options))[0]

    async def _probe(
        self,
        history: list[Message],
        options: RequestOptions,
        phase: Literal["opening", "call-odds"] = "call-odds",
    ) -> tuple[float, bool]:
        """The odds that the answer opens a call, and whether its likeliest first token
        does (what the free answer, at temperature 0, would open with)."""
        probe = replace(options, max_tokens=1, top_logprobs=10, phase=phase)
        alternatives: tuple[tuple[str, float], ...] | None = None
        async with aclosing(self.inner.stream(history, [], probe)) as answer:
            async for event in answer:  # read to the end: one token, then its usage
                if isinstance(event, TokenOdds) and alternatives is None:
                    alternatives = event.alternatives
        if not alternatives:
            return 1.0, True  # no odds after all: trust the call
        likeliest = max(alternatives, key=lambda pair: pair[1])
        return call_odds(alternatives), call_odds([likeliest]) > 0

    async def opening(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
        *,
        measuring: bool,
    ) -> Opening:
        """How this step would open, read cheaply (for calibration): whether the answer
        opens a call, the tool it names first, and how sure the model was (1.0 where the
        backend reports no odds, or where prose comes first). Where the odds were weighed
        on a first request, the calls are written under the grammar too, for their
        arguments' odds; nothing else past the opening is generated.

        `measuring`: the bars are yet to be chosen from these answers (a calibration's
        first requests), so every such call is written; otherwise only where the stream
        would weigh its arguments: under this track's bar, with an arguments' bar (a
        calibration's questions after earlier turns, whose second look is judged by the
        first requests' bars)."""
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
            if not self._may_look_again(messages) or not gate.buffer.strip():
                return Opening(False, None, None)
            # Prose after earlier turns: how the turn asked alone would open (the stream's
            # second look; its call would name this tool).
            alone = await self.opening(
                split_turns(messages)[1], tools, options, measuring=measuring
            )
            if not alone.call:
                return Opening(False, alone.tool, None)
            return Opening(False, alone.tool, None, alone.odds, alone_written=alone.written)
        tool = offered_tool(named.group(1), tools) if named else None
        if named and tool is None:
            return Opening(False, None, None)  # the stream answers such a call in text
        sure = not gate.buffer[: gate.released].strip() and self.features.reports_token_odds
        if not sure:
            return Opening(True, tool, None)
        odds = await self._odds_of_a_call(history, options)
        if not _first_request_step(messages):  # arguments are weighed there only
            looked = await self.second_look(messages, tools, options, tool, always_weigh=measuring)
            if looked is None:
                return Opening(True, tool, odds)
            return Opening(True, tool, odds, looked.gate.odds, alone_written=looked.written)
        passed = CallGate(odds, *self.bar_for(messages)).passed
        if not measuring and (passed or not self.weighs_arguments(messages)):
            return Opening(True, tool, odds)  # the bar alone judges it, as in the stream
        known = known_names(messages, tools)
        written = await self._constrained_calls(history, tools, options, tool, known, weigh=True)
        return Opening(True, tool, odds, None, written)

    async def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
    ) -> AsyncGenerator[ProviderEvent, None]:
        if not tools and options.withdrawn_tools and self.keeps_prefix:
            # The turn's last step: its tools stay in the prompt, calls are forbidden.
            withdrawn = options.withdrawn_tools
            answer = self._plain_answer(messages, withdrawn, options, keep_tools=True)
            async for event in answer:
                yield event
            return
        known = known_names(messages, tools)
        history = emulated_history(messages, tools)
        if not tools or not self.features.constrains_json:
            async with aclosing(
                calls_from_text(self.inner.stream(history, [], options), known)
            ) as plain:
                async for event in plain:
                    yield event
            return
        visible = VisibleText()
        gate = visible.gate
        replies: list[Reply] = []
        named: re.Match[str] | None = None  # the first call's tool, once the call names it
        looking = self.looks_again_at_prose(messages)
        held: list[ProviderEvent] = []  # prose not shown until the second look has judged

        def call_named() -> bool:
            """A call begins and names its tool: the free answer stops there. Where prose
            gets a second look, it stops at the prose's first word too."""
            nonlocal named
            if not gate.holding:
                return looking and bool(gate.buffer[: gate.released].strip())
            named = _FIRST_NAME.search(gate.buffer, gate.released)
            return bool(named) or len(gate.buffer) - gate.released > _NAME_LOOKAHEAD

        probed = await self._greedy_opening(history, options)
        greedy = probed is not None and probed[1]
        free_options = replace(options, temperature=0) if greedy else options
        free = relay(self.inner.stream(history, [], free_options), visible, replies, call_named)
        async with aclosing(free) as shown:
            async for event in shown:
                # A model that thought first chose its prose: no second look (nor a second
                # round of thinking).
                looking = looking and not isinstance(event, ThinkingChunk)
                if looking and isinstance(event, TextChunk):
                    held.append(event)
                else:
                    yield event
        opened_in_prose = looking and not gate.holding and bool(gate.buffer.strip())
        looked = await self.second_look(messages, tools, options) if opened_in_prose else None
        judged: CallGate | None = None
        written: ConstrainedCalls | None = None
        if looked is not None:
            judged = looked.gate
            raw = f"{gate.buffer}\n[prose; odds of a call, the turn alone: {judged.odds:.2f}]"
            raw += _weighed_alone(looked)
            if not judged.passed:  # prose it is: asked again, shown as it streams
                answer = self._plain_answer(
                    messages, tools, options, keep_tools=True, raw=raw, judged=judged,
                    reason="the call gate said no call, for the turn alone",
                )  # fmt: skip
                async for event in answer:
                    yield event
                return
            prose = ""  # a call after all; the prose it opened with is not shown
            written = looked.calls
        else:
            for event in held:
                yield event
            if not gate.holding:
                for piece in visible.flush():
                    yield piece
                if replies:  # no call started: a plain answer, all of it shown already
                    reply = replies[-1]
                    yield Reply(gate.buffer, [], [], reply.raw or reply.text, reply.finish_reason)
                return
            prose = gate.buffer[: gate.released]
            raw = gate.buffer
        first = offered_tool(named.group(1), tools) if named else None
        if named and first is None:
            # A call to a tool that is not there: no offered tool fits, so the answer is
            # text (pinned to nothing, the constrained phase would pick some real tool).
            raw += f"\n[the call names {named.group(1)!r}, which is not an offered tool]"
            answer = self._plain_answer(
                messages, tools, options, keep_tools=False, raw=raw, shown=prose,
                reason=f"the call named {named.group(1)!r}, which is not an offered tool",
            )  # fmt: skip
            async for event in answer:
                yield event
            return
        # Only a call that opens the answer is weighed: prose before it shows intent.
        if judged is None and not prose.strip() and self.features.reports_token_odds:
            odds = await self._odds_of_a_call(history, options) if probed is None else probed[0]
            judged = CallGate(odds, *self.bar_for(messages))
            raw += f"\n[odds of a call: {odds:.2f}]"
        if judged is not None and not judged.passed:
            if self.weighs_arguments(messages):
                # Its arguments may make it pass: written now, while the server has this
                # prompt cached (a second look would evaluate another one).
                written = await self._constrained_calls(
                    history, tools, options, first, known, weigh=True
                )
                raw += f"\n[constrained]\n{written.raw}"
            looked = await self.second_look(messages, tools, options, first)
            if looked is not None:
                raw += f"\n[odds of a call, the turn alone: {looked.gate.odds:.2f}]"
                raw += _weighed_alone(looked)
                if looked.gate.passed:
                    judged, written = looked.gate, looked.calls
            if not judged.passed and written is not None:
                judged = replace(
                    judged, arguments=written.arguments, arguments_bar=self.min_arguments_odds
                )
                sure = "none" if written.arguments is None else f"{written.arguments:.2f}"
                raw += f"\n[odds of its arguments: {sure}]"
            if not judged.passed:
                reason = "the call gate said no call"
                if written is not None:
                    reason += ", nor were its arguments sure"
                answer = self._plain_answer(
                    messages, tools, options, keep_tools=False, raw=raw, judged=judged,
                    reason=reason,
                )  # fmt: skip
                async for event in answer:
                    yield event
                return
        if written is None:
            written = await self._constrained_calls(
                history, tools, options, first, known, weigh=False
            )
            raw += f"\n[constrained]\n{written.raw}"
        for event in written.passed_on:
            yield event
        yield Reply(
            prose.rstrip(),
            written.calls,
            written.broken,
            raw=raw,
            finish_reason=written.finish_reason,
            gate=judged,
        )

    async def _constrained_calls(
        self,
        history: list[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
        first: str | None,
        known: Sequence[str],
        *,
        weigh: bool,
    ) -> ConstrainedCalls:
        """The step's calls written under the backend's grammar (the first pinned to the
        tool the free answer named); with `weigh`, the tokens' odds are asked for and the
        arguments' odds returned."""
        budget = max(options.max_tokens or 0, CALL_TOKEN_BUDGET)
        schema = call_schema(tools, first=first)
        # A call's values are copied from the request, not composed: written at the chat's
        # temperature they only came out wrong more often (bench/sampled_calls.py).
        temperature = 0.0 if self.greedy_calls else options.temperature
        constrained = replace(
            options, json_schema=schema, max_tokens=budget, phase="constrained",
            top_logprobs=1 if weigh else None, temperature=temperature,
        )  # fmt: skip
        text: list[str] = []
        chosen: list[tuple[str, float]] = []
        passed_on: list[ProviderEvent] = []
        reply: Reply | None = None
        async with aclosing(self.inner.stream(history, [], constrained)) as forced:
            async for event in forced:
                if isinstance(event, TextChunk):
                    text.append(event.text)
                elif isinstance(event, TokenOdds):
                    if event.chosen is not None:
                        chosen.append(event.chosen)
                elif isinstance(event, Reply):
                    reply = event
                elif not isinstance(event, ThinkingChunk):
                    passed_on.append(event)
        written = (reply.text if reply else "") or "".join(text)
        parsed = parse_answer(written, known)
        calls, broken = split_calls(checked_call(n, a) for n, a in parsed.calls)
        return ConstrainedCalls(
            calls,
            [*broken, *parsed.broken],
            (reply.raw or reply.text) if reply else written,
            reply.finish_reason if reply else None,
            arguments_odds(chosen) if weigh else None,
            passed_on,
        )

    @property
    def keeps_prefix(self) -> bool:
        """Whether answers that may not call keep the tool prompt (the backend takes a
        grammar that forbids a call): the server reuses its cached prompt."""
        return self.keep_prefix and self.features.takes_grammar

    async def _plain_answer(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
        *,
        keep_tools: bool,
        raw: str = "",
        judged: CallGate | None = None,
        reason: str | None = None,
        shown: str = "",
    ) -> AsyncGenerator[ProviderEvent, None]:
        """The answer in text, for a call the model was unsure of or that named no offered
        tool, or a step whose tools were withdrawn. All of it is text, shown as it streams,
        even JSON: no call can come of it. After withdrawn tools, where the backend can
        forbid a call, the prompt keeps the tools (`keep_tools`: the prefix the server has
        cached, 89% of it reused against 38%). After an unsure call the tools are left out:
        kept and forbidden, the model echoed the request or explained how to call the tool
        instead of answering (bench/prompt_economy.py), and that prompt is short (47
        tokens) anyway. An answer that opened in prose, whose second look found no call,
        is asked again with the prompt it opened with, calls forbidden.

        `reason` says why a later part of the step answers in text (for the trace); without
        one, the answer is a step of its own (the last, tool-free one). `shown` is prose of
        the step's free answer that was already shown: the answer's text goes on from it."""
        phase = "plain" if reason else options.phase
        plain_options = replace(options, phase=phase, reason=reason, withdrawn_tools=())
        if self.keeps_prefix and tools and keep_tools:
            history = emulated_history(messages, tools, calls_allowed=False)
            plain_options = replace(plain_options, grammar=NO_CALL_GRAMMAR)
        else:
            history = emulated_history(messages, [])
        visible = VisibleText(hold_calls=False)
        replies: list[Reply] = []
        plain = relay(self.inner.stream(history, [], plain_options), visible, replies)
        async with aclosing(plain) as answer:
            async for event in answer:
                yield event
        for piece in visible.flush():
            yield piece
        for reply in replies[-1:]:
            text, _ = strip_thinking(reply.text)
            raw_all = f"{raw}\n[plain]\n{reply.raw}" if raw else reply.raw
            yield Reply(f"{shown}{text}", [], [], raw_all, reply.finish_reason, judged)


def _weighed_alone(looked: SecondLook) -> str:
    """For the raw output: the calls the turn alone wrote, and their arguments' odds."""
    if looked.written is None:
        return ""
    sure = "none" if looked.gate.arguments is None else f"{looked.gate.arguments:.2f}"
    return f"\n[constrained, the turn alone]\n{looked.written.raw}\n[odds of its arguments: {sure}]"
