from __future__ import annotations

import json
from typing import Any

import pytest

from desktop.core.calibration.scoring import calls_right, choose_bar, score
from desktop.core.messages import ToolCall
from tests.core.calibration.samples import (
    answer,
)


def test_loose_argument_matching() -> None:
    made = [ToolCall("1", "weather", {"city": " paris "}), ToolCall("2", "add", {"a": "3"})]
    assert calls_right(made, [("weather", {"city": "Paris"}), ("add", {"a": 3})])
    assert not calls_right(made, [("weather", {"city": "Oslo"}), ("add", {"a": 3})])
    assert not calls_right(made[:1], [("weather", {"city": "Paris"}), ("add", {"a": 3})])
    assert not calls_right([ToolCall("1", "weather", {"city": True})], [("weather", {"city": 1})])


def test_the_bar_separates_the_odds_of_due_calls_from_the_rest() -> None:
    answers = [answer(True, p) for p in (0.9, 0.95, 0.97, 0.99)]
    answers += [answer(False, p) for p in (0.6, 0.8, 0.85)]
    bar = choose_bar(answers)
    assert 0.85 < bar < 0.9 and bar == pytest.approx(0.875)
    assert score(answers, bar) == 1.0 and score(answers, 0.0) == 0.5


def test_the_bar_may_cost_a_tenth_of_the_right_calls_and_no_more() -> None:
    """Twenty right calls: the bar may pass over the two least sure of them to turn down
    the unwanted calls below, never a third."""
    right = [answer(True, p) for p in (0.55, 0.6, 0.7, *([0.95] * 17))]
    unwanted = [answer(False, p) for p in (0.5, 0.58, 0.65, 0.9)]
    assert choose_bar(right + unwanted) == pytest.approx(0.675)  # between 0.65 and 0.7
    assert sum(a.right_at(0.675) for a in right) == 18
    # Wrong calls do not count as calls to keep.
    wrong = [answer(True, 0.3, right=False)] * 5
    assert choose_bar(right + unwanted + wrong) == pytest.approx(0.675)


def test_the_midpoint_below_the_lowest_kept_call_and_no_bar_for_a_model_that_never_errs() -> None:
    answers = [answer(True, 0.9), answer(True, 0.95), answer(False, 0.5), answer(False, 0.55)]
    assert choose_bar(answers) == pytest.approx(0.725)
    # A model that never calls where none is due needs no bar.
    quiet = [answer(True, 0.7), answer(True, 0.9), answer(False, None, called=False)]
    assert choose_bar(quiet) == 0.0


def test_a_model_that_calls_where_none_fits_gets_the_bar_even_above_its_unwanted_calls() -> None:
    """Its unwanted calls (requests with their tool withheld) are as sure as its right
    ones: no bar turns them down, but the bar still turns down what is less sure in use."""
    right = [answer(True, p) for p in (0.8, 0.9, 0.93, 0.95, 0.96, 0.97, 0.97, 0.98, 0.98, 0.99)]
    unwanted = [answer(False, p) for p in (0.96, 0.98)] + [answer(False, None, called=False)]
    bar = choose_bar(right + unwanted)
    assert bar == pytest.approx(0.85)  # one right call in ten given up, midway below the next
    assert sum(a.right_at(bar) for a in right) == 9


def test_a_first_request_and_one_after_earlier_turns_each_get_their_own_bar() -> None:
    """Deep in a conversation the model opens its calls less surely: one bar would either
    turn the later right calls into text or let the first unwanted calls through."""
    from dataclasses import replace

    from desktop.core.calibration.scoring import Bars

    first = [answer(True, p) for p in (0.93, 0.95, 0.97)] + [answer(False, p) for p in (0.85,)]
    later = [replace(answer(True, p), kind="later") for p in (0.6, 0.65, 0.7)]
    later += [replace(answer(False, p), kind="unfit-later") for p in (0.4, 0.5)]
    bars = Bars.chosen(first + later)
    assert bars.first == pytest.approx(0.89) and bars.later == pytest.approx(0.55)
    assert all(a.right_with(bars) for a in first + later)
    one = choose_bar(first + later)  # a single bar gets some of them wrong
    assert not all(a.right_at(one) for a in first + later)
    assert score(first + later, bars) == 1.0 > score(first + later, one)


