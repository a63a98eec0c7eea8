"""The call gate as a decision: what to ask the backend about a step, and what the answers
decide. No I/O here: `decide` is a generator (the shape of httpx's `Auth.auth_flow`) that
yields what to ask and receives each answer, and returns a `Decision` with its record.
The chat's track drives it against the backend, streaming prose as it comes; calibration
drives the same one and stops at the decision.

The rules, in order:
0. A request that says nothing a call could take (no number, no content word but its
   greetings, thanks and goodbyes) and is about no tool gets no call: the last rule would
   leave out any call it made.
1. Where the answer is sampled, whether it opens a call is decided as at temperature 0: a
   one-token probe first; if its likeliest token opens a call, the free answer is greedy,
   else it goes on from the token the probe sampled (where its prose is shown at once).
2. The free answer is read until a call names its tool. Prose with no call is the answer,
   except after earlier turns where the model has a bar: prose is then held, and the turn
   asked alone (the second look) decides: under the first request's bar, prose it is
   (the held answer goes on); over it, a call. A model that thought first chose prose,
   and so did a sampled answer none of whose likeliest openings was a call (the probe's):
   the look is for a model that weighed a call and chose words.
3. A call to a tool that is not offered is no call: no tool fits. A call to a tool the
   request is not about is read whole from the free answer (where it was greedy) and judged
   by the last rule (`licence`) as written (or by its name alone, where no call to that
   tool could hold what the person said): left out, no call. It is judged where the call
   made would be that one: at once on a first request or after a result, else once the
   gate says call with none written yet (the second look may make the turn alone's call).
   Not where another tool is one the request is about: the calls are written again for it.
4. A call that opens the answer is weighed: its odds (a probe of the same prompt) against
   the request's bar (a first request's, or the one after earlier turns).
5. Under its bar: on a first request's first step, with a bar for arguments, the calls are
   written under the grammar with their tokens' odds; sure arguments carry the call.
   After earlier turns, the second look; its pass carries the call.
6. Still under: a plain answer. Over: the calls, written under the grammar (or as written
   for their odds), and each judged by the last rule (`licence`), which leaves out a call
   that is not the person's.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from desktop.core.events import BrokenCall, CallGate, GateRecord, ProviderEvent, UsageReport
from desktop.core.messages import Message, ToolCall
from desktop.core.providers.base import Constrained, Probe
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.bars import UNCALIBRATED, Bars
from desktop.core.tracks.licence import (
    Licence,
    Reason,
    Refusal,
    after_a_result,
    content,
    request_of,
    tools_about,
)
from desktop.core.tracks.odds import prose_opening
from desktop.core.tracks.prompt import split_turns
from desktop.core.tracks.step_calls import offered_tool
from desktop.core.words import without_pleasantries


@dataclass(frozen=True)
class Free:
    """The step's own answer, read until a call names its tool; `greedy`: at temperature
    0; `hold_prose`: prose is not shown until the second look has judged (and the answer
    stops at its first word); `read_whole`: a call to one of these tools is read to its
    end, for the last rule to judge it as written, but for those in `stop_at`, which it
    refuses by their name alone; `opening`: its first token, sampled by the opening probe,
    from which the answer goes on (where the backend continues an answer)."""

    greedy: bool = False
    hold_prose: bool = False
    read_whole: frozenset[str] = frozenset()
    stop_at: frozenset[str] = frozenset()
    opening: str = ""
    kind: Literal["free"] = "free"


Ask = Probe | Free | Constrained


@dataclass(frozen=True)
class Odds:
    """A probe's answer: the odds of a call, whether the likeliest token opens one, and the
    token it sampled (at the chat's temperature and seed: the answer's own first token)."""

    odds: float
    opens: bool
    token: str = ""


@dataclass(frozen=True)
class Opened:
    """How the free answer went: whether it opened a call (and the tool it named, as
    written), the prose before it (or all of it), whether the model thought first, and
    the first call itself where it was read whole (`Free.read_whole`)."""

    call: bool
    named: str | None = None
    prose: str = ""
    thought: bool = False
    whole: ToolCall | None = None


@dataclass(frozen=True)
class ConstrainedCalls:
    """The calls of a step, written under the grammar."""

    calls: list[ToolCall]
    broken: list[BrokenCall]
    raw: str
    finish_reason: str | None
    arguments: float | None  # their arguments' odds, where the tokens' odds were asked for
    passed_on: list[ProviderEvent]  # usage and notices, for the caller to pass on
    # The call the writing stopped at, as not the person's (see `licence`).
    refused: list[Refusal] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        """The tokens written, as the backend reported them."""
        return sum(e.completion_tokens for e in self.passed_on if isinstance(e, UsageReport))


Answer = Odds | Opened | ConstrainedCalls


@dataclass(frozen=True)
class Call:
    """Make the calls: those written under the grammar for their odds, or (None) to be
    written now; the first pinned to `first`. `prose` was shown before them."""

    written: ConstrainedCalls | None
    first: str | None
    prose: str
    record: GateRecord
    alone_written: ConstrainedCalls | None = None
    kind: Literal["call"] = "call"


@dataclass(frozen=True)
class Plain:
    """Answer in text instead, asked again without tools. `shown`: prose of the free
    answer already shown, which the answer goes on from. `written`: calls written to weigh
    them, not made."""

    reason: str
    shown: str
    record: GateRecord
    written: ConstrainedCalls | None = None
    alone_written: ConstrainedCalls | None = None
    kind: Literal["plain"] = "plain"


@dataclass(frozen=True)
class Spoken:
    """The free answer was prose, and it is the answer (held for a second look, it goes
    on from where it was held)."""

    record: GateRecord
    kind: Literal["spoken"] = "spoken"


Decision = Call | Plain | Spoken
Gate = Generator[Ask, Answer, Decision]


def first_request_step(messages: Sequence[Message]) -> bool:
    """A first request (no earlier turns), nothing answered in it yet (no call, no result)."""
    earlier, current = split_turns(messages)
    return not earlier and not any(m.role in ("assistant", "tool") for m in current)


def decide(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    bars: Bars,
    *,
    odds_reported: bool,
    sampled: bool,
    measuring: bool = False,
    look_again: bool = False,
    licence: Licence | None = None,
) -> Gate:
    """The gate's rules (see the module) over one step of `messages` offering `tools`.
    `odds_reported`: the backend gives token odds; `sampled`: the answer is asked at a
    temperature above 0. For calibration, which reads what other bars would decide:
    `measuring` (the bars are chosen from these answers): every call that could be
    weighed is written with its arguments' odds, and every second look weighs;
    `look_again`: after earlier turns, the second look is asked whatever the request's
    odds; `licence`: the last rule as the step's calls will be judged by it (by default,
    with every exact repeat refused)."""
    bar, source = bars.for_request(messages)
    alone_bar = bars.for_second_look(messages)
    arguments_bar = bars.arguments if first_request_step(messages) or alone_bar else None
    alone_bar_value, alone_source = alone_bar if alone_bar is not None else (None, None)
    record = GateRecord(bar, source, alone_bar_value, alone_source, arguments_bar)
    may_look_again = odds_reported and bool(messages) and messages[-1].role == "user"
    if says_nothing_to_call(messages, tools):  # rule 0
        why = "the request says nothing a call could take"
        return Plain(why, "", replace(record, verdict="plain", reason=why))
    # Uncalibrated, prose stands: no bar to hold it to (calibration reads what a bar would).
    barred = bars.first > 0 or measuring or look_again
    looking = barred and may_look_again and alone_bar is not None
    probed: Odds | None = None
    if sampled and odds_reported:
        probed = yield from _ask_odds(Probe(opening=True))
        record = replace(record, opening=probed.odds)
    greedy = probed is not None and probed.opens
    # No call among the likeliest openings: no call was weighed (calibration, reading what
    # any bar would decide, looks whatever the odds).
    looking = looking and (probed is None or probed.odds > 0 or measuring or look_again)
    read_whole = frozenset() if measuring or look_again or (sampled and not greedy) else (
        judged_as_written(messages, tools))  # fmt: skip
    licence = Licence.of(tools, messages) if licence is None else licence
    by_name = {name: why for name, why in licence.by_name.items() if name in read_whole}
    # The probe sampled the answer's first token as the answer would: where it is prose
    # shown at once, the answer goes on from it instead of sampling it again.
    opening = probed.token if probed is not None and not greedy and not looking else ""
    opened = yield from _read(
        Free(greedy, looking, read_whole, frozenset(by_name), prose_opening(opening))
    )
    looking = looking and not opened.thought
    judged: CallGate | None = None
    written: ConstrainedCalls | None = None
    alone_written: ConstrainedCalls | None = None
    prose = opened.prose
    if looking and not opened.call and opened.prose.strip():  # rule 2: the second look
        # The model chose words: the turn alone overrules them by its odds alone (a call
        # written to weigh its arguments would hold back the answer's first word).
        assert alone_bar is not None  # looking: after earlier turns
        alone = CallGate((yield from _ask_odds(Probe(alone=True))).odds, *alone_bar)
        record = replace(record, alone=alone)
        if not alone.passed:
            no = "the call gate said no call, for the turn alone"
            return Spoken(replace(record, verdict="prose", reason=no))
        prose, judged = "", alone
    elif not opened.call:
        return Spoken(replace(record, verdict="prose", reason="the model answered in words"))
    first = offered_tool(opened.named, tools) if opened.named else None
    if opened.named and first is None:  # rule 3
        why = f"the call named {opened.named!r}, which is not an offered tool"
        return Plain(why, prose, replace(record, verdict="plain", reason=why))
    as_written = _as_written(opened, tools, licence, by_name)
    if as_written is not None and (alone_bar is None or after_a_result(messages)):
        return Plain(as_written, prose, replace(record, verdict="plain", reason=as_written))
    if judged is None and not prose.strip() and odds_reported:  # rule 4
        odds = probed if probed is not None else (yield from _ask_odds(Probe()))
        judged = CallGate(odds.odds, bar, source)
        record = replace(record, request=judged)
    weighed_here = judged is not None and judged is record.request
    reading = measuring or look_again
    if weighed_here and judged is not None and (not judged.passed or reading):  # rule 5
        weigh = first_request_step(messages) and (measuring or bars.arguments is not None)
        if weigh and (not judged.passed or measuring):
            written = yield from _write(Constrained(first, weigh=True))
        if not judged.passed or reading:
            looked = yield from _second_look(messages, bars, first, always_weigh=measuring)
            if looked is not None:
                alone, alone_written = looked
                record = replace(record, alone=alone)
                if alone.passed and not judged.passed:
                    judged = alone
                    written = alone_written if alone.arguments_sure else None
        if not judged.passed and written is not None:
            judged = replace(judged, arguments=written.arguments, arguments_bar=bars.arguments)
            record = replace(record, request=judged)
        if not judged.passed:  # rule 6
            no = "the call gate said no call" + (", nor were its arguments sure" if written else "")
            if written is not None and written.refused and not written.calls:
                no = "; ".join(dict.fromkeys(str(r.reason) for r in written.refused))
            return Plain(no, "", replace(record, verdict="plain", reason=no),
                         written, alone_written)  # fmt: skip
    if as_written is not None and written is None:  # rule 3: the call made would be this one
        return Plain(as_written, prose, replace(record, verdict="plain", reason=as_written))
    why = _why_a_call(judged)
    return Call(written, first, prose, replace(record, verdict="call", reason=why), alone_written)


def says_nothing_to_call(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> bool:
    """Whether a turn's first step asks for nothing a call could take ("Hi there!",
    "Thanks, bye!"): the last rule leaves out a call whose values are not the person's
    when the request is about no tool, and a greeting, thanks or goodbye is no value a
    tool could take."""
    if not tools or not first_request_step(split_turns(messages)[1]):
        return False
    request = request_of(messages)
    said = content(without_pleasantries(request))
    return bool(request.strip()) and not said and not tools_about(messages, tools)


def judged_as_written(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> frozenset[str]:
    """The tools whose calls the last rule may leave out on their values alone: those the
    request is not about, where no other tool's calls would be written again in their
    place (`persons_calls`: on a turn's first step, for a tool the request is about)."""
    about = tools_about(messages, tools)
    if about and not after_a_result(messages):
        return frozenset()
    return frozenset(tool.name for tool in tools if tool.name not in about)


def _as_written(
    opened: Opened,
    tools: Sequence[ToolSpec],
    licence: Licence,
    by_name: Mapping[str, Reason],
) -> str | None:
    """Why the free answer's call, read whole or refused by the name it wrote, is not the
    person's (None: it is, or it was not read whole)."""
    named = offered_tool(opened.named, tools) if opened.named else None
    if named is not None and named in by_name:  # its arguments were not read
        return f"{by_name[named]} (as the answer named it)"
    refused = licence.refusal(opened.whole) if opened.whole is not None else None
    return None if refused is None else f"{refused} (as the answer wrote it)"


def _why_a_call(judged: CallGate | None) -> str:
    if judged is None:
        return "a call after prose, or no odds to weigh: the model's own choice"
    if judged.arguments_sure:
        return "under the bar, but sure of its arguments"
    if judged.source == UNCALIBRATED:
        return "no bar until calibrated: the model's own choice"
    return "the odds of a call reached the bar"


def _second_look(
    messages: Sequence[Message], bars: Bars, first: str | None, *, always_weigh: bool
) -> Generator[Ask, Answer, tuple[CallGate, ConstrainedCalls | None] | None]:
    """The current turn asked alone, judged as a first request by the first bars: its
    odds, and where it opens a call that needs (or, measuring, may get) weighing, its calls
    written under the grammar with their arguments' odds. None for a first request."""
    bar = bars.for_second_look(messages)
    if bar is None:
        return None
    odds = yield from _ask_odds(Probe(alone=True))
    gate = CallGate(odds.odds, *bar)
    weigh = always_weigh or (not gate.passed and bars.arguments is not None)
    # After a result in this turn the model writes the call that made it again, surely.
    if not (odds.opens and weigh and first_request_step(split_turns(messages)[1])):
        return gate, None
    written = yield from _write(Constrained(first, weigh=True, alone=True))
    return replace(gate, arguments=written.arguments, arguments_bar=bars.arguments), written


def _ask_odds(ask: Probe) -> Generator[Ask, Answer, Odds]:
    answer = yield ask
    assert isinstance(answer, Odds), answer
    return answer


def _read(ask: Free) -> Generator[Ask, Answer, Opened]:
    answer = yield ask
    assert isinstance(answer, Opened), answer
    return answer


def _write(ask: Constrained) -> Generator[Ask, Answer, ConstrainedCalls]:
    answer = yield ask
    assert isinstance(answer, ConstrainedCalls), answer
    return answer
