"""How a model's answers to the calibration questions score, and the bar chosen from them."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Any

from desktop.core.calibration.questions import (
    KEEP_RIGHT_CALLS,
    LATER_KINDS,
    OPTIONS,
    QUIET_TOKENS,
    Case,
    CaseKind,
)
from desktop.core.calibration.reading import GateReader
from desktop.core.events import CallGate, Reply, UsageReport
from desktop.core.messages import ToolCall
from desktop.core.providers.base import Provider


@dataclass(frozen=True)
class Answer:
    """What the model did with one question on one track."""

    kind: CaseKind
    due: bool
    called: bool  # it made (or tried to make) a call
    # Its calls named the expected tools: what the call gate decides on (the arguments are
    # the constrained phase's part, whatever the bar).
    right: bool
    odds: float | None  # its odds of a call, where the gate weighed one
    invalid: bool  # a call that could not be used
    cut_off: bool  # the output limit cut a call short
    calls: int
    completion_tokens: int
    seconds: float
    arguments_right: bool = False  # and their arguments were the example's
    # Asked after earlier turns: the odds for the current turn alone (the gate's second
    # look at a call that fails the later bar, judged by the first bar).
    alone_odds: float | None = None
    # The odds of its call's arguments, written under the grammar (where odds were weighed).
    arguments_odds: float | None = None
    # Asked after earlier turns, where the turn alone opened a call: its arguments' odds.
    alone_arguments_odds: float | None = None
    checked: bool = True  # its calls' arguments were checked (written in full)
    # Where no call is due: the chat would leave out every call the answer makes, as not
    # the person's (the gate's last rule, which no bar changes).
    licence_refused: bool = False

    @property
    def later(self) -> bool:
        """Asked after earlier turns: judged by the bar for such requests."""
        return self.kind in LATER_KINDS

    def right_at(self, bar: float, arguments_bar: float | None = None) -> bool:
        """Was the outcome right with this bar on the call gate (and this bar for the
        arguments of a call under it)?"""
        # The gate's own rule; without odds (prose first, or none reported) nothing is weighed.
        passed = (
            self.odds is None
            or CallGate(self.odds, bar, "calibration", self.arguments_odds, arguments_bar).passed
        )
        called = self.called and passed and not self.licence_refused
        return self.right if called else not self.due

    def right_with(self, bars: Bars) -> bool:
        """Was the outcome right with the gate's bars (its own kind's bar judging, and for
        a later request the first bars on its second look, at a call or at prose)?"""
        if self.alone_odds is not None:
            alone = CallGate(
                self.alone_odds, bars.first, "calibration", self.alone_arguments_odds,
                bars.arguments,
            )  # fmt: skip
            if alone.passed:
                return not self.due if self.licence_refused else self.right
        if self.later:  # arguments are weighed on a first request only
            return self.right_at(bars.later)
        return self.right_at(bars.first, bars.arguments)


@dataclass(frozen=True)
class Bars:
    """The call gate's bars: for a first request, for one after earlier turns, and for the
    arguments of a call under its bar (None: not weighed)."""

    first: float
    later: float
    arguments: float | None = None

    @classmethod
    def chosen(cls, answers: Sequence[Answer]) -> Bars:
        """Each bar chosen from its own questions (see choose_bar); the arguments' bar
        from the first requests' calls whose arguments were weighed."""
        weighed = [a for a in answers if a.arguments_odds is not None and not a.later]
        arguments = choose_bar(weighed, lambda a: a.arguments_odds) if weighed else 0.0
        return cls(
            choose_bar([a for a in answers if not a.later]),
            choose_bar([a for a in answers if a.later]),
            arguments or None,  # 0: nothing to tell right calls from unwanted ones by
        )


def same_value(got: Any, wanted: Any) -> bool:
    """Loose equality for arguments: case and surrounding spaces aside, 3 == 3.0 == "3"."""
    if isinstance(wanted, bool) or isinstance(got, bool):
        return bool(got is wanted)
    if isinstance(wanted, int | float) and isinstance(got, int | float | str):
        try:
            return math.isclose(float(got), float(wanted), rel_tol=1e-6)
        except ValueError:
            return False
    if isinstance(wanted, str) and isinstance(got, str):
        return got.strip().casefold() == wanted.strip().casefold()
    if isinstance(wanted, list) and isinstance(got, list):
        return len(got) == len(wanted) and all(map(same_value, got, wanted))
    if isinstance(wanted, dict) and isinstance(got, dict):
        return set(got) >= set(wanted) and all(same_value(got[k], v) for k, v in wanted.items())
    same: bool = got == wanted
    return same


def calls_right(made: Sequence[ToolCall], expected: Sequence[tuple[str, dict[str, Any]]]) -> bool:
    """The calls name exactly the expected tools, and each expected call's arguments are
    found (loosely equal) in a call to its tool."""
    if sorted(c.name for c in made) != sorted(name for name, _ in expected):
        return False
    return all(
        any(c.name == name and same_value(c.arguments, arguments) for c in made)
        for name, arguments in expected
    )


