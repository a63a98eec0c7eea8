from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from desktop.core.calibration.calibrator import Calibrator
from desktop.core.calibration.questions import FULL_ANSWERS, LATER_KINDS
from desktop.core.calibration.store import CalibrationStore
from desktop.core.messages import Message, ToolCall
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.prompt import emulated_history, split_turns
from tests.core.calibration.samples import (
    TOOLS,
    sure_model,
)
from tests.support.fakes import Request, ScriptedProvider, Step


def text_of(messages: Sequence[Message]) -> str:
    return "\n".join(m.text for m in messages)


def prompt_of(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> str:
    """The prompt the emulated track sends for these messages and tools, as text."""
    return text_of(emulated_history(list(messages), list(tools)))


async def test_a_calibration_sets_the_bar_from_the_models_odds() -> None:
    seen: list[tuple[int, int]] = []
    calibrator = Calibrator(
        sure_model(), TOOLS, "file:model.gguf:1", progress=lambda *p: seen.append(p)
    )
    calibration = await calibrator.run()
    assert 0.6 < calibration.bar < 0.95
    assert calibration.track == "constrained" and calibration.odds_reported
    chosen = calibration.chosen
    assert chosen.quiet_right == chosen.quiet > 0
    assert chosen.due_right == chosen.due > 0 and chosen.parallel_right == chosen.parallel
    # Every question read at its opening, with the calls it would make on a first request
    # (arguments are weighed there only): none is asked again in full.
    # The first requests in each form of the tool prompt, the later ones in the best form.
    later = sum(c.kind in LATER_KINDS for c in calibrator.cases)
    asked = (len(calibrator.cases) - later) * len(calibrator.forms) + later
    assert seen[-1] == (asked,) * 2
    assert seen[0] == (0, asked)  # the count is known before the first answer
    first = sum(c.due and c.kind not in LATER_KINDS for c in calibrator.cases)
    assert chosen.answered_in_full == chosen.arguments_right == first < chosen.due
    rows = dict(calibration.card())
    assert rows["Calls a tool where none fits"] == f"in 0 of {chosen.quiet}"
    assert calibration.suggestion() is None
    assert rows["Track"] == "constrained"
    assert rows["Call gate"].startswith(("bar 0.7", "bar 0.8"))


async def test_native_is_chosen_only_where_it_does_better(tmp_path: Path) -> None:
    """With native tool calling on offer, the same questions go to that track too; this
    fake's native answers are plain text, so the gated track is kept."""
    model = sure_model()
    calibrator = Calibrator(model, TOOLS, "m", native=True)
    calibration = await calibrator.run()
    assert [s.track for s in calibration.scores] == ["constrained", "native"]
    native = calibration.scores[1]
    assert native.due_right == 0 and calibration.track == "constrained"
    # It stops asking once right answers to the rest could not make it the better track.
    few = min(FULL_ANSWERS, sum(c.due for c in calibrator.cases))
    few += min(FULL_ANSWERS, sum(not c.due for c in calibrator.cases))
    asked = sum(bool(r.tools) for r in model.requests)  # only the native track sends tools
    assert asked == native.due + native.quiet < few
    assert native.left_unasked == few - asked  # the card says it stopped, not "100% right"
    assert dict(calibration.card())["Native track"] == (
        f"not kept: after {asked} of {few} questions it could no longer do better than constrained"
    )
    CalibrationStore(tmp_path / "calibrations.json").put(calibration)
    assert CalibrationStore(tmp_path / "calibrations.json").get("m") == calibration


async def test_a_native_track_that_does_better_is_chosen() -> None:
    """This model's native answers are right calls where one is due and text elsewhere;
    its gated track opens a call on everything with the same odds (no bar can help), made
    of the request's own words (so the licence keeps it)."""
    fits = {e.prompt: (t.name, e.arguments) for t in TOOLS for e in t.examples}

    def respond(request: Request) -> Step | str:
        asked = next((f for p, f in fits.items() if p in request.messages[-1].text), None)
        if request.tools:  # the native track
            if asked is None:
                return "In words."
            return Step(tool_calls=[ToolCall("n", asked[0], dict(asked[1]))])
        if request.options.phase == "call-odds":
            return Step(odds=[("{", 0.9), ("Sure", 0.1)])
        if request.options.phase == "constrained":
            word = request.messages[-1].text.split()[-1]
            return json.dumps([{"name": TOOLS[0].name, "arguments": {"city": word}}])
        return Step(chunks=['{"name": "', f'{TOOLS[0].name}", "arguments"'])

    model = ScriptedProvider([respond] * 5000, constrains_json=True, reports_token_odds=True)
    calibrator = Calibrator(model, TOOLS, "m", native=True)
    calibration = await calibrator.run()
    gated, native = calibration.scores
    assert native.due + native.quiet == 2 * FULL_ANSWERS  # it was asked them all
    assert native.left_unasked == 0
    assert native.score > gated.score and calibration.track == "native"


async def test_without_constrained_decoding_a_few_questions_are_answered_in_full() -> None:
    """A backend with no grammar and no token odds (KoboldCPP): no opening can be weighed,
    so FULL_ANSWERS due and as many quiet questions are answered in full, their calls read
    by the tolerant parser; there is no bar to place, and the card says why."""
    fits = {e.prompt: (t.name, e.arguments) for t in TOOLS for e in t.examples}

    def respond(request: Request) -> Step | str:
        assert not request.options.json_schema and not request.options.top_logprobs
        question = request.messages[-1].text
        system = request.messages[0].text
        due = [fits[p] for p in fits if p.rstrip(".?") in question and fits[p][0] in system]
        if not due:
            return "Happy to help in words."
        return json.dumps([{"name": name, "arguments": args} for name, args in due])

    model = ScriptedProvider([respond] * 100)
    calibrator = Calibrator(model, TOOLS, "m")
    calibration = await calibrator.run()
    due = sum(c.due for c in calibrator.cases)
    few = min(FULL_ANSWERS, due) + min(FULL_ANSWERS, len(calibrator.cases) - due)
    assert len(model.requests) == few < len(calibrator.cases)
    chosen = calibration.chosen
    assert calibration.track == "emulated" and chosen.due + chosen.quiet == few
    assert chosen.due_right == chosen.due > 0 and chosen.quiet_right == chosen.quiet > 0
    assert chosen.answered_in_full == chosen.arguments_right == chosen.due
    assert calibration.bar == 0.0 and not calibration.odds_reported
    assert dict(calibration.card())["Call gate"] == "none: this backend gives no token odds"


async def test_a_chat_pauses_the_run_and_the_question_is_asked_again() -> None:
    provider = sure_model()
    calibrator = Calibrator(provider, TOOLS, "m")
    run = asyncio.ensure_future(calibrator.run())
    for _ in range(30):
        await asyncio.sleep(0)
    asked = len(provider.requests)
    calibrator.pause()
    for _ in range(30):
        await asyncio.sleep(0)
    assert len(provider.requests) == asked and not run.done()  # holds while paused
    calibrator.resume()
    calibration = await run
    assert calibration.chosen.quiet_right == calibration.chosen.quiet
    assert calibration.chosen.due_right == calibration.chosen.due


async def test_cancelling_the_run_ends_it() -> None:
    calibrator = Calibrator(
        ScriptedProvider([Step(hang=True)] * 100, constrains_json=True), TOOLS, "m"
    )
    run = asyncio.ensure_future(calibrator.run())
    await asyncio.sleep(0.01)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run


def test_the_native_track_must_win_by_more_than_one_answer_and_on_the_calls() -> None:
    from desktop.core.calibration.calibrator import NATIVE_MARGIN, _wins
    from desktop.core.calibration.scoring import Bars
    from tests.core.calibration.samples import answer

    def track(wrong: int, loud: int = 0) -> list[Any]:
        """6 due questions, `wrong` of them wrong; 6 quiet ones, `loud` of them called."""
        due = [answer(True, None, right=i >= wrong) for i in range(6)]
        return due + [answer(False, None, called=i < loud) for i in range(6)]

    bars = Bars(0.0, 0.0)
    first = track(3)  # the emulated track's answers to the same questions
    assert NATIVE_MARGIN == 2
    assert not _wins(track(3), first, bars)  # as good: the default track stays
    assert not _wins(track(2), first, bars)  # one answer better: noise
    assert _wins(track(1), first, bars)  # two better, both calls
    # Quieter, not better at calls: what made both models choose a worse native track.
    assert not _wins(track(3), track(3, loud=3), bars)


async def test_questions_are_read_in_prompt_order_and_kept_in_their_own() -> None:
    """Each question's prompt shares the longest start with the one before (the server's
    cache reuses it); the answers still line up with the questions."""
    model = sure_model()
    calibrator = Calibrator(model, TOOLS, "m", forms=("json",))
    await calibrator.run()
    free = [r for r in model.requests if r.options.phase is None][: len(calibrator.cases)]
    read = [text_of(r.messages) for r in free]

    def prompts(later: bool) -> list[str]:
        return [
            prompt_of(c.messages, c.tools)
            for c in calibrator.cases
            if (c.kind in LATER_KINDS) == later
        ]

    own = prompts(later=False) + prompts(later=True)
    # Reordered for the cache; the first requests first, whose bars judge the later ones.
    assert read == sorted(prompts(later=False)) + sorted(prompts(later=True)) != own
    assert [a.kind for a in calibrator.decided] == [c.kind for c in calibrator.cases]
    assert [a.due for a in calibrator.decided] == [c.due for c in calibrator.cases]


async def test_later_questions_write_the_turn_alones_calls_only_under_the_first_bar() -> None:
    """The first requests are read first and set the first bars; a question after earlier
    turns then has its turn alone's calls written (to weigh their arguments) only where its
    odds fall under that bar, as in a chat. This model is sure of every due turn alone and
    has no arguments' bar: no turn alone's calls are written. The later questions where
    no call is due have the calls the chat would make written, for the licence to judge."""
    model = sure_model()
    calibrator = Calibrator(model, TOOLS, "m", forms=("json",))  # one form: its requests
    calibration = await calibrator.run()
    assert calibration.arguments_bar is None and calibration.bar > 0
    later = [a for a in calibrator.decided if a.later]
    assert any(a.alone_odds == 0.95 for a in later)  # due, and sure of it alone
    written = [r for r in model.requests if r.options.phase == "constrained"]
    assert not any(getattr(r.options.part, "alone", False) for r in written)
    opened_first = sum(a.called and not a.later for a in calibrator.decided)
    judged = sum(
        a.later and not a.due and (a.called or a.alone_odds is not None) for a in calibrator.decided
    )
    assert len(written) == opened_first + judged and opened_first > 0 and judged > 0


async def test_a_turn_alone_shared_by_later_questions_is_looked_at_once() -> None:
    """Questions after earlier turns that end in the same turn beside the same tools
    ("Thanks! Did it work?") share its second look: asked once, its answer reused."""
    model = sure_model()
    calibrator = Calibrator(model, TOOLS, "m")
    await calibrator.run()
    later = [c for c in calibrator.cases if c.kind in LATER_KINDS]
    alone = [prompt_of(split_turns(list(c.messages))[1], c.tools) for c in later]
    assert len(set(alone)) < len(alone)  # some do share their turn alone
    probes = [text_of(r.messages) for r in model.requests if r.options.phase == "call-odds"]
    # (A first request's own probe may read the same prompt: an "unfit" question is an
    # "unfit-later" one's turn alone.)
    first = {prompt_of(c.messages, c.tools) for c in calibrator.cases if c.kind not in LATER_KINDS}
    looked = [p for p in probes if p in alone and p not in first]
    assert looked and len(looked) == len(set(looked))
    shared = [a for a, c in zip(calibrator.decided, calibrator.cases, strict=True) if c in later]
    by_turn: dict[str, set[float | None]] = {}
    for answer, turn in zip(shared, alone, strict=True):
        by_turn.setdefault(turn, set()).add(answer.alone_odds)
    assert all(len(odds) == 1 for odds in by_turn.values())  # the same look for each


async def test_the_tool_prompt_form_the_model_does_best_with_is_kept() -> None:
    """This model is surer of a fitting call than of others only when the tools are listed
    in the `<tools>` tag (elsewhere it is as sure of every call), and where no tool fits it
    calls with the request's own words (a call the licence keeps): that form is chosen,
    and the card shows each form's score."""
    fits = {e.prompt.rstrip(".?"): (t.name, e.arguments) for t in TOOLS for e in t.examples}

    def respond(request: Request) -> Step | str:
        system = request.messages[0].text if request.messages[0].role == "system" else ""
        question = request.messages[-1].text
        fit = next((f for p, f in fits.items() if p in question and f[0] in system), None)
        tagged = "<tools>" in system
        if request.options.phase == "call-odds":
            sure = 0.6 if tagged and fit is None else 0.95
            return Step(odds=[("{", sure), ("Sure", 1 - sure)])
        if request.options.phase == "constrained":
            name, arguments = fit or (TOOLS[0].name, {"city": question.split()[-1]})
            return json.dumps([{"name": name, "arguments": arguments}])
        named = fit[0] if fit else TOOLS[0].name
        return Step(chunks=['{"name": "', f'{named}", "arguments"'])

    model = ScriptedProvider(
        [respond] * 5000, constrains_json=True, reports_token_odds=True, takes_grammar=True
    )
    calibrator = Calibrator(model, TOOLS, "m", forms=("json", "tools tag"))
    calibration = await calibrator.run()
    assert calibration.tool_form == "tools tag"
    scores = dict(calibration.form_scores)
    assert set(scores) == {"json", "tools tag"} and scores["tools tag"] > scores["json"]
    row = dict(calibration.card())["Tool prompt form"]
    assert row.startswith("tools tag (first requests: json ")
    # The answers kept are the chosen form's: its bar separates the fitting calls.
    assert calibration.chosen.quiet_right > 0 and calibration.bar > 0.6


async def test_one_form_asked_reads_each_question_once() -> None:
    model = sure_model()
    calibrator = Calibrator(model, TOOLS, "m", forms=("json",))
    calibration = await calibrator.run()
    free = [r for r in model.requests if r.options.phase is None]
    assert len(free) == len(calibrator.cases)
    assert calibration.tool_form == "json" and "Tool prompt form" not in dict(calibration.card())