def test_a_later_answer_under_its_bar_is_judged_again_by_its_turn_alone() -> None:
    """As the gate does it: in context 0.5 fails the later bar, alone 0.95 passes the
    first; a due call then counts as made (right), an unwanted one as made (wrong)."""
    from dataclasses import replace

    from desktop.core.calibration.scoring import Bars

    bars = Bars(first=0.9, later=0.6)
    due = replace(answer(True, 0.5), kind="later")
    unwanted = replace(answer(False, 0.5), kind="unfit-later")
    assert not due.right_with(bars) and unwanted.right_with(bars)
    assert replace(due, alone_odds=0.95).right_with(bars)
    assert not replace(unwanted, alone_odds=0.95).right_with(bars)
    assert not replace(due, alone_odds=0.7).right_with(bars)  # alone, still unsure


async def test_a_later_question_opened_in_prose_is_read_again_alone() -> None:
    """As the gate's second look at prose: the turn asked alone opens a call to the due
    tool at 0.95, so the answer counts as that call (right with a first bar under 0.95);
    asked alone in prose too, it stays a plain answer."""
    from desktop.core.calibration.questions import Case
    from desktop.core.calibration.reading import GateReader
    from desktop.core.calibration.scoring import Bars, opening
    from desktop.core.messages import Message
    from desktop.core.tracks.prompt import EARLIER_HEAD
    from tests.core.tracks.samples import SEARCH
    from tests.support.fakes import Request, ScriptedProvider, Step

    def model(alone_calls: bool) -> ScriptedProvider:
        def respond(request: Request) -> Step:
            deep = EARLIER_HEAD in request.messages[0].text
            if request.options.phase == "call-odds":  # as sure as the answer it would give
                sure = 0.95 if alone_calls and not deep else 0.05
                return Step(odds=[("{", sure), ("I", 1 - sure)])
            if request.options.phase == "constrained":  # the call the chat would then make
                return Step(chunks=['[{"name": "search", "arguments": {"query": "rust"}}]'])
            if deep or not alone_calls:
                return Step(chunks=["I would", " say"])
            return Step(chunks=['{"name": "search", "arg'])

        return ScriptedProvider([respond] * 10, constrains_json=True, reports_token_odds=True)

    earlier = (Message.user("Hi!"), Message.assistant("Hello!"))
    case = Case("later", (*earlier, Message.user("Search for rust")), (SEARCH,),
                (("search", {"query": "rust"}),))  # fmt: skip
    seen = await opening(GateReader(model(alone_calls=True)), case, measuring=True)
    assert not seen.called and seen.right and seen.alone_odds == pytest.approx(0.95)
    assert seen.right_with(Bars(first=0.9, later=0.6))
    assert not seen.right_with(Bars(first=0.97, later=0.6))
    quiet = await opening(GateReader(model(alone_calls=False)), case, measuring=True)
    # The turn alone's odds are read as the chat's second look reads them: by a probe.
    assert quiet.alone_odds == pytest.approx(0.05) and not quiet.right_with(Bars(0.9, 0.6))


def test_the_arguments_bar_lets_a_call_under_the_bar_through_if_its_arguments_were_sure() -> None:
    """The arguments' bar is chosen like the others, from the arguments' odds: it may cost
    a tenth of the right calls. Under the call bar, a call with sure arguments counts as
    made; over it, its arguments are not weighed."""
    from dataclasses import replace

    from desktop.core.calibration.scoring import Bars

    def weighed(due: bool, odds: float, arguments: float) -> Any:
        return replace(answer(due, odds), arguments_odds=arguments)

    right = [weighed(True, o, a) for o, a in [(0.95, 0.99), (0.96, 0.98), (0.85, 0.99),
                                              (0.97, 0.97), (0.95, 0.9), (0.96, 0.995),
                                              (0.97, 0.99), (0.98, 0.985), (0.93, 0.99),
                                              (0.99, 0.999)]]  # fmt: skip
    unwanted = [weighed(False, 0.88, 0.8), weighed(False, 0.7, 0.95)]
    bars = Bars.chosen(right + unwanted)
    assert bars.arguments == pytest.approx((0.97 + 0.95) / 2)  # one right call in ten lost
    assert bars.first == pytest.approx((0.88 + 0.93) / 2)
    rescued = right[2]  # odds 0.85, under the first bar; arguments 0.99
    assert not rescued.right_at(bars.first) and rescued.right_with(bars)
    assert all(a.right_with(bars) for a in unwanted)  # turned down: arguments unsure
    assert Bars.chosen([answer(True, 0.9), answer(False, 0.5)]).arguments is None  # unweighed
    quiet_model = [weighed(True, 0.9, 0.99), weighed(False, 0.5, 0.9)]
    assert Bars.chosen(quiet_model).arguments == pytest.approx(0.945)