async def opening(reader: GateReader, case: Case, *, measuring: bool) -> Answer:
    """How the model opens its answer, read by the chat's own call gate up to its
    decision: a call or not, the tool it names (the call is right for the gate if that
    tool is due), and its odds; where it opened a call it was sure of enough to weigh, the
    calls written under the grammar (their arguments, their odds, and what they cost) as
    the gated track would make them. A few seconds. `measuring`: the bars are chosen from
    this answer (see GateReader.read)."""
    started = time.perf_counter()
    messages, tools = list(case.messages), list(case.tools)
    read = await reader.read(messages, tools, OPTIONS, measuring=measuring)
    record = read.decision.record
    alone = record.alone.odds if record.alone is not None else None
    # Prose with a second look names the tool the turn asked alone would call.
    opened = read.called or alone is not None
    right = case.due and opened and read.tool in {name for name, _ in case.expected}
    seconds = time.perf_counter() - started
    written = read.written
    alone_written = getattr(read.decision, "alone_written", None)
    refused = False
    if opened and not case.due:  # would the chat make the calls at all?
        refused = await reader.licence_refuses(messages, tools, OPTIONS, read)
    made = written.calls if written else []
    broken = bool(written and written.broken)
    cut_off = broken and written is not None and written.finish_reason == "length"
    return Answer(
        case.kind,
        case.due,
        read.called,
        right,
        record.request.odds if record.request is not None else None,
        invalid=broken and not cut_off and case.due,
        cut_off=cut_off and case.due,
        calls=len(made) + (len(written.broken) if written else 0),
        completion_tokens=written.tokens if written else 0,
        seconds=seconds,
        arguments_right=right and not broken and calls_right(made, case.expected),
        alone_odds=alone,
        arguments_odds=written.arguments if written else None,
        alone_arguments_odds=alone_written.arguments if alone_written else None,
        checked=written is not None,
        licence_refused=refused,
    )


async def answer(provider: Provider, case: Case) -> Answer:
    """The whole answer, its calls checked. Where no call is due, only whether the answer
    calls matters, and it is cut short."""
    started = time.perf_counter()
    options = OPTIONS if case.due else replace(OPTIONS, max_tokens=QUIET_TOKENS)
    reply: Reply | None = None
    tokens = 0
    messages, tools = list(case.messages), list(case.tools)
    async with aclosing(provider.stream(messages, tools, options)) as events:
        async for event in events:
            if isinstance(event, Reply):
                reply = event
            elif isinstance(event, UsageReport):
                tokens += event.completion_tokens
    seconds = time.perf_counter() - started
    if reply is None:
        return Answer(case.kind, case.due, False, False, None, True, False, 0, tokens, seconds)
    made = reply.tool_calls
    broken = bool(reply.broken_calls)
    cut_off = broken and reply.finish_reason == "length" and case.due
    expected = [name for name, _ in case.expected]
    return Answer(
        case.kind,
        case.due,
        called=bool(made) or broken,
        right=not broken and bool(made) and sorted(c.name for c in made) == sorted(expected),
        odds=reply.gate.odds if reply.gate is not None else None,
        invalid=broken and not cut_off and case.due,
        cut_off=cut_off,
        calls=len(made) + len(reply.broken_calls),
        completion_tokens=tokens,
        seconds=seconds,
        arguments_right=not broken and calls_right(made, case.expected),
    )


def score(answers: Sequence[Answer], bars: Bars | float) -> float:
    """Balanced accuracy at the bars (one bar: the same for every question): the share
    right where a call is due and the share right where none is, weighed equally, so the
    mix of questions does not choose the bar."""
    if not isinstance(bars, Bars):
        bars = Bars(bars, bars)
    shares = []
    for group in ([a for a in answers if a.due], [a for a in answers if not a.due]):
        if group:
            shares.append(sum(a.right_with(bars) for a in group) / len(group))
    return sum(shares) / len(shares) if shares else 0.0


def choose_bar(
    answers: Sequence[Answer], odds_of: Callable[[Answer], float | None] = lambda a: a.odds
) -> float:
    """The highest bar that still keeps KEEP_RIGHT_CALLS of the right calls: it turns down
    as many unwanted calls as it can at that price. Placed midway between the lowest right
    call kept and the next lower odds seen; 0 for a model that made no unwanted call.

    A model that calls where no tool fits gets the bar even if none of the calibration's
    own unwanted calls falls under it. Those are mostly requests whose tool is withheld,
    which a small model opens as surely as a due call; the requests no tool fits in use
    are less alike, and the bar turns them down. Requiring one of its own under the bar
    left a small model with no bar at all.

    Measured and dropped: the bar with the best balanced accuracy, which settled under the
    chit-chat and moved with the questions drawn (docs/experiments/per-model-calibration.md).

    `odds_of` reads the odds the bar is for: of a call (the default), or of its
    arguments."""
    seen = [(a, odds) for a in answers if (odds := odds_of(a)) is not None]
    right = sorted(odds for a, odds in seen if a.due and a.right)
    if not right or not any(a.called for a in answers if not a.due):
        return 0.0  # no unwanted call: the model's own choice stands
    lost = math.floor(len(right) * (1 - KEEP_RIGHT_CALLS) + 1e-9)  # right calls it may cost
    lowest_kept = right[lost]
    below = [odds for _, odds in seen if odds < lowest_kept]
    bar = (max(below) + lowest_kept) / 2 if below else 0.0
    return round(bar, 3)
