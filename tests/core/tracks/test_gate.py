"""The call gate's rules, one row each: the step, the bars, the answers fed in; the asks
the gate makes, in order, and its decision with its reason. No provider: the gate is a
generator of what to ask (tracks/gate.py), driven here by hand."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from desktop.core.messages import Message, ToolCall
from desktop.core.providers.base import Constrained, Probe
from desktop.core.tracks.bars import Bars
from desktop.core.tracks.gate import (
    Answer,
    Ask,
    Call,
    ConstrainedCalls,
    Decision,
    Free,
    Odds,
    Opened,
    Plain,
    Spoken,
    decide,
)
from desktop.core.tracks.licence import Reason, Refusal
from tests.core.tracks.samples import CLOCK, SEARCH

FIRST = [Message.user("Search for rust")]
LATER = [Message.user("Hi!"), Message.assistant("Hello!"), Message.user("Search for rust")]
_RAN = ToolCall("c1", "search", {"query": "rust"})
AFTER_RESULT = [Message.user("Search for rust"), Message.assistant("", [_RAN]),
                Message.tool("c1", "search", "3 notes")]  # fmt: skip
UNFIT = [Message.user("Tell me a joke")]  # no offered tool is about it
UNFIT_LATER = [Message.user("Hi!"), Message.assistant("Hello!"), *UNFIT]
CALLED = Opened(True, "search")
MADE_UP = Opened(True, "search", whole=ToolCall("", "search", {"query": "python"}))
PROSE = Opened(False, prose="Rust is a language.")
CALIBRATED = "calibrated 2026-12-04"
BOTH = frozenset({"search", "current_time"})
# The sample clock takes no arguments: for a request about no tool, none of its calls could
# be the person's, and the free answer is not read past its name.
CLOCK_BY_NAME = frozenset({"current_time"})
CLOCK_HOLDS_NOTHING = Reason("holds_nothing_said", "current_time")
NO_CLOCK = (
    "the request is not about current_time, and its arguments could hold nothing the person said"
)


# The writing stopped at the first call's name: nothing weighed (see asking.constrained_calls).
REFUSED_AT_NAME = ConstrainedCalls([], [], '[{"name": "current_time"', "stop", None, [],
                                   [Refusal(CLOCK_HOLDS_NOTHING)])  # fmt: skip


def written(arguments: float | None = None) -> ConstrainedCalls:
    return ConstrainedCalls([ToolCall("c2", "search", {"query": "rust"})], [], "[...]", "stop",
                            arguments, [])  # fmt: skip


@dataclass(frozen=True)
class Row:
    rule: str
    messages: Sequence[Message]
    bars: Bars
    answers: list[Answer]
    asks: list[Ask]
    decision: type[Decision]
    reason: str
    sampled: bool = False
    odds_reported: bool = True
    measuring: bool = False
    look_again: bool = False
    check: dict[str, Any] = field(default_factory=dict)  # the decision's fields


def bars(first: float = 0.9, later: float | None = None, arguments: float | None = None) -> Bars:
    return Bars(first, first if later is None else later, arguments, CALIBRATED)


ROWS = [
    Row("prose is the answer", FIRST, bars(), [PROSE], [Free()], Spoken,
        "the model answered in words"),
    Row("sampled: the greedy opening decides, its odds judge the call", FIRST, bars(),
        [Odds(0.95, True), CALLED], [Probe(opening=True), Free(greedy=True)], Call,
        "the odds of a call reached the bar", sampled=True),
    Row("sampled prose shown at once goes on from the token the probe sampled", FIRST, bars(),
        [Odds(0.3, False, "Rust"), PROSE], [Probe(opening=True), Free(opening="Rust")], Spoken,
        "the model answered in words", sampled=True),
    Row("sampled prose held for the second look is asked whole", LATER, bars(),
        [Odds(0.1, False, "Rust"), PROSE, Odds(0.7, True)],
        [Probe(opening=True), Free(hold_prose=True), Probe(alone=True)], Spoken,
        "the call gate said no call, for the turn alone", sampled=True),
    Row("sampled, the likeliest token is prose: sampled as asked", FIRST, bars(),
        [Odds(0.3, False), PROSE], [Probe(opening=True), Free(greedy=False)], Spoken,
        "the model answered in words", sampled=True),
    Row("uncalibrated: the model's own choice stands", FIRST, Bars(),
        [CALLED, Odds(0.2, True)], [Free(), Probe()], Call,
        "no bar until calibrated: the model's own choice"),
    Row("a call to a tool not offered is no call", FIRST, bars(),
        [Opened(True, "joke")], [Free()], Plain,
        "the call named 'joke', which is not an offered tool"),
    Row("a name a separator away is the tool it means", FIRST, bars(),
        [Opened(True, "Current-Time"), Odds(0.95, True)], [Free(), Probe()], Call,
        "the odds of a call reached the bar", check={"first": "current_time"}),
    Row("prose before a call shows intent: no probe", FIRST, bars(),
        [Opened(True, "search", "Let me look. ")], [Free()], Call,
        "a call after prose, or no odds to weigh: the model's own choice",
        check={"prose": "Let me look. ", "written": None}),
    Row("no odds reported: the call stands", FIRST, bars(), [CALLED], [Free()], Call,
        "a call after prose, or no odds to weigh: the model's own choice", odds_reported=False),
    Row("over the bar: a call", FIRST, bars(), [CALLED, Odds(0.95, True)],
        [Free(), Probe()], Call, "the odds of a call reached the bar",
        check={"first": "search", "written": None}),
    Row("under the bar with no arguments' bar: words", FIRST, bars(),
        [CALLED, Odds(0.8, True)], [Free(), Probe()], Plain, "the call gate said no call",
        check={"shown": ""}),
    Row("under the bar, sure arguments carry the call", FIRST, bars(arguments=0.95),
        [CALLED, Odds(0.8, True), written(0.99)],
        [Free(), Probe(), Constrained("search", weigh=True)], Call,
        "under the bar, but sure of its arguments"),
    Row("under the bar, unsure arguments: words", FIRST, bars(arguments=0.95),
        [CALLED, Odds(0.8, True), written(0.5)],
        [Free(), Probe(), Constrained("search", weigh=True)], Plain,
        "the call gate said no call, nor were its arguments sure"),
    Row("after a result, arguments are not weighed", AFTER_RESULT, bars(arguments=0.95),
        [CALLED, Odds(0.8, True)], [Free(read_whole=frozenset({"current_time"})), Probe()],
        Plain, "the call gate said no call"),
    Row("a request that says nothing a call could take: words, nothing asked",
        [Message.user("Hi there!")], bars(), [], [], Plain,
        "the request says nothing a call could take"),
    Row("thanks and a goodbye say nothing a call could take: words, nothing asked",
        [Message.user("Thanks, that's all. Bye!")], bars(), [], [], Plain,
        "the request says nothing a call could take"),
    Row("thanks with a request: the gate asks as for any request",
        [Message.user("Thanks! Tell me a joke.")], bars(), [PROSE],
        [Free(read_whole=BOTH, stop_at=CLOCK_BY_NAME)], Spoken,
        "the model answered in words"),
    Row("a call read whole that is not the person's: words, no odds asked", UNFIT, bars(),
        [MADE_UP],
        [Free(read_whole=BOTH, stop_at=CLOCK_BY_NAME)], Plain,
        "the request is not about search, and the call's values are not the person's"
        " (as the answer wrote it)"),
    Row("a call read whole that is the person's: weighed as any other", UNFIT, bars(),
        [Opened(True, "search", whole=ToolCall("", "search", {"query": "joke"})),
         Odds(0.95, True)],
        [Free(read_whole=BOTH, stop_at=CLOCK_BY_NAME), Probe()], Call,
        "the odds of a call reached the bar"),
    Row("later, a call read whole that is not the person's: judged once the gate says call",
        UNFIT_LATER, bars(later=0.6), [MADE_UP, Odds(0.7, True)],
        [Free(hold_prose=True, read_whole=BOTH, stop_at=CLOCK_BY_NAME), Probe()],
        Plain, "the request is not about search, and the call's values are not the person's"
        " (as the answer wrote it)"),
    Row("later, under its bar: the turn alone's sure call is made, not the one read whole",
        UNFIT_LATER, bars(later=0.6, arguments=0.95),
        [MADE_UP, Odds(0.5, True), Odds(0.7, True), written(0.99)],
        [Free(hold_prose=True, read_whole=BOTH, stop_at=CLOCK_BY_NAME), Probe(),
         Probe(alone=True), Constrained("search", weigh=True, alone=True)], Call,
        "under the bar, but sure of its arguments", check={"written": written(0.99)}),
    Row("a call to a tool refused by its name: not read past the name, words", UNFIT, bars(),
        [Opened(True, "current_time")], [Free(read_whole=BOTH, stop_at=CLOCK_BY_NAME)], Plain,
        f"{NO_CLOCK} (as the answer named it)"),
    Row("under the bar, every call weighed left out: words, and why", UNFIT,
        bars(arguments=0.95), [Odds(0.3, False), Opened(True, "current_time"), REFUSED_AT_NAME],
        [Probe(opening=True), Free(), Constrained("current_time", weigh=True)], Plain, NO_CLOCK,
        sampled=True),
    Row("later prose, the turn alone under the bar: no call written to weigh, prose goes on",
        UNFIT_LATER, bars(arguments=0.95), [PROSE, Odds(0.7, True)],
        [Free(hold_prose=True, read_whole=BOTH, stop_at=CLOCK_BY_NAME), Probe(alone=True)],
        Spoken, "the call gate said no call, for the turn alone"),
    Row("later prose, the turn alone over the bar: a call, its arguments not weighed", LATER,
        bars(arguments=0.95), [PROSE, Odds(0.95, True)],
        [Free(hold_prose=True), Probe(alone=True)], Call,
        "the odds of a call reached the bar", check={"written": None}),
    Row("a sampled free answer is not judged as written", UNFIT, bars(),
        [Odds(0.3, False), CALLED, ], [Probe(opening=True), Free()], Plain,
        "the call gate said no call", sampled=True),
    Row("another tool fits: the calls are written again for it, not judged as written",
        [Message.user("What time is it in Oslo?")], bars(), [CALLED, Odds(0.95, True)],
        [Free(), Probe()], Call, "the odds of a call reached the bar"),
    Row("after earlier turns, the later bar judges", LATER, bars(later=0.6),
        [CALLED, Odds(0.7, True)], [Free(hold_prose=True), Probe()], Call,
        "the odds of a call reached the bar"),
    Row("later, under its bar: the second look passes", LATER, bars(later=0.6),
        [CALLED, Odds(0.5, True), Odds(0.95, True)],
        [Free(hold_prose=True), Probe(), Probe(alone=True)], Call,
        "the odds of a call reached the bar"),
    Row("later, under its bar, and under the first bar alone: words", LATER, bars(later=0.6),
        [CALLED, Odds(0.5, True), Odds(0.7, True)],
        [Free(hold_prose=True), Probe(), Probe(alone=True)], Plain,
        "the call gate said no call"),
    Row("later: the turn alone's arguments weighed", LATER, bars(later=0.6, arguments=0.95),
        [CALLED, Odds(0.5, True), Odds(0.7, True), written(0.998)],
        [Free(hold_prose=True), Probe(), Probe(alone=True),
         Constrained("search", weigh=True, alone=True)], Call,
        "under the bar, but sure of its arguments"),
    Row("later: a turn alone that would answer in words is not weighed", LATER,
        bars(later=0.6, arguments=0.95), [CALLED, Odds(0.5, True), Odds(0.4, False)],
        [Free(hold_prose=True), Probe(), Probe(alone=True)], Plain,
        "the call gate said no call"),
    Row("prose after earlier turns: held, and the second look finds a call", LATER, bars(),
        [PROSE, Odds(0.95, True)], [Free(hold_prose=True), Probe(alone=True)], Call,
        "the odds of a call reached the bar", check={"prose": "", "first": None}),
    Row("prose after earlier turns, the turn alone under the bar: the prose goes on", LATER,
        bars(), [PROSE, Odds(0.7, True)], [Free(hold_prose=True), Probe(alone=True)], Spoken,
        "the call gate said no call, for the turn alone"),
    Row("sampled prose after earlier turns, no call among its openings: no second look",
        LATER, bars(), [Odds(0.0, False), PROSE], [Probe(opening=True), Free(hold_prose=False)],
        Spoken, "the model answered in words", sampled=True),
    Row("sampled prose after earlier turns, a call among its openings: the second look",
        LATER, bars(), [Odds(0.1, False), PROSE, Odds(0.95, True)],
        [Probe(opening=True), Free(hold_prose=True), Probe(alone=True)], Call,
        "the odds of a call reached the bar", sampled=True),
    Row("calibration looks again whatever the openings", LATER, bars(),
        [Odds(0.0, False), PROSE, Odds(0.95, True)],
        [Probe(opening=True), Free(hold_prose=True), Probe(alone=True)], Call,
        "the odds of a call reached the bar", sampled=True, look_again=True),
    Row("a model that thought first chose its prose", LATER, bars(),
        [Opened(False, prose="Rust.", thought=True)], [Free(hold_prose=True)], Spoken,
        "the model answered in words"),
    Row("uncalibrated prose after earlier turns stands", LATER, Bars(), [PROSE],
        [Free(hold_prose=False)], Spoken, "the model answered in words"),
    Row("calibration, choosing the bars: every weighable call written", FIRST, Bars(),
        [CALLED, Odds(0.99, True), written(0.97)],
        [Free(), Probe(), Constrained("search", weigh=True)], Call,
        "no bar until calibrated: the model's own choice", measuring=True),
    Row("calibration after earlier turns: the second look whatever the odds", LATER, bars(),
        [CALLED, Odds(0.95, True), Odds(0.8, True)],
        [Free(hold_prose=True), Probe(), Probe(alone=True)], Call,
        "the odds of a call reached the bar", look_again=True),
]  # fmt: skip


def drive(row: Row) -> tuple[list[Ask], Decision]:
    gate = decide(row.messages, [SEARCH, CLOCK], row.bars, odds_reported=row.odds_reported,
                  sampled=row.sampled, measuring=row.measuring, look_again=row.look_again)  # fmt: skip
    asks: list[Ask] = []
    answers = iter(row.answers)
    try:
        ask = next(gate)
        while True:
            asks.append(ask)
            ask = gate.send(next(answers))
    except StopIteration as done:
        return asks, done.value


@pytest.mark.parametrize("row", ROWS, ids=[row.rule for row in ROWS])
def test_each_rule_of_the_gate(row: Row) -> None:
    asks, decision = drive(row)
    assert asks == row.asks
    assert isinstance(decision, row.decision)
    assert decision.record.reason == row.reason
    assert decision.record.verdict == {Call: "call", Plain: "plain", Spoken: "prose"}[row.decision]
    for name, value in row.check.items():
        assert getattr(decision, name) == value, name


def test_the_record_says_which_bars_judged_and_what_they_saw() -> None:
    later = next(r for r in ROWS if r.rule == "later, under its bar: the second look passes")
    _, decision = drive(later)
    record = decision.record
    assert record.bars() == {"bar": 0.6, "source": f"{CALIBRATED}, after earlier turns",
                             "alone_bar": 0.9, "alone_source": f"{CALIBRATED}, the turn alone"}  # fmt: skip
    assert record.request is not None and not record.request.passed
    assert record.alone is not None and record.alone.passed
    assert record.judged is record.alone  # the second look let the call through
    sure = next(r for r in ROWS if r.rule == "under the bar, sure arguments carry the call")
    _, decision = drive(sure)
    judged = decision.record.judged
    assert judged is not None and judged.arguments_sure and judged.arguments == 0.99
    assert decision.record.arguments_bar == 0.95