def test_after_earlier_turns_arguments_neither_set_the_bar_nor_rescue_a_call() -> None:
    """A call copied from an earlier turn is as sure of its arguments as a right one."""
    from dataclasses import replace

    from desktop.core.calibration.scoring import Bars

    def later(due: bool, odds: float, arguments: float) -> Any:
        return replace(answer(due, odds), kind="later" if due else "answered",
                       arguments_odds=arguments)  # fmt: skip

    first = [replace(answer(True, 0.95), arguments_odds=a) for a in (0.9, 0.95, 0.99)]
    unwanted = [replace(answer(False, 0.7), arguments_odds=0.8)]
    copied = later(False, 0.5, 1.0)
    bars = Bars.chosen([*first, *unwanted, copied, later(True, 0.8, 0.2)])
    assert bars.arguments == pytest.approx((0.8 + 0.9) / 2)  # later answers left out
    assert copied.right_with(bars)  # under the later bar, and its arguments not weighed


def test_a_later_answer_is_carried_by_the_turn_alones_sure_arguments_as_the_gate_does() -> None:
    """The gate's second look judges the turn alone as a first request: under the first
    bar, its call counts as made where its arguments (the turn alone's, which no earlier
    turn could have lent it) pass the arguments' bar."""
    from dataclasses import replace

    from desktop.core.calibration.scoring import Bars

    bars = Bars(first=0.9, later=0.6, arguments=0.95)
    due = replace(answer(True, 0.5), kind="later", alone_odds=0.7)
    unwanted = replace(answer(False, 0.5), kind="unfit-later", alone_odds=0.7)
    assert not due.right_with(bars) and unwanted.right_with(bars)
    assert replace(due, alone_arguments_odds=0.99).right_with(bars)
    assert not replace(unwanted, alone_arguments_odds=0.99).right_with(bars)
    assert not replace(due, alone_arguments_odds=0.9).right_with(bars)  # unsure of them
    assert not replace(due, alone_arguments_odds=0.99).right_with(Bars(0.9, 0.6))  # no bar


async def test_a_call_the_licence_would_leave_out_is_no_call_where_none_is_due() -> None:
    """Where no offered tool fits, a model sure of a call counts as calling only if the
    chat would make it: a copy of the tool's own example is left out (right at any bar),
    a call made of the request's own words is not (wrong at a bar it passes)."""
    from desktop.core.calibration.questions import Case
    from desktop.core.calibration.reading import GateReader
    from desktop.core.calibration.scoring import Bars, opening
    from desktop.core.messages import Message
    from tests.core.calibration.samples import STOCKS
    from tests.support.fakes import Request, ScriptedProvider, Step

    def model(symbol: str) -> ScriptedProvider:
        def respond(request: Request) -> Step:
            if request.options.phase == "call-odds":
                return Step(odds=[("{", 0.97), ("I", 0.03)])
            if request.options.phase == "constrained":
                call = {"name": "stock_price", "arguments": {"symbol": symbol}}
                return Step(chunks=[json.dumps([call])])
            return Step(chunks=['{"name": "stock_price", "arg'])

        return ScriptedProvider([respond] * 10, constrains_json=True, reports_token_odds=True)

    case = Case("unfit", (Message.user("What's the weather in Paris?"),), (STOCKS,))
    copied = await opening(GateReader(model("AAPL")), case, measuring=True)
    assert copied.called and copied.licence_refused
    assert copied.right_with(Bars(0.9, 0.9)) and copied.right_with(Bars(0.0, 0.0))
    made_of_the_request = await opening(GateReader(model("Paris")), case, measuring=True)
    assert made_of_the_request.called and not made_of_the_request.licence_refused
    assert not made_of_the_request.right_with(Bars(0.9, 0.9))
