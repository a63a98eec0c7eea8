"""A calibration question read on the gated track: the chat's own call gate
(`tracks.gate.decide`) driven against the backend up to its decision, nothing shown, the
free answer read no further than the gate needs. The turn asked alone is asked once per
prompt: several questions asked after earlier turns end in the same turn beside the same
tools ("Thanks! Did it work?"), and its answer at temperature 0 is the same each time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import assert_never

from desktop.core.messages import Message
from desktop.core.providers.base import Constrained, Probe, Provider, RequestOptions
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.asking import constrained_calls, probe, read_opening
from desktop.core.tracks.bars import Bars
from desktop.core.tracks.emulated import known_names
from desktop.core.tracks.gate import (
    Answer,
    Call,
    ConstrainedCalls,
    Decision,
    Free,
    Opened,
    Plain,
    decide,
    first_request_step,
)
from desktop.core.tracks.licence import Licence, licensed
from desktop.core.tracks.prompt import emulated_history, split_turns
from desktop.core.tracks.step_calls import offered_tool
from desktop.core.tracks.tool_forms import ToolForm


@dataclass(frozen=True)
class Reading:
    """What the gate decided for a question, and what calibration reads off it: whether
    the answer opened a call to an offered tool, that tool (the one the chat would call),
    and the calls written to weigh them."""

    decision: Decision
    called: bool
    tool: str | None
    written: ConstrainedCalls | None


class GateReader:
    """Reads questions on `provider` (the raw backend) under `bars`, the tools listed in
    `form`."""

    def __init__(
        self, provider: Provider, bars: Bars | None = None, form: ToolForm = "json"
    ) -> None:
        self.provider = provider
        self.bars = bars or Bars()
        self.form = form
        self._alone: dict[tuple[str, ...], Answer] = {}

    async def read(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
        *,
        measuring: bool,
    ) -> Reading:
        """`measuring`: the bars are yet to be chosen from these answers (a calibration's
        first requests): every call that could be weighed is written. Otherwise (after
        earlier turns, judged by the first requests' bars) the second look is asked
        whatever the request's odds, for scoring at the bar chosen after."""
        sampled = options.temperature is None or options.temperature > 0
        gate = decide(
            messages, tools, self.bars, odds_reported=self.provider.features.reports_token_odds,
            sampled=sampled, measuring=measuring, look_again=not measuring,
        )  # fmt: skip
        history = emulated_history(messages, tools, form=self.form)
        alone = split_turns(messages)[1]
        known = known_names(messages, tools)
        opened = Opened(False)
        answer: Answer | None = None
        while True:
            try:
                ask = gate.send(answer) if answer is not None else next(gate)
            except StopIteration as done:
                decision: Decision = done.value
                break
            match ask:
                case Probe() | Constrained() if ask.alone:
                    answer = await self._remembered(ask, alone, tools, options)
                case Probe():
                    answer = await probe(self.provider, history, options, ask)
                case Constrained():
                    answer = await constrained_calls(
                        self.provider, history, tools, options, ask, known
                    )
                case Free():
                    opened = answer = await read_opening(self.provider, history, options, ask)
                case _:
                    assert_never(ask)
        tool = offered_tool(opened.named, tools) if opened.named else None
        called = opened.call and not (opened.named and tool is None)
        if not opened.call and isinstance(decision, Call):
            # Prose, then a call after the second look: the call the chat would make.
            calls = decision.written or await constrained_calls(
                self.provider, history, tools, options, Constrained(decision.first), known
            )
            tool = calls.calls[0].name if calls.calls else None
        weighed = isinstance(decision, Call | Plain) and first_request_step(messages)
        written = decision.written if isinstance(decision, Call | Plain) and weighed else None
        return Reading(decision, called, tool, written)

    async def licence_refuses(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
        read: Reading,
    ) -> bool:
        """Whether the chat would leave out every call this question's answer makes
        (`licence`, the gate's last rule, which reads the calls' values): the calls as the
        gate wrote them, or as the chat would write them now."""
        decision = read.decision
        written = read.written or (decision.written if isinstance(decision, Call | Plain) else None)
        if written is None:
            first = decision.first if isinstance(decision, Call) else read.tool
            history = emulated_history(messages, tools, form=self.form)
            judge = Licence.of(tools, messages)
            written = await constrained_calls(
                self.provider, history, tools, options, Constrained(first),
                known_names(messages, tools), judge,
            )  # fmt: skip
        kept, _ = licensed(written.calls, tools, messages)
        return not kept and not written.broken

    async def _remembered(
        self,
        ask: Probe | Constrained,
        alone: list[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
    ) -> Answer:
        history = emulated_history(alone, tools, form=self.form)
        key = (repr(ask), repr(options), *(f"{m.role}: {m.text}" for m in history))
        if key not in self._alone:
            if isinstance(ask, Probe):
                self._alone[key] = await probe(self.provider, history, options, ask)
            else:
                names = known_names(alone, tools)
                found = await constrained_calls(self.provider, history, tools, options, ask, names)
                self._alone[key] = found
        return self._alone[key]
