"""The calls a step makes once the gate has said call: written under the grammar (unless
the gate wrote them already to weigh them), then only those that are the person's (the
gate's last rule, `licence`).

A model that wrote a call to a tool the request is not about may still have meant a call:
after a chart, "What were the total sales?" opened with the chart again, while its words
name the calculator. Where every call was left out and the request is about another
offered tool, on a turn's first step, the calls are written once more with that tool
first. Where a call was left out for the tool prompt's numbers (`example_numbers`), and
the request is about its tool, the calls are written once more with only the numbers the
person or a tool said (about no tool, a thank-you would get a call of the numbers in it); so
are those of the tool written instead, where they took the prompt's numbers in turn."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from desktop.core.events import ProviderEvent
from desktop.core.messages import Message
from desktop.core.providers.base import Constrained, Provider, RequestOptions
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.asking import constrained_calls
from desktop.core.tracks.example_numbers import narrowed, numbers_said
from desktop.core.tracks.gate import Call, ConstrainedCalls
from desktop.core.tracks.licence import Licence, Refusal, after_a_result, tools_about


@dataclass(frozen=True)
class PersonsCalls:
    """The calls kept (`written`, its calls the person's alone), why the others were left
    out, what the backend reported on the way, and the tool the calls were written again
    for (None: they were not); `narrowed`: written again with only the numbers said."""

    written: ConstrainedCalls
    refused: list[Refusal]
    passed_on: list[ProviderEvent]
    redirected: str | None = None
    narrowed: bool = False

    @property
    def none_left(self) -> bool:
        """Every call was left out (none broken either): the answer is asked in words."""
        return bool(self.refused) and not self.written.calls and not self.written.broken


async def persons_calls(
    inner: Provider,
    decision: Call,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    options: RequestOptions,
    history: list[Message],
    known: Sequence[str],
    judge: Licence,
) -> PersonsCalls:
    """`history`: the step's prompt, as the track built it (in its form of the tool
    prompt)."""

    async def write(first: str | None, offered: Sequence[ToolSpec] = tools) -> ConstrainedCalls:
        part = Constrained(first)
        return await constrained_calls(inner, history, offered, options, part, known, judge)

    written = decision.written or await write(decision.first)
    passed_on = list(written.passed_on)
    kept, refused = judge.licensed(written.calls)
    refused += written.refused
    if kept or written.broken:
        return PersonsCalls(replace(written, calls=kept), refused, passed_on)
    about_any = tools_about(messages, tools)
    said = numbers_said(messages)

    async def of_numbers_said(name: str, redirected: str | None = None) -> PersonsCalls | None:
        """The calls written again, `name` first, with only the numbers said."""
        again = await write(name, [narrowed(tool, said) for tool in tools])
        passed_on.extend(again.passed_on)
        again_kept, again_refused = judge.licensed(again.calls)
        refused.extend([*again_refused, *again.refused])
        if not again_kept and not again.broken:
            return None
        calls = replace(again, calls=again_kept)
        return PersonsCalls(calls, refused, passed_on, redirected, narrowed=True)

    copied = _copied(refused)
    # Where the request is about another tool, that one is written instead (below).
    if said and copied in about_any and (made := await of_numbers_said(copied)):
        return made
    redirected: str | None = None
    if not after_a_result(messages):
        tried = {refusal.name for refusal in refused}
        about = [name for name in about_any if name not in tried]
        if about:
            again = await write(about[0])
            passed_on += again.passed_on
            again_kept, again_refused = judge.licensed(again.calls)
            also_refused = [*again_refused, *again.refused]
            if again_kept or again.broken:
                written, kept, redirected = again, again_kept, about[0]
                refused += also_refused
            elif said and _copied(also_refused) == about[0]:
                # The tool the request is about, written of the prompt's numbers in turn.
                refused += also_refused
                if made := await of_numbers_said(about[0], about[0]):
                    return made
    return PersonsCalls(replace(written, calls=kept), refused, passed_on, redirected)


def _copied(refused: Sequence[Refusal]) -> str | None:
    """The tool of the first call left out for taking the tool prompt's numbers, if any."""
    return next((r.reason.tool for r in refused if r.reason.kind == "prompt_numbers"), None)
