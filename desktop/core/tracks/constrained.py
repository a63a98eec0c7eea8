"""The emulated track in two phases: the model answers freely and its prose streams; the
moment its answer starts a call, the calls are asked for again under the backend's
constrained decoding, built from the tool schemas. Plain answers are never constrained.
Where the backend reports token odds, the call gate (`gate.decide`) judges whether a call
is made at all; this module drives it against the backend and carries out its decision.
A backend without constrained decoding gets the tolerant parser of the plain emulated
track."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from dataclasses import replace
from typing import assert_never

from desktop.core.events import (
    GateRecord,
    ProviderEvent,
    Reply,
    TextChunk,
    ThinkingChunk,
)
from desktop.core.messages import Message, ToolCall
from desktop.core.providers.base import (
    ASIDES,
    Constrained,
    Probe,
    Provider,
    ProviderWrapper,
    RequestOptions,
)
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.asking import constrained_calls, first_name, probe, whole_call
from desktop.core.tracks.bars import Bars
from desktop.core.tracks.emulated import calls_from_text, known_names
from desktop.core.tracks.free_answer import FreeAnswer, continued, continuing
from desktop.core.tracks.gate import (
    Answer,
    Call,
    ConstrainedCalls,
    Decision,
    Free,
    Gate,
    Opened,
    Plain,
    Spoken,
    decide,
)
from desktop.core.tracks.holdback import VisibleText, relay
from desktop.core.tracks.licence import Licence
from desktop.core.tracks.persons_calls import persons_calls
from desktop.core.tracks.prompt import emulated_history, first_step_prompts, split_turns
from desktop.core.tracks.step_calls import offered_tool
from desktop.core.tracks.text_answer import in_words, text_answer
from desktop.core.tracks.tool_forms import ToolForm
from desktop.core.tracks.words_ahead import WordsAhead


class ConstrainedTools(ProviderWrapper):
    """The emulated track, gated by the model's calibrated `bars` (none until calibrated)."""

    def __init__(self, inner: Provider, bars: Bars | None = None, form: ToolForm = "json") -> None:
        super().__init__(inner)
        self.bars = bars or Bars()
        self.form = form  # how the tool prompt lists the tools (calibration's choice)

    def bar_for(self, messages: Sequence[Message]) -> tuple[float, str]:
        """The bar that judges this request's calls, and where it came from."""
        return self.bars.for_request(messages)

    @property
    def keeps_prefix(self) -> bool:
        """Whether answers that may not call keep the tool prompt (the backend takes a
        grammar that forbids a call): the server reuses its cached prompt."""
        return self.features.takes_grammar

    async def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
    ) -> AsyncGenerator[ProviderEvent, None]:
        if options.warm_up and tools:  # the next turn's prompts (`desktop.core.warm_up`)
            slots = self.inner.capabilities.slots
            for history, aside in first_step_prompts(messages, tools, self.form, slots):
                read = self.inner.stream(history, [], replace(options, aside=aside))
                async with aclosing(read) as events:
                    async for event in events:
                        yield event
            return
        if not tools and options.withdrawn_tools and self.keeps_prefix:
            # The turn's last step: its tools stay in the prompt, calls are forbidden.
            last = text_answer(self.inner, messages, options.withdrawn_tools, options,
                               form=self.form, keep_tools=True)  # fmt: skip
            async for event in last:
                yield event
            return
        known = known_names(messages, tools)
        history = emulated_history(messages, tools, form=self.form)
        if not tools or not self.features.constrains_json:
            async with aclosing(
                calls_from_text(self.inner.stream(history, [], options), known)
            ) as plain:
                async for event in plain:
                    yield event
            return
        sampled = options.temperature is None or options.temperature > 0
        judge = Licence.of(tools, messages, options.repeats_allowed)
        gate = decide(
            messages, tools, self.bars, odds_reported=self.features.reports_token_odds,
            sampled=sampled, licence=judge,
        )  # fmt: skip
        free = FreeAnswer()
        ahead = WordsAhead()
        driven = self._drive(gate, messages, tools, options, free, ahead, judge, history, known)
        try:
            async for event in driven:
                yield event
        finally:
            await free.close()
            await ahead.close()

    async def _drive(
        self,
        gate: Gate,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
        free: FreeAnswer,
        ahead: WordsAhead,
        judge: Licence,
        history: list[Message],
        known: Sequence[str],
    ) -> AsyncGenerator[ProviderEvent, None]:
        """The gate's asks made against the backend (the step's prompt as `history`), then
        its decision carried out. Where the free answer opens a call the gate may turn down
        as written (the request is about no offered tool, or a result came before), and the
        server has a slot for the answer in words, that answer is asked `ahead` of the
        verdict."""
        alone = split_turns(messages)[1]
        answer: Answer | None = None
        while True:
            try:
                ask = gate.send(answer) if answer is not None else next(gate)
            except StopIteration as done:
                decision: Decision = done.value
                break
            if isinstance(ask, Free) or not ask.alone:
                await free.close()  # the conversation's own slot is asked again
            match ask:
                case Probe():
                    asked = emulated_history(alone, tools, form=self.form) if ask.alone else history
                    answer = await probe(self.inner, asked, options, ask)
                case Constrained():
                    asked = emulated_history(alone, tools, form=self.form) if ask.alone else history
                    names = known_names(alone, tools) if ask.alone else known
                    answer = await constrained_calls(
                        self.inner, asked, tools, options, ask, names, judge
                    )
                case Free():
                    # Where the request is about a tool, the call it opens is likely made.
                    on_call = self._asks_ahead(messages, options, ahead) if ask.read_whole else None
                    async for event in self._free(history, tools, options, ask, free, on_call):
                        yield event
                    answer = free.opened
                case _:
                    assert_never(ask)
        if not isinstance(decision, Spoken):
            await free.close()
        if not isinstance(decision, Plain):
            await ahead.close()  # the gate did not turn the call down: nobody will read it
        carried = self._carry_out(
            decision, messages, tools, options, free, ahead, history, known, judge
        )
        async for event in carried:
            yield event

    def _asks_ahead(
        self, messages: Sequence[Message], options: RequestOptions, ahead: WordsAhead
    ) -> Callable[[], None] | None:
        """What asks the answer in words ahead of the verdict, where the server keeps it in
        a slot of its own (else it would push a prompt the gate reads out of the cache)."""
        if self.inner.capabilities.slots <= len(ASIDES):
            return None
        why = "asked ahead of the verdict, in case no call is made"
        return lambda: ahead.ask(lambda: self.inner.stream(*in_words(messages, options, why)))

    async def _free(
        self,
        history: list[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
        ask: Free,
        free: FreeAnswer,
        on_call: Callable[[], None] | None = None,
    ) -> AsyncGenerator[ProviderEvent, None]:
        """The free answer, its prose shown as it streams (held, where the second look
        may judge it), read until a call names its tool (or ends, for a tool the gate
        judges as written), or paused at the held prose's first word. `on_call` is
        called when it opens a call."""
        visible, gate = free.visible, free.visible.gate
        looking, thought = ask.hold_prose, False
        named: str | None = None
        whole: ToolCall | None = None

        def stop() -> bool:
            nonlocal named, whole
            if not gate.holding:
                return False
            if on_call is not None:
                on_call()
            done, named = first_name(gate)
            tool = offered_tool(named, tools) if done and named is not None else None
            if tool is not None and tool in ask.read_whole - ask.stop_at:
                done, whole = whole_call(gate, next(t for t in tools if t.name == tool))
            return done

        asked = replace(options, temperature=0) if ask.greedy else options
        begun = ask.opening if self.features.continues_answer else ""
        source = continued(begun, self.inner.stream(continuing(history, begun), [], asked))
        shown = relay(source, visible, free.replies, stop)
        paused = False
        try:
            async for event in shown:
                # A model that thought first chose its prose: no second look.
                thought = thought or isinstance(event, ThinkingChunk)
                looking = looking and not thought
                if looking and isinstance(event, TextChunk):
                    free.held.append(event)
                else:
                    yield event
                if looking and not gate.holding and gate.buffer[: gate.released].strip():
                    paused = True
                    break
        finally:
            if paused:
                free.rest = shown
            else:
                await shown.aclose()
        prose = gate.buffer[: gate.released] if gate.holding else gate.buffer
        free.opened = Opened(gate.holding, named, prose, thought, whole)

    async def _carry_out(
        self,
        decision: Decision,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
        free: FreeAnswer,
        ahead: WordsAhead,
        history: list[Message],
        known: Sequence[str],
        judge: Licence,
    ) -> AsyncGenerator[ProviderEvent, None]:
        record = decision.record
        match decision:
            case Spoken():
                visible = free.visible
                if free.rest is not None:  # the held prose stands: it goes on
                    async for event in self._rest_of(free):
                        yield event
                if visible.leak is not None and not _prose_of(visible).strip():
                    why = f"the answer was {visible.leak.name}"
                    record = replace(record, verdict="plain", reason=why)
                    answer = text_answer(self.inner, messages, [], options, form=self.form,
                                         keep_tools=False, reason=why, record=record)  # fmt: skip
                    async for event in answer:
                        yield event
                    return
                for event in free.held:
                    yield event
                for piece in visible.flush():
                    yield piece
                raw = visible.guard.text
                finish: str | None = "stop"  # where a leak ended it, no reply came
                for reply in free.replies[-1:]:
                    raw, finish = reply.raw or reply.text, reply.finish_reason
                yield Reply(_prose_of(visible), [], [], raw, finish, record.judged, record=record)
            case Plain():
                answer = text_answer(
                    self.inner, messages, tools, options, form=self.form, keep_tools=False,
                    reason=decision.reason, shown=decision.shown, record=record, ahead=ahead,
                )  # fmt: skip
                async for event in answer:
                    yield event
            case Call():
                made = await persons_calls(
                    self.inner, decision, messages, tools, options, history, known, judge
                )
                for event in made.passed_on:
                    yield event
                why = "; ".join(dict.fromkeys(str(r.reason) for r in made.refused))
                if made.none_left:
                    record = replace(record, verdict="plain", reason=why)
                    answer = text_answer(
                        self.inner, messages, tools, options, form=self.form, keep_tools=False,
                        reason=why, shown=decision.prose, record=record,
                    )  # fmt: skip
                    async for event in answer:
                        yield event
                    return
                if made.redirected:
                    again = f"written again for {made.redirected}, which the request is about"
                    record = replace(record, reason=f"{record.reason}; {again}")
                if made.narrowed:
                    again = "written again with only the numbers said in the conversation"
                    record = replace(record, reason=f"{record.reason}; {again}")
                if made.refused:
                    record = replace(record, reason=f"{record.reason}; left out: {why}")
                yield _call_reply(decision, made.written, free, record)
            case _:
                assert_never(decision)

    async def _rest_of(self, free: FreeAnswer) -> AsyncGenerator[ProviderEvent, None]:
        """The paused free answer, its held prose first, to its end; a call it opens after
        the prose ends it there (the second look said no call)."""
        held, free.held = free.held, []
        for event in held:
            yield event
        rest, free.rest = free.rest, None
        if rest is None:
            return
        async with aclosing(rest) as events:
            async for event in events:
                yield event
                if free.visible.gate.holding:
                    return


def _prose_of(visible: VisibleText) -> str:
    """The answer's prose: all of it, or where a call began, what came before."""
    gate = visible.gate
    return gate.buffer[: gate.released] if gate.holding else gate.buffer


def _call_reply(
    decision: Call, written: ConstrainedCalls, free: FreeAnswer, record: GateRecord
) -> Reply:
    """The step's calls, after the prose that came before them."""
    raw = free.visible.gate.buffer or written.raw
    return Reply(decision.prose.rstrip(), written.calls, written.broken, raw=raw,
                 finish_reason=written.finish_reason, gate=record.judged,
                 record=record)  # fmt: skip
